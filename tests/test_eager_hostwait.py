"""Session 42 hostwait (issue 44): the host time without blocking waits in the runner (runner/host_cpu.py: the issuing
threads' CPU clocks, the profiled step less its waits; host_issue.py's by-rank keys) and the registered set's read-out
(validation/eager_hostwait.py) on synthetic bundles: each candidate able to hold and to fail, KEEP naming the first."""

from __future__ import annotations

import json
import shutil
import threading
import time

import pytest
import yaml
from conftest import ROOT, load_script

from simcluster.errors import SimclusterError
from simcluster.runner import host_cpu, host_issue

check = load_script(ROOT / "validation" / "eager_hostwait.py")
BUNDLE = ROOT / "calibration" / "h200x2-eager-hostwait-2026-11-30"


@pytest.fixture(autouse=True)
def _registered_model():
    """The set was registered (and read) before the pooled FSDP2 host term (session 43, fsdphost2: leases.yaml), and its
    read-out refuses a moved model: its synthetic reads run at the model it was registered with."""
    from simcluster.llm.eager import leases_unread

    with leases_unread():
        yield


def test_issuing_threads_count_autograds_thread_and_not_a_sleeping_main():
    done, release = threading.Event(), threading.Event()

    def autograd():   # a CUDA backward's thread: torch names it pt_autograd_<device>
        try:
            import ctypes
            ctypes.CDLL(None).prctl(15, b"pt_autograd_0", 0, 0, 0)
        except (OSError, AttributeError):
            pytest.skip("no prctl")
        t = time.perf_counter()
        while time.perf_counter() - t < 0.25:
            pass
        done.set()
        release.wait()   # alive until read, as autograd's threads are for the process's life

    clk = host_cpu.IssueClock()
    th = threading.Thread(target=autograd)
    th.start()
    time.sleep(0.02)
    clk.find()
    if not any(n.startswith("pt_autograd") for n in clk.names):
        release.set()
        th.join()
        pytest.skip("no per-thread clocks here")
    tid = next(t for t, n in zip(clk.tids, clk.names, strict=True) if n.startswith("pt_autograd"))
    a0 = host_cpu._cpu_ns(tid)
    clk.start()
    done.wait()                                   # the main thread sleeps, as during loss.backward()
    cpu, _ = clk.stop()
    own = (host_cpu._cpu_ns(tid) - a0) * 1e-9      # the spinning thread's own clock over the window
    by_name = clk.by_thread()
    release.set()
    th.join()
    assert own > 0.02 and own - 0.005 <= cpu <= own + 0.02   # the spinning thread's time counts, the sleeping main's not
    assert by_name["pt_autograd_0"] >= own - 0.005


def test_set_sched_auto_touches_nothing_and_a_missing_driver_is_recorded():
    assert host_cpu.set_sched(0, "auto") == {"requested": "auto", "set": False}
    rec = host_cpu.set_sched(0, "blocking")
    assert rec["requested"] == "blocking" and (rec["set"] is False or rec["flags"] & 7 == 4)


def _ev(cat, name, ts, dur, tid=1):
    return {"cat": cat, "name": name, "ph": "X", "ts": ts, "dur": dur, "tid": tid}


def test_profiled_host_takes_syncs_and_long_launches_out_of_the_window():
    events = [_ev("cpu_op", "aten::mm", 0, 100), _ev("cpu_op", "aten::add", 900, 100, tid=2),
              *[_ev("cuda_runtime", "cudaLaunchKernel", 10 + 10 * i, 8) for i in range(5)],
              _ev("cuda_runtime", "cudaLaunchKernel", 200, 250),           # waited 200 us for queue space
              _ev("cuda_runtime", "cudaStreamSynchronize", 500, 300, tid=2),
              _ev("cuda_runtime", "cudaLaunchKernel", 950, 8, tid=2),
              _ev("cuda_runtime", "cudaDeviceSynchronize", 1200, 5000),    # the profile's closing sync: outside
              _ev("cuda_runtime", "cudaLaunchKernel", 50, 500, tid=9)]     # a thread without CPU ops: not issuing
    got = host_cpu.profiled_host(events, 1)
    assert got["window_s"] == pytest.approx(1000e-6) and got["sync_s"] == pytest.approx(300e-6)
    assert got["launch_wait_s"] == pytest.approx(200e-6) and got["host_s"] == pytest.approx(500e-6)
    assert got["launches"] == 7 and got["launches_to_first_sync"] == 6 and got["to_first_sync_s"] == pytest.approx(500e-6)
    assert host_cpu.profiled_host([], 1) == {}


