"""The FSDP2 noise trace read (studies/fsdp_noise_trace.py, issue 44, session 40) on a synthetic pair of ranks: each idle gap
of the compute stream put on what ended it, the NCCL kernels' excess over the pair's fastest and the other rank's lag."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import load_script


def _rank(path, ag_start: float, ag_dur: float, beside_dur: float = 10, alloc: bool = False) -> None:
    """Compute stream 7: K1 10-30; K2 launched at 50 (host late: 30 us gap; under a cudaMalloc where `alloc`); K3 queued at
    70, waits for the all-gather on stream 19 (ends at ag_start + ag_dur = 125): 50 us gap; K4 launched at 160 under
    Optimizer.step: 20 us gap; K5 launched at 260 after a 70 us cudaStreamSynchronize: 85 us gap; K6 queued at 262, 3 us
    after K5 (a bubble). A GEMM on stream 23 at 102 for `beside_dur` us, beside the all-gather."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#AdamW.step", "ts": 155, "dur": 45, "tid": 1, "pid": 1},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 185, "dur": 70, "tid": 1, "pid": 1, "args": {}}]
    if alloc:
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "ts": 35, "dur": 5, "tid": 1, "pid": 1, "args": {}})
    for corr, (name, stream, launch, ts, dur) in enumerate((
            ("nvjet_a", 7, 5, 10, 20), ("nvjet_b", 7, 50, 60, 20), ("ncclDevKernel_AllGather_RING_LL", 19, 75, ag_start, ag_dur),
            ("nvjet_c", 7, 70, 130, 20), ("multi_tensor_apply_kernel", 7, 160, 170, 10), ("elementwise_kernel", 7, 260, 265, 5),
            ("elementwise_kernel", 7, 262, 273, 2), ("nvjet_d", 23, 95, 102, beside_dur))):
        args = {"correlation": corr}
        if name.startswith("nccl"):
            args.update({"Out msg nelems": 1000, "In msg nelems": 500, "dtype": "BFloat16"})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": launch, "dur": 3, "tid": 1, "pid": 1,
                   "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "tid": stream, "pid": 0, "args": args})
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": ev}, f)


def test_each_gap_goes_to_what_ended_it_and_the_nccl_wait_to_the_other_rank(tmp_path):
    study = load_script("studies/fsdp_noise_trace.py")
    r0, r1 = tmp_path / "fsdp-toy-r1-64x1-rank0.json.gz", tmp_path / "fsdp-toy-r1-64x1-rank1.json.gz"
    _rank(r0, 85, 40, beside_dur=14, alloc=True)   # rank 0's all-gather starts 15 us before rank 1's, lasts 15 us longer
    _rank(r1, 100, 25)
    a, b, floor = study.pair_read([r0, r1])
    assert floor == {("AllGather", 2000): 25}
    assert a["causes"] == pytest.approx({"host alloc": 0.030, "wait all-gather": 0.050, "host optimizer": 0.020,
                                         "host sync": 0.085, "bubble": 0.003})
    assert a["counts"] == {"host alloc": 1, "wait all-gather": 1, "host optimizer": 1, "host sync": 1, "bubble": 1}
    assert a["allocs"] == 1 and b["allocs"] == 0 and b["causes"]["host launch"] == pytest.approx(0.030)
    assert a["idle"] == pytest.approx(0.188) and a["largest"] == pytest.approx(0.085) and a["largest_cause"] == "host sync"
    assert a["busy"] == pytest.approx(0.077) and a["span"] == pytest.approx(0.265) and a["optimizer"] == pytest.approx(0.010)
    assert a["nccl_excess"] == pytest.approx(0.015) and a["other_rank_late"] == pytest.approx(0.015)
    assert b["nccl_excess"] == 0 and b["other_rank_late"] == 0 and b["causes"]["wait all-gather"] == pytest.approx(0.050)
    # the host's issue: first launch 5 us to last 262 us, 8 launches; the GEMM beside the all-gather 4 us over rank 1's
    assert a["host_issue"] == pytest.approx(0.257) and a["launches"] == 8
    assert a["beside"] == pytest.approx(0.014) and a["beside_extra"] == pytest.approx(0.004) and b["beside_extra"] == pytest.approx(-0.004)
    assert a["away_extra"] == pytest.approx(0.0)
    # at the floor, the step's one all-gather against the model's time for its bytes
    assert a["floor_over_model"] == pytest.approx((25 - study.model_byte_s("AllGather", 2000) * 1e6) / 1e3)
    assert study.bus_gbs(134_000_000, 313.0) == pytest.approx(214.06, abs=0.01)


def test_the_model_row_is_the_regime_prediction_and_its_host_issue():
    from simcluster.errors import SimclusterError
    from simcluster.heldout.eager_regimes import regime_predict

    study = load_script("studies/fsdp_noise_trace.py")
    small, big = study.model_row("fsdp-0.5b-r1-5120x2"), study.model_row("fsdp-0.8b-r1-4096x3")
    assert small["step"] == regime_predict("0.5b", 2, "fsdp", "h200", seq=5120)["step_ms"]
    assert small["host_issue"] == pytest.approx(small["kernels"] * small["host_kernel_us"] / 1e3 + small["host_step"])
    assert 0 < small["compute"] < small["step"] and small["kernels"] < big["kernels"] and small["host_issue"] < big["host_issue"]
    with pytest.raises(SimclusterError, match="fsdp-9z-r1-5120x2"):
        study.model_row("fsdp-9z-r1-5120x2")
    assert 0 < study.model_byte_s("AllGather", 50_000_000) < study.model_byte_s("AllGather", 200_000_000)
    assert study.nccl_bytes({"name": "ncclDevKernel_AllGather", "args": {"Out msg nelems": 1000, "dtype": "BFloat16"}}) == 2000


def test_a_missing_folder_or_corrupt_trace_is_one_line(tmp_path, capsys):
    study = load_script("studies/fsdp_noise_trace.py")
    assert study.main([str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err.strip().startswith(f"error: {tmp_path / 'none'}: no NAME-rank0")
    (tmp_path / "x-rank0.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X"'))
    _rank(tmp_path / "x-rank1.json.gz", 85, 40)
    assert study.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "x-rank0.json.gz" in err[0], err
