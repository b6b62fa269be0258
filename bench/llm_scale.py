"""Wall time and events/s of one LLM training iteration at scale (not a test).

Llama-3.1-405B (scenarios/llm/llama405b-16k.yaml: TP 8, PP 16, interleaved x4, ZeRO-2, SP) on 1,024 /
4,096 / 16,384 H100s: DP 8 / 32 / 128 with 16 micro-batches per replica (global batch 16 x DP). Wall
time covers everything build.llm_prediction does (`simcluster run` of one job): the cards read, the fabric built and solved for every group kind, the
per-stage work from the GPU card, the DES and the memory model. Target: <= 2 s at 16,384 GPUs.
    python bench/llm_scale.py
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.build import llm_prediction  # noqa: E402
from simcluster.scenario import load  # noqa: E402

SCENARIO = ROOT / "scenarios" / "llm" / "llama405b-16k.yaml"


def timed_step(machine, job, gpus: int):
    """(dp, LlmResult, wall s) of one iteration of `job` scaled to `gpus` by its DP degree, 16 micro-batches per replica."""
    dp = gpus // (job.parallel.tp * job.parallel.pp * job.parallel.cp)
    machine = dataclasses.replace(machine, nodes=gpus // machine.gpus_per_node)
    scaled = dataclasses.replace(job, parallel=dataclasses.replace(job.parallel, dp=dp),
                                 batch=dataclasses.replace(job.batch, global_batch=16 * dp))
    t0 = time.perf_counter()
    r = llm_prediction(machine, scaled)
    return dp, r, time.perf_counter() - t0


def main() -> None:
    base = load(SCENARIO)
    job = base.jobs[0]
    print(f"{'GPUs':>6} {'DP':>4} {'step s':>8} {'TFLOP/s/GPU':>12} {'MFU':>6} {'events':>7} {'wall s':>7} {'events/s':>9}")
    for gpus in (1024, 4096, 16384):
        dp, r, wall = timed_step(base.machine, job, gpus)
        print(f"{gpus:>6} {dp:>4} {r.step_time_s:>8.3f} {r.tflops_per_gpu:>12.1f} {r.mfu:>6.3f} {r.events:>7} {wall:>7.2f} "
              f"{r.events / wall:>9.0f}")


if __name__ == "__main__":
    from simcluster.script_args import check

    check()   # no arguments: an unknown one is one line, before the run
    main()
