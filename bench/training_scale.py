"""Benchmark: wall time of one DDP training prediction (predict_training: the step at N nodes, 1 GPU and 1 node).

    python bench/training_scale.py [--repeats 50]

Per scenario variant (seed 000 over RoCE and TCP; the NVMe what-if, 1/20 of the repeats: a storage-bound
step simulates every read), the median and best wall time of predict_training over repeats, and the step
time it predicts (so a speed change that changes the answer shows).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from simcluster.predict_training import predict_training
from simcluster.scenario import load_variants

ROOT = Path(__file__).resolve().parent.parent
CASES = ("scenarios/seed000-resnet18-2servers.yaml", "scenarios/whatif/nvme-drives.yaml")


def main() -> None:
    from simcluster.script_args import ArgumentParser  # a bad argument: one line

    parser = ArgumentParser()
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    print(f"{'scenario':>28} {'variant':>10} {'step ms':>10} {'median ms':>10} {'best ms':>9}")
    for case in CASES:
        for label, scenario in load_variants(ROOT / case):
            job = scenario.jobs[0]
            walls = []
            for _ in range(args.repeats if "seed000" in case else max(1, args.repeats // 20)):
                t0 = time.perf_counter()
                pred = predict_training(scenario.machine, job)
                walls.append(time.perf_counter() - t0)
            print(f"{Path(case).stem:>28} {label:>10} {pred.step.step_s * 1e3:10.4f} "
                  f"{statistics.median(walls) * 1e3:10.2f} {min(walls) * 1e3:9.2f}")


if __name__ == "__main__":
    main()
