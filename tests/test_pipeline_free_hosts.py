"""The stage hosts' coupling of an eager pipeline (launch_backlog.free_host, PipelineWork.free_hosts; docs/models/llm.md): each
stage's host issues its tasks back to back, never waiting for their inputs, and a task's kernels end at
max(start + G, host start + bound). A hand-computed 2-stage 1F1B schedule, the DES and its max-plus twin on it, the
hosts in series as before, and the candidate off in the product (framework.free_stage_hosts)."""

from __future__ import annotations

import pytest

from simcluster.llm.launch_backlog import free_host
from simcluster.llm.maxplus import evaluate_iteration
from simcluster.llm.simulate import PARTS, PipelineWork, StageWork, Task, simulate_iteration


def task(gpu: float, issue: float, bound: float, kernels: int = 0) -> Task:
    """A task of GPU time `gpu` whose host issues `kernels` for `issue` and whose kernels end `bound` after the host
    starts (the GPU free): its duration in series is max(gpu, bound), the excess 'host'."""
    parts = dict.fromkeys(PARTS, 0.0) | {"compute": gpu, "host": max(0.0, bound - gpu)}
    return Task(max(gpu, bound), parts, issue, bound, kernels)


def work(free: bool, gpipe: bool = False, queue: int = 0) -> PipelineWork:
    stage = StageWork((task(1.0, 3.0, 3.1, 30),), (task(2.0, 6.0, 6.1, 60),))   # 0.1 host seconds per kernel
    return PipelineWork((stage, stage), micro_batches=2, free_hosts=free, gpipe=gpipe, launch_queue=queue)


def test_free_host_is_the_kernel_issue_bound_with_the_first_kernel_held_until_the_start():
    t = task(1.0, 3.0, 3.1)
    late, host = free_host(t, 5.0, 0.0)   # the input arrives after the host issued everything: the GPU-bound time
    assert (late.duration_s, late.parts["host"], host) == (pytest.approx(1.0), pytest.approx(0.0), 3.0)
    early, host = free_host(t, 0.0, 2.0)  # the host starts late: its issue bound from its start
    assert (early.duration_s, early.parts["host"], host) == (pytest.approx(5.1), pytest.approx(4.1), 5.0)
    plain = Task(2.0, dict.fromkeys(PARTS, 0.0) | {"compute": 2.0})
    assert free_host(plain, 1.0, 7.0) == (plain, 7.0)   # no issue time priced: unchanged


@pytest.mark.parametrize("run", [lambda w: simulate_iteration(w, trace=False), evaluate_iteration])
def test_two_stages_1f1b_by_hand(run):
    """Stage 0: F0 [0, 3.1] (host to 3), F1 [3.1, 6.1] (host to 6); stage 1: F0 waits for act 0 at 3.1, ends
    max(3.1 + 1, 0 + 3.1) = 4.1 (host to 3), B0 max(4.1 + 2, 3 + 6.1) = 9.1 (host 9), F1 max(9.1 + 1, 9 + 3.1) = 12.1
    (host 12), B1 max(14.1, 12 + 6.1) = 18.1; stage 0: B0 waits for grad 0 at 9.1: max(11.1, 6 + 6.1) = 12.1 (host
    12), B1 waits for grad 1 at 18.1: max(20.1, 12 + 6.1) = 20.1. In series (the host starting with its GPU work,
    every task 3.1 or 6.1 long): stage 1 F0 [3.1, 6.2], B0 to 12.3, F1 to 15.4, B1 to 21.5; stage 0 B0 [12.3, 18.4],
    B1 [21.5, 27.6]."""
    free, series = run(work(True)), run(work(False))
    assert free.step_time_s == pytest.approx(20.1) and free.stage_ends_s == pytest.approx((20.1, 18.1))
    assert series.step_time_s == pytest.approx(27.6) and series.stage_ends_s == pytest.approx((27.6, 21.5))


