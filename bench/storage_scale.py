"""Speed of the storage DES: wall time, I/Os simulated and SimPy events per second against the
number of emulated accelerators (Unet3D H100 workload on Micron 9400 cards, one drive per 2 accelerators).

    python bench/storage_scale.py
"""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

from simcluster.storage import dlio_workload, loader
from simcluster.storage.nvme import load_nvme

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    w = dlio_workload.load(ROOT / "scenarios/workloads/unet3d_h100.yaml")
    nvme, _ = load_nvme(ROOT / "models/nvme/micron-9400-pro-7.68tb.yaml")
    print(f"{'accelerators':>12} {'drives':>6} {'steps':>5} {'I/Os':>9} {'events':>10} {'wall s':>7} {'events/s':>9} "
          f"{'peak MiB':>8} {'AU %':>6}")
    for n in (1, 4, 16, 64, 256):
        drives = max(1, n // 2)
        tracemalloc.start()
        t0 = time.perf_counter()
        r = loader.simulate(w, nvme, n, drives, loader.LoaderConfig(io_size=4 << 20, steps=8))
        wall = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        ios = sum(len(log.qd) for log in r.logs)
        events = r.events
        print(f"{n:12d} {drives:6d} {r.steps:5d} {ios:9d} {events:10d} {wall:7.2f} {events / wall:9.0f} {peak:8.1f} {r.au_percent:6.1f}")


if __name__ == "__main__":
    from simcluster.script_args import check

    check()   # no arguments: an unknown one is one line, before the run
    main()
