"""What the measured DDP step times say against the nccl-tests card (input to the training model).

    python studies/ddp_breakdown.py [BUNDLE] [--card CARD]

For each multi-GPU DDP run in BUNDLE/ddp-step/nvlink.jsonl: the 1-GPU step time, the N-GPU step
time, their difference, DDP's gradient buckets (reverse registration order, 1 MiB first bucket,
then bucket_cap_mb), and the all_reduce time of those buckets predicted by the collective card.
A difference much larger than the predicted communication means bandwidth is not what dominates.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from simcluster.cards import load_collective
from simcluster.collectives.model import predict
from simcluster.script_args import ArgumentParser
from simcluster.training.workload import from_record

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = ArgumentParser()
    parser.add_argument("bundle", nargs="?", default=str(ROOT / "calibration/h200x4-nvlink-2026-11-22"))
    parser.add_argument("--card", default=str(ROOT / "models/collective/h200x4-nvlink.yaml"))
    args = parser.parse_args()
    params, _ = load_collective(args.card)
    records = [json.loads(line) for line in (Path(args.bundle) / "ddp-step" / "nvlink.jsonl").read_text().splitlines()]
    single = {(r["model"], r["batch_per_gpu"]): r for r in records if r["world_size"] == 1 and not r.get("ddp_wrapped")}
    print(f"{'model':>9} {'batch':>5} {'gpus':>4} {'1-GPU ms':>8} {'N-GPU ms':>8} {'extra ms':>8} {'buckets':>7} "
          f"{'comm ms':>7} {'comm-only error':>15}")
    for r in records:
        base = single.get((r["model"], r["batch_per_gpu"]))
        if r["world_size"] == 1 or base is None:
            continue
        bs = dataclasses.replace(from_record(base), bucket_cap_bytes=r["bucket_cap_mb"] * 2**20).buckets()
        comm = sum(predict(params, "all_reduce", b, r["world_size"]).time_s for b in bs)
        last = predict(params, "all_reduce", bs[-1], r["world_size"]).time_s  # exposed after backward at best
        t1, tn = base["median_step_s"], r["median_step_s"]
        print(f"{r['model']:>9} {r['batch_per_gpu']:5d} {r['world_size']:4d} {t1 * 1e3:8.2f} {tn * 1e3:8.2f} "
              f"{(tn - t1) * 1e3:8.2f} {len(bs):7d} {comm * 1e3:7.3f} {((t1 + last) / tn - 1) * 100:+14.1f}%")


if __name__ == "__main__":
    main()