def test_gpipe_by_hand_and_the_two_engines_agree():
    """GPipe, free hosts. Stage 0: F0 [0, 3.1], F1 to 6.1 (host 6); stage 1: F0 from 3.1: max(4.1, 3.1) = 4.1 (host 3),
    F1 from 6.1: max(7.1, 3 + 3.1) = 7.1 (host 6), B0 max(9.1, 6 + 6.1) = 12.1 (host 12), B1 max(14.1, 18.1) = 18.1;
    stage 0: B0 waits for grad 0 at 12.1: max(14.1, 6 + 6.1) = 14.1 (host 12), B1 from 18.1: max(20.1, 18.1) = 20.1."""
    des, mp = simulate_iteration(work(True, gpipe=True), trace=False), evaluate_iteration(work(True, gpipe=True))
    assert des.step_time_s == pytest.approx(20.1) and mp.step_time_s == pytest.approx(des.step_time_s, rel=1e-12)
    assert mp.breakdown == pytest.approx(des.breakdown, rel=1e-12)


def test_a_full_launch_queue_blocks_the_host_until_its_gpu_starts():
    t = task(1.0, 3.0, 3.1, 30)   # 0.1 s per kernel
    # 20 kernels queued by 2.0 while the GPU waits until 5: the host blocks 3; the task's last 10 kernels are 3 late
    deep, host = free_host(t, 5.0, 0.0, queue=20)
    assert (deep.duration_s, host) == (pytest.approx(1.1), pytest.approx(6.0))
    # a queue of 40 holds the task's 30 and 10 of the next: blocked 5 - 4 = 1, falling on the next task's issue
    room, host = free_host(t, 5.0, 0.0, queue=40)
    assert (room.duration_s, host) == (pytest.approx(1.0), pytest.approx(4.0))
    assert free_host(t, 5.0, 0.0, queue=60)[1] == pytest.approx(3.0)   # never full: the host runs free


def test_the_queue_in_both_engines_by_hand():
    """1F1B as test_two_stages_1f1b_by_hand with a 40-kernel queue (4.0 host seconds): the only wait longer than that
    is stage 0's B0 (host free at 6, its input at 9.1, a lead of 3.1) and stage 0's B1 (host free at 12, input 18.1:
    blocked 18.1 - 12 - 4 = 2.1, the B's 60 kernels more than the queue: its last kernels 2.1 late, end max(20.1, 12
    + 2.1 + 6.1) = 20.2)."""
    des, mp = simulate_iteration(work(True, queue=40), trace=False), evaluate_iteration(work(True, queue=40))
    assert des.step_time_s == pytest.approx(20.2) and mp.step_time_s == pytest.approx(des.step_time_s, rel=1e-12)


def test_the_candidate_is_off_in_the_product_and_on_where_a_torch_framework_asks():
    from dataclasses import replace

    from simcluster.heldout.eager_regimes import regime_framework, regime_predict
    from simcluster.llm.work import free_hosts

    fw, _ = regime_framework("pp-1f1b", "h200")
    assert not fw.free_stage_hosts and not free_hosts(fw, [], 2)   # the product: the hosts in series
    assert free_hosts(replace(fw, free_stage_hosts=True), [], 2)
    assert not free_hosts(replace(fw, free_stage_hosts=True, host_kernel_s=0.0), [], 2)   # no host priced: nothing to free
    series = regime_predict("0.8b", 1, "pp-1f1b", "h200", microbatches=4, seq=1344)
    free = regime_predict("0.8b", 1, "pp-1f1b", "h200", microbatches=4, seq=1344, free_hosts=True)
    assert free["step_ms"] < 0.95 * series["step_ms"]   # host-bound: the stages' hosts overlap instead of queueing
    gpu_series = regime_predict("0.8b", 4, "pp-1f1b", "h200", microbatches=4, seq=2048)
    gpu_free = regime_predict("0.8b", 4, "pp-1f1b", "h200", microbatches=4, seq=2048, free_hosts=True)
    assert gpu_free["step_ms"] == pytest.approx(gpu_series["step_ms"], rel=0.02)   # GPU-bound: hardly moves