def test_profiled_host_without_a_sync_has_no_first_sync_and_the_read_out_says_so(tmp_path):
    """No synchronising call in the window (the hostwait set's every profiled step): no loop up to a first sync to
    extrapolate, so to_first_sync_s is None, not the whole window, and candidate c reads 'no sync in window'."""
    events = [_ev("cpu_op", "aten::mm", 0, 100), _ev("cpu_op", "aten::add", 900, 100),
              *[_ev("cuda_runtime", "cudaLaunchKernel", 10 + 10 * i, 8) for i in range(5)]]
    got = host_cpu.profiled_host(events, 1)
    assert got["sync_calls"] == 0 and got["to_first_sync_s"] is None and got["launches_to_first_sync"] is None
    assert got["window_s"] == pytest.approx(1000e-6)
    path = tmp_path / "row-auto.json"
    _run(path, [50.0], [49.0], 51.0, window=60.0, b=59.0, to_first=60.0, n_first=1600)
    doc = json.loads(path.read_text())
    doc["shapes"][0]["profile"]["host"].update(sync_calls=0.0, to_first_sync_s=None, launches_to_first_sync=None)
    path.write_text(json.dumps(doc))
    m = check.measure(path)
    assert m["c_ms"] is None and m["c_note"] == "no sync in window" and m["b_ms"] == pytest.approx(59.0)
    rows = [{"name": "single-tiny-L16", "regime": "host", "host_term_ms": 36.7, "kernels": 1, "runs": {"auto": m}}]
    assert "single-tiny-L16: no sync in window" in check.verdict(rows)["candidates"]["c"]


def test_gather_adds_cpu_keys_only_where_the_runner_measured_them():
    rec = {"host_issue_s": [0.1, 0.12], "step_times_s": [0.2, 0.2], "host_cpu_s": [0.05, 0.07], "process_cpu_s": [0.2, 0.2],
           "thread_cpu_s": {"python": 0.1}, "profile": {"host": {"host_s": 0.06}}}
    got = host_issue.gather(None, rec, 1)
    assert got["profiled_host_by_rank"] == [{"host_s": 0.06}]
    assert got["host_cpu_s_by_rank"] == [[0.05, 0.07]] and got["host_cpu_median_s_by_rank"] == [pytest.approx(0.06)]
    assert got["thread_cpu_s_by_rank"] == [{"python": 0.1}] and got["process_cpu_s_by_rank"] == [[0.2, 0.2]]
    old = host_issue.gather(None, {"host_issue_s": [0.1], "step_times_s": [0.2]}, 1)   # the Megatron runner's records
    assert "host_cpu_s_by_rank" not in old and old["host_issue_median_s_by_rank"] == [0.1]


def test_registration_holds_each_rows_host_term_and_the_tiny_rows_match_the_kernels():
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    rows = {r["name"]: r for r in reg["rows"]}
    assert set(rows) == {r[0] for r in check.ROWS} and reg["rules"] == check.rules()
    assert rows["fsdp-0.5b-5120x4"]["predicted"]["host_term_ms"] == pytest.approx(79.0, abs=0.05)
    assert rows["fsdp-tiny-L16"]["predicted"]["kernels"] == rows["fsdp-0.5b-5120x4"]["predicted"]["kernels"]
    assert rows["single-tiny-L16"]["predicted"]["kernels"] == rows["single-0.5b-2048x8"]["predicted"]["kernels"]
    script = (BUNDLE / "device_run.sh").read_text()
    for row in check.ROWS:
        assert f"guarded {row[0]}-$s" in script


def _run(path, issue, cpu, step, window=None, b=None, to_first=None, n_first=None, launches=1600, sched_set=True):
    ranks = len(issue)
    prof = {} if window is None else {"host": {"window_s": window / 1e3, "host_s": b / 1e3, "to_first_sync_s": to_first / 1e3,
                                               "launches_to_first_sync": n_first, "launches": launches}}
    shape = {"status": "ok", "median_step_s": step / 1e3, "seq": 128, "micro_batch": 1,
             "host_issue_s_by_rank": [[issue[r] / 1e3] * 5 for r in range(ranks)],
             "host_cpu_s_by_rank": [[cpu[r] / 1e3] * 5 for r in range(ranks)], "profile": prof}
    doc = {"tool": "llm-step", "format": 1, "model": {}, "cuda_sched": {"set": sched_set}, "shapes": [shape]}
    path.write_text(json.dumps(doc))


