"""The pipeline host timeline (simcluster/runner/pp_timeline.py, llm_step --mode pp --timeline): the recorder on fake
calls (no torch), and the parser on a synthetic two-rank trace whose waits and leads are known."""

from __future__ import annotations

import pytest

from simcluster.runner import pp_timeline


class _NoCuda:
    @staticmethod
    def is_available():
        return False


class _Torch:
    cuda = _NoCuda


class _Work:
    def __init__(self):
        self.waited = 0

    def wait(self):
        self.waited += 1
        return True


def test_the_recorder_records_every_other_call_and_times_chunks_posts_and_waits():
    tl = pp_timeline.Timeline(_Torch)
    fwd = tl._chunk("fwd", lambda k, *a, **kw: f"out{k}")
    works = [_Work(), _Work()]
    post = tl._post(lambda ops, desc=None: works)

    def step():
        got = post(["op"], desc="fwd_recv")
        for w in got:
            w.wait()
        assert fwd(3, "args") == "out3"
        tl.mark("schedule")

    wrapped = tl.around(step)
    for _ in range(3):
        wrapped()
    dump = tl.dump()
    assert [s["on"] for s in dump["steps"]] == [True, False, True] and [s["call"] for s in dump["steps"]] == [0, 1, 2]
    kinds = [e[0] for e in dump["steps"][0]["events"]]
    assert kinds == ["post", "wait", "wait", "fwd", "schedule", "end"], kinds
    assert dump["steps"][0]["events"][3][1] == 3 and dump["steps"][0]["events"][0][1] == "fwd_recv"
    assert all(w.waited == 3 for w in works)   # unrecorded steps pass through the same wrappers
    assert "events" not in dump["steps"][1] and dump["gpu_events"] is False
    ev = dump["steps"][2]["events"]
    assert all(0 <= e[2] <= e[3] for e in ev) and ev[-1][2] >= ev[-2][2]


def _step(t0, events, gpu=None):
    return {"call": 4, "on": True, "t0": t0, "events": events, "gpu": gpu or []}


def test_the_parser_reads_known_waits_leads_and_the_gap_before_a_chunk():
    # rank 1 (stage 1) posts its receive, waits 10 ms in Work.wait, then issues forward 0 from 12 ms to 20 ms; rank 0
    # (stage 0) issues forward 0 from 0 to 9 ms, its GPU finishing it at 10 ms; rank 0's backward 0 starts at 30 ms,
    # rank 1's GPU finishing backward 0 at 40 ms (the host 10 ms ahead of its input)
    r0 = _step(100.0, [["fwd", 0, 0.0, 0.009], ["post", "fwd_send", 0.009, 0.0095], ["post", "bwd_recv", 0.029, 0.0295],
                       ["wait", "bwd_recv", 0.0295, 0.030], ["bwd", 0, 0.030, 0.050], ["schedule", None, 0.050, 0.050],
                       ["end", None, 0.052, 0.052]],
               [["fwd", 0, 0.0005, 0.010], ["bwd", 0, 0.041, 0.052]])
    r1 = _step(100.001, [["post", "fwd_recv", 0.0, 0.001], ["wait", "fwd_recv", 0.001, 0.011], ["fwd", 0, 0.011, 0.019],
                         ["bwd", 0, 0.019, 0.039], ["schedule", None, 0.040, 0.040], ["end", None, 0.041, 0.041]],
               [["fwd", 0, 0.0105, 0.019], ["bwd", 0, 0.020, 0.039]])
    f1 = pp_timeline.rank_features(r1)
    assert f1["wait_s"] == pytest.approx(0.010) and f1["post_s"] == pytest.approx(0.001)
    assert f1["window_s"] == pytest.approx(0.040) and f1["chunk_s"] == pytest.approx(0.028)
    assert f1["outside_fraction"] == pytest.approx(0.012 / 0.040) and f1["largest_wait"] == ["fwd_recv", pytest.approx(0.010)]
    assert f1["issue_s"] == pytest.approx(0.041)
    lead = pp_timeline.leads(r0, r1)
    # r1 fwd 0: rank 0's GPU end 100.010 less rank 1's start 100.012 -> -2 ms (series); r0 bwd 0: 100.040 - 100.030
    assert lead["r1 fwd 0"] == pytest.approx(-0.002) and lead["r0 bwd 0"] == pytest.approx(0.010)
    host_only = pp_timeline.leads(r0, r1, gpu=False)   # the producer's host call end stands for the arrival
    assert host_only["r1 fwd 0"] == pytest.approx(100.009 - 100.012) and host_only["r0 bwd 0"] == pytest.approx(0.010)
    gap = pp_timeline.before_chunk(r1, "fwd", 0)
    assert gap == pytest.approx({"gap_s": 0.011, "post_s": 0.001, "wait_s": 0.010, "other_s": 0.0})
    gap = pp_timeline.before_chunk(r0, "bwd", 0)
    assert gap["gap_s"] == pytest.approx(0.021) and gap["wait_s"] == pytest.approx(0.0005)


def test_the_overhead_compares_recorded_and_unrecorded_timed_steps():
    timeline = {"steps": [{"call": c, "on": c % 2 == 0} for c in range(7)]}
    times = [0.10, 0.102, 0.10, 0.102]   # timed steps = calls 3..6: 3 and 5 unrecorded, 4 and 6 recorded
    assert pp_timeline.overhead(times, 3, timeline) == pytest.approx(0.02)
    assert pp_timeline.overhead([0.1], 3, timeline) is None
    assert [s["call"] for s in pp_timeline.timed_recorded({"steps": [{"call": c, "on": c % 2 == 0} for c in range(7)]}, 3)] == [4, 6]


def test_a_host_that_blocks_inside_a_chunk_call_starts_issuing_after_the_wait():
    # rank 1's forward 0 call starts at 1 ms but takes 19 ms where forward 1 takes 8: it waited 11 ms inside the call,
    # issuing from 12 ms, after stage 0's forward 0 ended on its GPU at 10 ms
    r0 = _step(0.0, [["fwd", 0, 0.0, 0.009], ["fwd", 1, 0.009, 0.018], ["end", None, 0.05, 0.05]],
               [["fwd", 0, 0.0, 0.010], ["fwd", 1, 0.010, 0.019]])
    r1 = _step(0.0, [["fwd", 0, 0.001, 0.020], ["fwd", 1, 0.020, 0.028], ["end", None, 0.05, 0.05]],
               [["fwd", 0, 0.012, 0.020], ["fwd", 1, 0.020, 0.028]])
    assert pp_timeline.issue_starts(r1)["fwd", 0] == pytest.approx(0.012)
    assert pp_timeline.leads(r0, r1)["r1 fwd 0"] == pytest.approx(-0.002)
    f = pp_timeline.rank_features(r1)
    assert f["inside_excess_s"] == pytest.approx(0.011) and f["wait_s"] == 0 and f["window_s"] == pytest.approx(0.05)
