"""matplotlib figures (headless: the Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from simcluster.fit.validate import ValidationRow  # noqa: E402


def _busbw_panel(ax, rows: list[ValidationRow], title: str, marker_size: float | None = None) -> None:
    """Measured and predicted busbw against message size (log2 axis)."""
    sizes = [r.size_bytes for r in rows]
    ax.plot(sizes, [r.measured_busbw_Bps / 1e9 for r in rows], "o-", ms=marker_size, label="measured")
    ax.plot(sizes, [r.predicted_busbw_Bps / 1e9 for r in rows], "s--", ms=marker_size, label="predicted")
    ax.set_xscale("log", base=2)
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(title, fontsize=9 if marker_size else None)
    ax.grid(True, alpha=0.3)


def validation_plot(rows: list[ValidationRow], title: str, path: str | Path) -> None:
    sizes = [r.size_bytes for r in rows]
    fig, (ax, err) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    _busbw_panel(ax, rows, title)
    ax.legend()
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
        _busbw_panel(ax, rows, label, marker_size=3)
        ax.set_xlabel("message size (bytes)")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
