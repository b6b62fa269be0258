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