def _bundle(tmp_path, gpu_cpu=None, host_ratio=0.97, blocking_step=1.0, b_gpu=None):
    """A synthetic bundle: host-bound rows with CPU = host_ratio x wall; GPU-bound rows whose issue includes waits
    (1.5x the model's host term) under auto, with a-auto's CPU spinning through them and a-blocking's at `gpu_cpu`
    x the host term (b at `b_gpu` x)."""
    b = tmp_path / "set"
    (b / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", b / "registered.yaml")
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    for r in reg["rows"]:
        term = r["predicted"]["host_term_ms"]
        ranks = 1 if r["mode"] == "single" else 2
        for sched in ("auto", "blocking"):
            path = b / "runs" / f"{r['name']}-{sched}.json"
            if r["regime"] == "host":
                wall = term * 1.1
                _run(path, [wall] * ranks, [wall * host_ratio] * ranks, wall + 1, wall * 1.5, wall * 1.5 * host_ratio,
                     wall, 1600)
            else:
                issue = term * 1.5
                cpu = issue if sched == "auto" else term * (gpu_cpu or 1.0)
                step = 3 * term * (blocking_step if sched == "blocking" else 1.0)
                _run(path, [issue] * ranks, [cpu] * ranks, step, issue * 1.1, term * (b_gpu or 1.4), issue * 0.8, 1600)
    return b


def test_a_blocking_is_kept_where_it_leaves_the_waits_out(tmp_path, capsys):
    got = check.read_out(_bundle(tmp_path))
    assert got["verdict"]["candidates"]["a-auto"].startswith("FAILS") and "GB" in got["verdict"]["candidates"]["a-auto"]
    assert got["verdict"]["candidates"]["a-blocking"] == "HOLDS" and got["verdict"]["keep"] == "a-blocking"
    check.show(got)
    out = capsys.readouterr().out
    assert "KEEP: a-blocking" in out and "reported: fsdp-0.5b-5120x4: lease host term" in out


@pytest.mark.parametrize("kw, why", [({"host_ratio": 0.8}, "HB"), ({"gpu_cpu": 1.4}, "GB"),
                                     ({"blocking_step": 1.05}, "step under blocking")])
def test_each_part_of_the_rule_can_fail(tmp_path, kw, why):
    got = check.read_out(_bundle(tmp_path, **kw))
    assert why in got["verdict"]["candidates"]["a-blocking"] and got["verdict"]["keep"] != "a-blocking"


def test_b_is_kept_where_only_the_profile_leaves_the_waits_out_and_none_says_none(tmp_path):
    assert check.read_out(_bundle(tmp_path / "1", gpu_cpu=1.5, b_gpu=1.1))["verdict"]["keep"] == "b"
    assert check.read_out(_bundle(tmp_path / "2", gpu_cpu=1.5))["verdict"]["keep"] == "NONE"


def test_a_blocking_run_without_the_flag_is_dropped_and_bad_files_name_themselves(tmp_path):
    b = _bundle(tmp_path)
    _run(b / "runs" / "fsdp-tiny-L16-blocking.json", [80, 80], [78, 78], 81, sched_set=False)
    (b / "runs" / "ddp-1b-4096x3-auto.json").write_text(json.dumps({"tool": "llm-step", "model": {}, "shapes": [{"median_step_s": 0.2,
                                                                    "host_issue_s_by_rank": [[0.1], [None]]}]}))
    got = check.read_out(b)
    assert any("fsdp-tiny-L16-blocking.json: cuda_sched" in d for d in got["dropped"])
    assert any("ddp-1b-4096x3-auto.json: host_issue_s_by_rank" in d for d in got["dropped"])
    assert "not measured" in got["verdict"]["candidates"]["a-blocking"]


def test_a_moved_model_is_refused_in_one_line(tmp_path):
    b = _bundle(tmp_path)
    reg = yaml.safe_load((b / "registered.yaml").read_text())
    reg["rows"][0]["predicted"]["host_term_ms"] += 1.0
    (b / "registered.yaml").write_text(yaml.safe_dump(reg))
    with pytest.raises(SimclusterError, match="the model moved"):
        check.read_out(b)
