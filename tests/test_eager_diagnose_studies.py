"""The session-37 diagnostics' read-outs: the allocator-history replay and the host-operator summary (studies/)."""

import gzip
import json

import pytest
from conftest import ROOT, load_script

timeline = load_script(ROOT / "studies" / "eager_memory_timeline.py")
host_ops = load_script(ROOT / "studies" / "tp_host_ops.py")


def test_replay_counts_allocated_as_torch_does():
    """A block leaves the count at free_requested (torch's allocated statistic), not at free_completed (reusable); a
    block from before the recording leaves `base` by the event's size."""
    frame = {"filename": "/x/site-packages/torch/nn/parallel/distributed.py", "line": 7, "name": "_pre_forward"}
    trace = [{"action": "alloc", "addr": 1, "size": 10, "frames": [frame]},
             {"action": "alloc", "addr": 2, "size": 5, "frames": []},
             {"action": "free_requested", "addr": 1, "size": 10},     # a side stream used it: completes later
             {"action": "free_requested", "addr": 99, "size": 40},    # a block from before the recording
             {"action": "free_completed", "addr": 99, "size": 40},
             {"action": "alloc", "addr": 3, "size": 20, "frames": []},
             {"action": "free_completed", "addr": 1, "size": 10},
             {"action": "free_completed", "addr": 3, "size": 20}]     # no free_requested recorded: counted out here
    first, second = timeline.replay(trace, [5, 8], base=100)
    assert first["peak_bytes"] == 115 and first["end_bytes"] == 65
    assert first["alive_by_site"] == {"(before the recording)": 100, "torch/nn/parallel/distributed.py:7:_pre_forward": 10,
                                      "(no python frame)": 5}
    assert second["peak_bytes"] == 85 and second["end_bytes"] == 65
    assert second["freed_not_reusable_at_peak_bytes"] == 10   # block 1 requested, not yet completed, at the peak
    assert second["alive_by_site"] == {"(before the recording)": 60, "(no python frame)": 25}


def test_host_ops_top_level_only_and_nccl_left_out(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "tid": 1, "ts": 0, "dur": 100},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "tid": 1, "ts": 10, "dur": 50},     # inside linear
              {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "tid": 1, "ts": 200, "dur": 30},
              {"ph": "X", "cat": "kernel", "name": "nvjet_gemm", "tid": 7, "ts": 20, "dur": 40},
              {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "tid": 8, "ts": 20, "dur": 400}]
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump({"traceEvents": events}, fh)
    s = host_ops.summary(str(path))
    assert s["ops"] == {"aten::linear": [1, 100.0], "aten::add_": [1, 30.0]}
    assert s["gpu_us"] == 40 and s["kernels"] == 1 and s["span_us"] == 420


def test_host_ops_bad_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.json.gz"
    bad.write_text("not gzip")
    with pytest.raises(SystemExit, match="bad.json.gz: not a gzipped file"):
        host_ops.summary(str(bad))
    empty = tmp_path / "none.json.gz"
    with gzip.open(empty, "wt") as fh:
        json.dump({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1}]}, fh)
    with pytest.raises(SystemExit, match="no CPU operator events"):
        host_ops.summary(str(empty))


def test_host_ops_inside_an_operator(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "tid": 1, "ts": 0, "dur": 100},
              {"ph": "X", "cat": "cpu_op", "name": "aten::view", "tid": 1, "ts": 10, "dur": 20},
              {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "tid": 1, "ts": 200, "dur": 100},
              {"ph": "X", "cat": "cpu_op", "name": "aten::view", "tid": 1, "ts": 210, "dur": 40},
              {"ph": "X", "cat": "cpu_op", "name": "aten::view", "tid": 2, "ts": 210, "dur": 40},    # another thread
              {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "tid": 1, "ts": 400, "dur": 30}]   # outside
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(events, fh)   # the bare-array form of a Chrome trace
    assert host_ops.inside(str(path), "aten::linear") == {"aten::view": 30.0}
    with pytest.raises(SystemExit, match="no CPU operator named 'aten::mm'"):
        host_ops.inside(str(path), "aten::mm")


def test_the_read_outs_refuse_empty_input_in_one_line(tmp_path, capsys):
    noise = load_script(ROOT / "studies" / "eager_noise_floor.py")
    (tmp_path / "runs").mkdir()
    assert noise.main([str(tmp_path)]) == 1
    assert "no run with a timed shape" in capsys.readouterr().err
    assert timeline.main(["--peaks", str(tmp_path)]) == 1
    assert "no DDP or cp run with a timed peak" in capsys.readouterr().err
    (tmp_path / "t.json").write_text("[]")
    assert timeline.main(["--read", str(tmp_path / "t.json")]) == 1
    assert "no rank's document" in capsys.readouterr().err


def test_the_host_bound_noise_set_reads_as_its_readme_says(capsys):
    """Session 38's host-bound noise set: each mode's four process medians, their spread, and the model with the lease's
    own host fit (runs/host/) against the four processes' mean, as the bundle's README tables them."""
    noise = load_script(ROOT / "studies" / "eager_noise_floor.py")
    assert noise.main([str(ROOT / "calibration" / "h200x2-eager-hostbound-noise-2026-11-29")]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert set(lines) == {"single", "ddp", "fsdp", "pp-1f1b"}
    assert "124.6 / 139.7 / 122.2 / 133.7   14.3%  6.2%" in lines["fsdp"] and lines["fsdp"].endswith("136.0 ms, +4.6%")
    assert "41.4% 15.7%" in lines["single"] and lines["single"].endswith("63.3 ms, +2.6%")
    # the README's table: 147.5 ms, +24.6% and 79.3 ms, +4.2%, the model of its day; session 39's cuDNN schedule form for
    # the card's attention moves them by 0.1 ms
    assert lines["pp-1f1b"].endswith("147.6 ms, +24.7%") and lines["ddp"].endswith("79.3 ms, +4.3%")
