"""Predict MLPerf Storage closed-division submissions (calibration/published/mlperf-storage-*.yaml) from what each
submission states: the drive's specification (a card per drive, models/nvme/), the workload file with the run's
reader overrides and dataset size, the host's memory as page cache. Nothing is fitted on these rows.

    python validation/mlperf_storage.py [FILE ...] [--rows 0,3] [--json OUT]

Per row: the accelerator count `storage max-accelerators` answers (steady state) and its throughput, against the
published count and MiB/s; and the steady-state throughput simulated at the published count.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import yaml

from simcluster.storage import dlio_workload, loader
from simcluster.storage.nvme import load_nvme

ROOT = Path(__file__).resolve().parent.parent
CARDS = {"micron-9400": "micron-9400-pro-7.68tb", "micron-6500": "micron-6500-ion-30.72tb", "micron-9550": "micron-9550-pro-7.68tb"}
PAGE_CACHE_BYTES = 256 * 2**30     # the systems' mem=256G boot option
IO_SIZE = 4 * 2**20                # simcluster's default read size (storage --io-size)


def workload_of(row: dict) -> dlio_workload.DlioWorkload:
    w = dlio_workload.load(ROOT / "scenarios" / "workloads" / f"{row['workload']}.yaml")
    reader = row["reader"]
    return dataclasses.replace(w, path=f"{row['system']}/{row['workload']}", num_files=row["num_files_train"],
                               samples_per_file=row["samples_per_file"], read_threads=reader["read_threads"],
                               prefetch=reader["prefetch_size"])


def predict(row: dict, seed: int = 0) -> dict:
    w = workload_of(row)
    nvme, _ = load_nvme(ROOT / "models" / "nvme" / f"{CARDS[row['drive']]}.yaml")
    config = loader.LoaderConfig(io_size=IO_SIZE, cache_bytes=PAGE_CACHE_BYTES)
    t0 = time.perf_counter()
    best, _ = loader.max_accelerators(w, nvme, 1, config, seed=seed)
    at = loader.simulate(w, nvme, row["measured"]["accelerators"], 1, config, seed=seed)
    m = row["measured"]
    n = best.accelerators if best else 0
    mib = best.throughput_MiB_per_s if best else 0.0
    return {"row": f"{row['system'].split('_')[1]} {row['workload']}", "accelerators_measured": m["accelerators"],
            "accelerators_predicted": n, "accelerators_error": n / m["accelerators"] - 1,
            "MiB_per_s_measured": m["throughput_MiB_per_s"], "MiB_per_s_predicted": mib,
            "MiB_per_s_error": mib / m["throughput_MiB_per_s"] - 1,
            "MiB_per_s_at_measured_count": at.throughput_MiB_per_s, "au_at_measured_count": at.au_percent,
            "error_at_measured_count": at.throughput_MiB_per_s / m["throughput_MiB_per_s"] - 1,
            "limit": at.limit, "wall_s": time.perf_counter() - t0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", default=sorted(str(p) for p in (ROOT / "calibration/published").glob("mlperf-storage-*.yaml")))
    parser.add_argument("--rows", help="row indices (comma-separated) of each file to predict (default: all)")
    parser.add_argument("--json", help="write the rows as JSON here")
    args = parser.parse_args()
    keep = {int(i) for i in args.rows.split(",")} if args.rows else None
    out = []
    print(f"{'row':>24} {'acc meas':>8} {'pred':>5} {'err':>6} {'MiB/s meas':>10} {'pred':>8} {'err':>6} "
          f"{'@meas acc':>9} {'err':>6} {'AU':>6} {'limit':>14} {'s':>5}")
    for f in args.files:
        for i, row in enumerate(yaml.safe_load(Path(f).read_text())["runs"]):
            if keep is not None and i not in keep:
                continue
            r = predict(row)
            out.append(r)
            print(f"{r['row']:>24} {r['accelerators_measured']:8d} {r['accelerators_predicted']:5d} {r['accelerators_error'] * 100:+5.0f}% "
                  f"{r['MiB_per_s_measured']:10.0f} {r['MiB_per_s_predicted']:8.0f} {r['MiB_per_s_error'] * 100:+5.1f}% "
                  f"{r['MiB_per_s_at_measured_count']:9.0f} {r['error_at_measured_count'] * 100:+5.1f}% {r['au_at_measured_count']:6.1f} "
                  f"{r['limit']:>14} {r['wall_s']:5.0f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
