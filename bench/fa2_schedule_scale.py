"""The FlashAttention 2 schedule form's cost at sweep scale (not a test): llm/flash_schedule.py prices each new
(pass, batch x heads, seq, head size) shape by a greedy list schedule of its CTAs, then caches it.

  kernel    flash_schedule.kernel_s at 128K tokens, head size 128, causal and full (non-causal / 'fa2-full'),
            batch x heads 64 and 512, both passes: the first call (caches cleared) and a cached one, wall seconds
  point     Llama-3.1-405B (scenarios/llm/llama405b-16k.yaml, 1,024 H100s) at seq 131,072 with framework
            megatron-te-fa2 (every attention call on the form): the first prediction, the same point again, and
            again with only the form's caches cleared (what the form adds to a new point), wall seconds
    python bench/fa2_schedule_scale.py
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from llm_scale import SCENARIO, timed_step  # noqa: E402

from simcluster.llm import flash_schedule  # noqa: E402
from simcluster.scenario import load  # noqa: E402

SEQ = 131072


def _clear() -> None:
    flash_schedule._kernel.cache_clear()
    flash_schedule._one_head.cache_clear()


def _timed(*args) -> float:
    t0 = time.perf_counter()
    flash_schedule.kernel_s(*args)
    return time.perf_counter() - t0


def main() -> None:
    print(f"{'kernel_s at 128K, d 128':34} {'first s':>8} {'cached s':>9}")
    for causal in (True, False):
        for bh in (64, 512):
            for pass_ in flash_schedule.PASSES:
                _clear()
                call = (pass_, 1, bh, SEQ, SEQ, 128, causal)
                print(f"  {'causal' if causal else 'full':6} b x h {bh:4} {pass_:4}{'':12} {_timed(*call):8.4f} "
                      f"{_timed(*call):9.5f}")
    base = load(SCENARIO)
    job = base.jobs[0]
    job = dataclasses.replace(job, framework="megatron-te-fa2", model=dataclasses.replace(job.model, seq=SEQ))
    _clear()
    first = timed_step(base.machine, job, 1024)
    again = timed_step(base.machine, job, 1024)
    _clear()
    form = timed_step(base.machine, job, 1024)
    print(f"\n405B megatron-te-fa2 at seq {SEQ}, 1,024 GPUs: step {first[1].step_time_s:.3f} s; prediction wall "
          f"{first[2]:.2f} s first, {again[2]:.2f} s again (all cached), {form[2]:.2f} s with only the form's caches "
          "cleared")


if __name__ == "__main__":
    from simcluster.script_args import check

    check()   # no arguments: an unknown one is one line, before the run
    main()
