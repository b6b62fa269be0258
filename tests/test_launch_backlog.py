"""Session 45's ppfree term (llm/launch_backlog.py, framework.launch_backlog; off in the product): a free stage host's
launch queue holds its earlier chunks not yet started, and consecutive steps run without a barrier (each stage starts
its next step at its own end). Hand-computed cases, the DES and its max-plus twin on them, and the product unchanged."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_pipeline_free_hosts import task, work

from simcluster.llm.launch_backlog import backlog_issue, free_host, steady
from simcluster.llm.maxplus import evaluate_iteration
from simcluster.llm.simulate import simulate_iteration


def test_an_earlier_chunk_waiting_for_its_input_holds_the_queue():
    # queue 10; an earlier chunk of 8 kernels starts at 5: the host issues 2 of its 4 kernels (to 0.2), blocks until 5,
    # then issues the other 2 (to 5.2)
    assert backlog_issue(0.0, 4, 0.1, 6.0, [(5.0, 8)], 10) == (pytest.approx(5.2), pytest.approx(4.8))
    # an earlier chunk already started holds nothing: the host runs free
    assert backlog_issue(0.0, 4, 0.1, 6.0, [(0.0, 8)], 10) == (pytest.approx(0.4), 0.0)
    # no earlier chunk: its own kernels fill the queue until its own start, as the task-only queue had it
    assert backlog_issue(0.0, 30, 0.1, 5.0, [], 20) == (pytest.approx(6.0), pytest.approx(3.0))


def test_free_host_with_the_backlog_records_the_chunk_and_prices_the_block():
    pending: list = [(5.0, 25)]
    t = task(1.0, 3.0, 3.1, 30)   # 0.1 s per kernel
    # queue 40: 15 kernels of room (to 1.5), blocked until 5 (3.5 s), the other 15 to 6.5; its end max(6 + 1, 0 + 3.5 +
    # 3.1) = 7.0 (the GPU, from its start at 6, the later)
    out, host = free_host(t, 6.0, 0.0, 40, pending)
    assert host == pytest.approx(6.5) and out.duration_s == pytest.approx(1.0)
    assert pending == [(5.0, 25), (6.0, 30)]


@pytest.mark.parametrize("run", [lambda w: simulate_iteration(w, trace=False), evaluate_iteration])
def test_the_steady_state_by_hand(run):
    """test_pipeline_free_hosts' 1F1B (free: ends 20.1 / 18.1). Stage 1 starts its next step 2.0 early (host at -2):
    F0 [3.1, 4.1] (host 1), B0 max(6.1, 1 + 6.1) = 7.1 (host 7), F1 max(8.1, 7 + 3.1) = 10.1 (host 10), B1 max(12.1,
    16.1) = 16.1; stage 0 as before to its B0, whose grad arrives at 7.1: max(9.1, 6 + 6.1) = 12.1 (host 12), B1 from
    16.1: max(18.1, 18.1) = 18.1. Ends 18.1 / 16.1: the offset -2.0 again, the period 18.1."""
    w = replace(work(True), launch_backlog=True)
    r = steady(w, run)
    assert r.step_time_s == pytest.approx(18.1) and r.stage_ends_s == pytest.approx((18.1, 16.1))
    assert run(work(True)).step_time_s == pytest.approx(20.1)   # the isolated step, without the term


def test_the_engines_agree_where_a_free_host_meets_a_task_without_issue_time():
    """review B45, 9: the schedule's host seconds (action_host_s) fall before a task's issue, in free_host, so a task
    without issue time (no kernels priced: the host does nothing for it) neither takes them nor moves the host, in the
    DES as in max-plus. Forwards without issue time, backwards as test_pipeline_free_hosts' (6.0 s of issue, bound 6.1):
    stage 1 F0 [1, 2], B0 from 2 with the host at 0 + 0.5: max(2 + 2, 0.5 + 6.1) = 6.6 (host 6.5), F1 [6.6, 7.6], B1
    max(7.6 + 2, 6.5 + 0.5 + 6.1) = 13.1; stage 0 B0 from grad 0 at 6.6: max(8.6, 0.5 + 6.1) = 8.6 (host 6.5), B1 from
    grad 1 at 13.1: max(15.1, 7.0 + 6.1) = 15.1. (Before, the DES took the 0.5 s for the forwards too: 16.1.)"""
    from simcluster.llm.simulate import PARTS, PipelineWork, StageWork, Task

    plain = Task(1.0, dict.fromkeys(PARTS, 0.0) | {"compute": 1.0})
    stage = StageWork((plain,), (task(2.0, 6.0, 6.1, 60),))
    w = PipelineWork((stage, stage), micro_batches=2, free_hosts=True, action_host_s=0.5)
    des, mp = simulate_iteration(w, trace=False), evaluate_iteration(w)
    assert des.step_time_s == pytest.approx(15.1) and des.stage_ends_s == pytest.approx((15.1, 13.1))
    assert mp.step_time_s == pytest.approx(des.step_time_s, rel=1e-12) and mp.breakdown == pytest.approx(des.breakdown, rel=1e-12)


def test_offsets_that_never_settle_and_a_backlog_without_free_hosts_are_one_line_errors():
    """review B45, 10: a period without a fixed point is not returned unsaid; the term needs the hosts free."""
    from types import SimpleNamespace

    from simcluster.errors import SimclusterError
    from simcluster.heldout.eager_regimes import regime_predict

    def flipping(w):   # stage 1 ends 1 s after stage 0 when it starts with it, 1 s before when it starts late
        return SimpleNamespace(stage_ends_s=(10.0, 11.0 if (w.host_offsets or (0.0, 0.0))[1] <= 0 else 9.0))

    with pytest.raises(SimclusterError, match=r"^launch_backlog.steady: the stages' step offsets did not settle in 8 rounds "
                                              r"\(last change 2000.000 ms\); no steady-state step$"):
        steady(replace(work(True), launch_backlog=True), flipping)
    with pytest.raises(SimclusterError, match=r"^regime_predict: backlog needs free hosts"):
        regime_predict("0.8b", 1, "pp-1f1b", "h200", microbatches=4, seq=1344, free_hosts=False, backlog=True)


def test_the_term_is_off_in_the_product_and_the_engines_agree_on_a_preset():
    from simcluster.heldout.eager_regimes import regime_framework, regime_predict

    fw, _ = regime_framework("pp-1f1b", "h200")
    assert not fw.launch_backlog
    kw = {"microbatches": 4, "seq": 1344}
    free = regime_predict("0.8b", 1, "pp-1f1b", "h200", free_hosts=True, **kw)["step_ms"]
    term = regime_predict("0.8b", 1, "pp-1f1b", "h200", backlog=True, **kw)["step_ms"]
    des = regime_predict("0.8b", 1, "pp-1f1b", "h200", backlog=True, timeline=True, **kw)["step_ms"]
    assert term < free and des == pytest.approx(term, rel=1e-9)
