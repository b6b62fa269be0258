"""The session-37 diagnostics' read-outs: the allocator-history replay and the host-operator summary (studies/)."""

import gzip
import json

import pytest
from conftest import ROOT, load_script

timeline = load_script(ROOT / "studies" / "eager_memory_timeline.py")
host_ops = load_script(ROOT / "studies" / "tp_host_ops.py")


def test_replay_peak_and_sites_per_window():
    frame = {"filename": "/x/site-packages/torch/nn/parallel/distributed.py", "line": 7, "name": "_pre_forward"}
    trace = [{"action": "alloc", "addr": 1, "size": 10, "frames": [frame]},
             {"action": "alloc", "addr": 2, "size": 5, "frames": []},
             {"action": "free_completed", "addr": 1},
             {"action": "free_completed", "addr": 99},            # a block from before the recording: not counted
             {"action": "alloc", "addr": 3, "size": 20, "frames": []},
             {"action": "free_completed", "addr": 3}]
    first, second = timeline.replay(trace, [4, 6], base=100)
    assert first["peak_bytes"] == 115 and first["end_bytes"] == 105
    assert first["alive_by_site"] == {"torch/nn/parallel/distributed.py:7:_pre_forward": 10, "(no python frame)": 5}
    assert second["peak_bytes"] == 125 and second["alive_by_site"] == {"(no python frame)": 25}


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
    with pytest.raises(SystemExit, match="not a gzipped Chrome trace"):
        host_ops.summary(str(bad))
