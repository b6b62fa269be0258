"""matplotlib figures (headless: the Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from simcluster.fit.validate import ValidationRow  # noqa: E402


def validation_plot(rows: list[ValidationRow], title: str, path: str | Path) -> None:
    sizes = [r.size_bytes for r in rows]
    fig, (ax, err) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    ax.plot(sizes, [r.measured_busbw_Bps / 1e9 for r in rows], "o-", label="measured")
    ax.plot(sizes, [r.predicted_busbw_Bps / 1e9 for r in rows], "s--", label="predicted")
    ax.set_xscale("log", base=2)
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(title)
    ax.legend()
    ax.grid(True, alpha=0.3)
    err.plot(sizes, [r.error * 100 for r in rows], "k.-")
    err.axhline(0, color="grey", lw=0.8)
    err.set_ylabel("time error (%)")
    err.set_xlabel("message size (bytes)")
    err.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bundle_validation_plot(panels: list[tuple[str, list[ValidationRow]]], title: str, path: str | Path) -> None:
    """One panel per collective: measured and predicted busbw against size."""
    cols = min(3, len(panels))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.4 * nrows), squeeze=False)
    for ax, (label, rows) in zip(axes.flat, panels, strict=False):   # the grid may have spare axes
        sizes = [r.size_bytes for r in rows]
        ax.plot(sizes, [r.measured_busbw_Bps / 1e9 for r in rows], "o-", ms=3, label="measured")
        ax.plot(sizes, [r.predicted_busbw_Bps / 1e9 for r in rows], "s--", ms=3, label="predicted")
        ax.set_xscale("log", base=2)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
