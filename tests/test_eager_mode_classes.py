"""studies/eager_mode_classes.py's trace reading on synthetic Chrome traces (issue 44, session 37)."""

import gzip
import json

import pytest
from conftest import load_script

study = load_script("studies/eager_mode_classes.py")

GEMM, ATTN, NCCL = "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop", \
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
COPY_IN = ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
           "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >")
ADAM = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata"
FOREACH = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>"


def trace(*events):
    """A Chrome trace of (name, start us, duration us) kernels, a memcpy where the name is 'Memcpy DtoD', plus a CPU op."""
    out = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0.0, "dur": 5000.0}]
    for name, ts, dur in events:
        out.append({"ph": "X", "cat": "gpu_memcpy" if name.startswith("Memcpy") else "kernel", "name": name,
                    "ts": float(ts), "dur": float(dur), "args": {"grid": [132, 1, 1]}})
    out.append({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 0.0, "dur": 1e6})   # memsets left out
    return {"traceEvents": out}


def test_classify_names_each_class():
    assert study.classify(GEMM) == "gemm"
    assert study.classify(ATTN) == "attention"
    assert study.classify("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel") == "attention"
    assert study.classify(NCCL) == "nccl"
    assert study.classify(ADAM) == "optimizer"
    assert study.classify(FOREACH) == "copies"
    assert study.classify(COPY_IN) == "copies"
    assert study.classify("Memcpy DtoD (Device -> Device)") == "copies"
    assert study.classify("void at::native::detail::chunk_cat_cuda_kernel<float, c10::BFloat16>") == "copies"
    assert study.classify("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda") == "memory"


def test_measure_exposed_and_beside_nccl():
    # compute 0-100 and 150-200 us; NCCL 80-170 us: beside compute 80-100 and 150-170 (40 us), exposed 100-150 (50 us);
    # idle 200-210 (nothing), then a copy 210-220
    t = trace((GEMM, 0, 100), (NCCL, 80, 90), (ATTN, 150, 50), ("Memcpy DtoD (Device -> Device)", 210, 10))
    m = study.measure(t)
    assert m["span"] == pytest.approx(220e-6)
    assert m["gemm"] == pytest.approx(100e-6) and m["attention"] == pytest.approx(50e-6)
    assert m["copies"] == pytest.approx(10e-6) and m["nccl"] == pytest.approx(90e-6)
    assert m["busy"] == pytest.approx(160e-6)
    assert m["nccl_exposed"] == pytest.approx(50e-6)
    assert m["nccl_beside"] == pytest.approx(40e-6)
    assert m["idle"] == pytest.approx(10e-6)


def test_measure_without_nccl_has_nothing_exposed_and_rejects_empty():
    m = study.measure(trace((GEMM, 0, 100), (GEMM, 100, 100)))
    assert m["nccl_exposed"] == 0 and m["nccl_beside"] == 0 and m["idle"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="no GPU kernels"):
        study.measure({"traceEvents": []})


def test_matched_loss_pairs_the_nth_launch_of_each_name():
    reference = trace((GEMM, 0, 100), (GEMM, 200, 100), (ATTN, 400, 50))
    # the first GEMM beside NCCL takes 130 (+30), the second away from it 105 (+5); attention's launch counts differ
    mode = trace((GEMM, 0, 130), (NCCL, 10, 50), (GEMM, 300, 105), (ATTN, 500, 60), (ATTN, 600, 60))
    beside, loss, drift = study.matched_loss(mode, reference)
    assert beside == pytest.approx(130e-6)
    assert loss == pytest.approx(30e-6)
    assert drift == pytest.approx(5e-6)


def test_load_reads_gzipped_traces(tmp_path):
    path = tmp_path / "x-rank0.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(trace((GEMM, 0, 1)), f)
    assert study.measure(study.load(path))["gemm"] == pytest.approx(1e-6)


def test_main_refuses_a_missing_folder(tmp_path, capsys):
    assert study.main([str(tmp_path / "none")]) == 1
    assert "not a folder" in capsys.readouterr().err


def test_model_classes_sum_to_the_models_compute_for_ddp():
    """The study's model side: its classes of the DDP step add up to regime_predict's compute and other terms."""
    mod = study.model_classes("ddp", "3b", 3, 1, 2048, 0)
    gpu_side = sum(mod[c] for c in study.COMPUTE)
    host_step = mod["compute"] + mod["other"] - gpu_side   # the fixed host seconds per step and the host-bound excess
    assert host_step == pytest.approx(0.00271, abs=5e-4)   # today's model: 2.71 ms of host above the GPU classes
