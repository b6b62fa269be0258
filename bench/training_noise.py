"""Run-to-run noise of DDP steps, and held-out predictions of each repeat.

    python bench/training_noise.py [NOISE_BUNDLE]

NOISE_BUNDLE holds rep1..rep3, each a `simcluster collect --tools ddp-step --gpus 2` on a fresh
4 x H200 machine. For every model: the 1- and 2-GPU step times of each repeat and their spread; then
each repeat's 2-GPU step predicted from that repeat's own 1-GPU trace with the DDP card fitted on an
earlier bundle (models/training/ddp-h200x4.yaml) and the NVLink collective card: nothing of these
runs was fitted.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from simcluster.cards import load_collective, load_ddp
from simcluster.collectives.model import predict
from simcluster.training import workload as W
from simcluster.training.step import simulate_step

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", nargs="?", default=str(ROOT / "calibration/h200x4-noise-2026-11-22"))
    args = parser.parse_args()
    ddp, _ = load_ddp(ROOT / "models/training/ddp-h200x4.yaml")
    nv, _ = load_collective(ROOT / "models/collective/h200x4-collect-nvlink.yaml")
    by_model: dict[str, list] = {}
    for rep in sorted(Path(args.bundle).glob("rep*")):
        for run in sorted((rep / "ddp-step").iterdir()):
            records = W.read_runs(run / "stdout.txt")
            one = next(r for r in records if r["world_size"] == 1)
            two = next(r for r in records if r["world_size"] == 2)
            w = W.from_record(one, W.profile_gpu_s(run, one["model"], one["image"], one["batch_per_gpu"]))
            pred = simulate_step(w, 2, lambda s: predict(nv, "all_reduce", s, 2).time_s, ddp).step_s
            by_model.setdefault(w.model, []).append((rep.name, w.step_s, two["median_step_s"], pred))
    print(f"{'model':>10} {'rep':>5} {'1-GPU ms':>9} {'2-GPU ms':>9} {'predicted':>9} {'error':>7}")
    for model, rows in by_model.items():
        for rep, t1, t2, p in rows:
            print(f"{model:>10} {rep:>5} {t1 * 1e3:9.2f} {t2 * 1e3:9.2f} {p * 1e3:9.2f} {(p / t2 - 1) * 100:+6.1f}%")
        ones, twos = [r[1] for r in rows], [r[2] for r in rows]
        errs = [abs(r[3] / r[2] - 1) * 100 for r in rows]
        print(f"{model:>10}   run-to-run spread: 1 GPU {(max(ones) - min(ones)) / statistics.mean(ones) * 100:.1f}%, "
              f"2 GPUs {(max(twos) - min(twos)) / statistics.mean(twos) * 100:.1f}%; prediction mean |error| "
              f"{statistics.mean(errs):.1f}%")


if __name__ == "__main__":
    main()
