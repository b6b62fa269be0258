"""Speed of the job DES (llm/goodput_des.py): wall time and SimPy events per second of whole training jobs with
failures, checkpoints and restarts, up to 54 days on 16,384 GPUs at the Llama 3 snapshot's per-GPU rate.

    python bench/goodput_scale.py
"""

from __future__ import annotations

import time

from simcluster.llm.goodput import young_daly_s
from simcluster.llm.goodput_des import simulate_job

RATE = 419 / (16384 * 54 * 86400)   # per GPU-second (calibration/published/reliability-llama3-405b.yaml)
DAY = 86400.0


def main() -> None:
    print(f"{'GPUs':>6} {'days':>5} {'mode':>5} {'interval s':>10} {'failures':>8} {'checkpoints':>11} {'events':>9} "
          f"{'wall s':>7} {'events/s':>9}")
    for gpus, days, copy, write in ((1024, 54, 6.0, 0.0), (16384, 54, 6.0, 0.0), (16384, 54, 0.4, 6.0), (16384, 54, 0.014, 0.4)):
        rate = gpus * RATE
        tau = max(young_daly_s(copy, 1 / rate), write)
        best = None
        for _ in range(3):
            t0 = time.perf_counter()
            run = simulate_job(days * DAY * 0.94, tau, copy, write, 600.0, rate, seed=0)
            wall = time.perf_counter() - t0
            best = wall if best is None else min(best, wall)
        mode = "async" if write else "sync"
        print(f"{gpus:>6} {days:>5} {mode:>5} {tau:>10.1f} {run.interruptions:>8} {run.checkpoints:>11} {run.events:>9,} "
              f"{best:>7.3f} {run.events / best:>9.3g}")


if __name__ == "__main__":
    from simcluster.script_args import check

    check()   # no arguments: an unknown one is one line, before the run
    main()
