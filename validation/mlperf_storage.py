"""Print the MLPerf Storage closed submissions predicted by simcluster.heldout.storage (the rows the error-band table
takes its storage family from; `simcluster validate --error-bands` runs them itself).

    python validation/mlperf_storage.py [FILE ...] [--rows 0,3] [--search] [--json OUT]

A run the file lists under `simcluster.runs_not_compared` is printed with its reason, not predicted.
Per row: the steady-state throughput simulated at the published accelerator count against the published MiB/s; with
--search, also the accelerator count `storage max-accelerators` answers and its throughput.
"""

from __future__ import annotations

import json
from pathlib import Path

from simcluster.heldout import storage
from simcluster.script_args import ArgumentParser


def main() -> None:
    parser = ArgumentParser()
    parser.add_argument("files", nargs="*", default=[str(p) for p in storage.published_files()])
    parser.add_argument("--rows", help="row indices (comma-separated) of each file to predict (default: all)")
    parser.add_argument("--search", action="store_true", help="also the max-accelerators answer (slower)")
    parser.add_argument("--json", help="write the rows as JSON here")
    args = parser.parse_args()
    keep = {int(i) for i in args.rows.split(",")} if args.rows else None
    out = []
    print(f"{'row':>24} {'acc meas':>8} {'MiB/s meas':>10} {'@meas acc':>9} {'err':>6} {'AU':>6} {'limit':>14} "
          f"{'acc pred':>8} {'MiB/s pred':>10} {'count':>11} {'s':>5}")
    for f in args.files:
        pub = storage.read(Path(f))
        for i, why in sorted((pub.usage.get("runs_not_compared") or {}).items()):
            print(f"{pub.name} runs[{i}] {pub.runs[i]['system']}: not predicted: {why}")
        for i, row in storage.compared_runs(Path(f)):
            if keep is not None and i not in keep:
                continue
            r = storage.predict(row, search=args.search)
            out.append(r)
            search = (f"{r['accelerators_predicted']:8d} {r['MiB_per_s_predicted']:10.0f} {r['count_check']:>11}" if args.search
                      else f"{'':>8} {'':>10} {'':>11}")
            print(f"{r['row']:>24} {r['accelerators_measured']:8d} {r['MiB_per_s_measured']:10.0f} "
                  f"{r['MiB_per_s_at_measured_count']:9.0f} {r['error_at_measured_count'] * 100:+5.1f}% "
                  f"{r['au_at_measured_count']:6.1f} {r['limit']:>14} {search} {r['wall_s']:5.0f}", flush=True)
    within = sum(abs(r["error_at_measured_count"]) <= 0.10 for r in out)
    line = f"{len(out)} rows predicted: {within} within 10% in MiB/s at the measured count"
    if args.search:
        both = sum(r["count_check"] == "met" and abs(r["MiB_per_s_error"]) <= 0.10 for r in out)
        bound = [r for r in out if r["count_check"] == "lower bound"]
        line += (f"; {both} within 10% on both the max-accelerators count and its MiB/s; {len(bound)} above a published count"
                 f" that is only a lower bound (AU x N / (N + 1) >= threshold), of them"
                 f" {sum(abs(r['error_at_measured_count']) <= 0.10 for r in bound)} within 10% in MiB/s at that count")
    print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
