"""Seed 001's figures from a simulated run: device throughput over time, queue depth over time,
and the queue-depth histogram (share of I/Os submitted at each depth)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simcluster.storage.loader import RunResult


def qd_stats(result: RunResult) -> dict:
    qd = np.concatenate([np.asarray(log.qd) for log in result.logs]) if result.logs else np.array([])
    if not len(qd):
        return {}
    return {"ios": int(len(qd)), "qd_max": int(qd.max()), "qd0_share": float(np.mean(qd == 0)),
            "qd1_share": float(np.mean(qd == 1)), "qd_80_110_share": float(np.mean((qd >= 80) & (qd <= 110))),
            "qd_below_10_share": float(np.mean(qd < 10)), "qd_p50": float(np.percentile(qd, 50))}


def throughput_stats(result: RunResult, bin_s: float = 0.1) -> dict:
    _, bw = result.logs[0].throughput(bin_s, result.wall_s)
    """The device's read rate over `bin_s` bins, bytes/s: mean, median, 90th percentile and maximum."""
    return {"bin_s": bin_s, "mean_Bps": float(bw.mean()), "p50_Bps": float(np.percentile(bw, 50)),
            "p90_Bps": float(np.percentile(bw, 90)), "max_Bps": float(bw.max())}


def figures(result: RunResult, folder: str | Path, label: str, bin_s: float = 0.1) -> list[str]:
    """Throughput, queue depth and its histogram as PNGs in `folder`, named after `label` made a safe file stem
    (files.file_stem: a workload's model name '../x' stays inside), written atomically through files.write_documents."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from simcluster.files import file_stem, write_documents

    stem = file_stem(label, default="storage")
    label = str(label)[:80].replace("$", r"\$")     # a title, not mathtext
    log = result.logs[0]
    t, bw = log.throughput(bin_s, result.wall_s)
    docs: dict[str, bytes] = {}

    def keep(fig, name: str) -> None:
        fig.tight_layout()
        data = io.BytesIO()
        fig.savefig(data, format="png", dpi=110)
        docs[f"{stem}-{name}.png"] = data.getvalue()

    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(t, bw / 1e6, lw=0.8)
    ax.set(xlabel="time (s)", ylabel="device read MB/s", title=f"{label}: throughput ({bin_s * 1e3:.0f} ms bins)")
    keep(fig, "throughput")
    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(log.submit_s, log.qd, ".", ms=1)
    ax.set(xlabel="time (s)", ylabel="queue depth at submission", title=f"{label}: queue depth")
    keep(fig, "qd")
    fig, ax = plt.subplots(figsize=(6, 3.2))
    qd = np.asarray(log.qd)
    counts = np.bincount(qd)
    ax.bar(np.arange(len(counts)), counts / counts.sum() * 100, width=1.0)
    ax.set(xlabel="queue depth", ylabel="% of I/Os", title=f"{label}: queue-depth histogram")
    keep(fig, "qd-histogram")
    plt.close("all")
    return [str(p) for p in write_documents(folder, docs)]
