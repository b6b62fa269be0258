"""The local spec's plain torch kernel chains (llm/torch_kernels.py): the unfused softmax and the experts' SwiGLU, priced
kernel by kernel, and the kernel-kind read of the profiled steps (studies/megatron_moe/kernel_kinds.py)."""

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, load_script

from simcluster.hardware.gpu import load_gpu
from simcluster.llm import ops, torch_kernels
from simcluster.llm.framework import MEGATRON_LOCAL, MEGATRON_UNFUSED, UNFUSED_LOSS
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

H200 = ROOT / "models/gpu/h200-sxm-interleaved.yaml"
MOE3 = ROOT / "calibration/h200x2-megatron-moe3-2026-11-28"
SCORES = 16 * 4096 * 4096     # one layer's scores, 16 heads at seq 4096


def _model(heads=16, experts=8, top_k=1, ffn=8192):
    return TransformerSpec(layers=4, hidden=2048, ffn=ffn, heads=heads, kv_heads=8, vocab=32768, seq=4096, experts=experts,
                           top_k=top_k, expert_ffn=ffn, attn_head_dim=128, qk_norm=True)


def test_softmax_chain_bytes_are_megatron_cores_kernels():
    # forward the 29 B a score the framework has always charged; backward 53: 33 and the two kernels torch adds,
    # grad x output (12) and masked_fill's clone (8)
    assert torch_kernels.chain_bytes("softmax") == sum(MEGATRON_LOCAL.softmax_bytes[:1]) == 29
    assert torch_kernels.chain_bytes("softmax.bwd") == MEGATRON_LOCAL.softmax_bytes[1] + 12 + 8 == 53
    assert [k for k, _, _ in torch_kernels.SOFTMAX_FWD] == ["to_fp32", "masked_fill", "softmax", "to_bf16"]


def test_unvectorized_kernels_run_at_the_upcast_cards_element_rate_not_hbm():
    gpu, _ = load_gpu(H200)
    n = SCORES
    hbm = torch_kernels.kernel_s(gpu, 6 * n, n, "hbm")
    unvec = torch_kernels.kernel_s(gpu, 6 * n, n, "unvectorized")
    assert unvec == pytest.approx(gpu.upcast_time_s(6 * n), rel=1e-9)   # the card's bf16 -> fp32 copy
    assert unvec > 1.8 * hbm
    # a kernel whose bytes outrun its element rate stays at the copy rate
    assert torch_kernels.kernel_s(gpu, 400 * n, n, "unvectorized") == pytest.approx(gpu.memory_time_s(400 * n))
    with pytest.raises(ValueError, match="unknown torch kernel chain"):
        torch_kernels.time_s(gpu, "gelu", n)


def test_local_spec_layer_carries_the_chains_and_their_backward():
    model, par, batch = _model(), ParallelSpec(dp=2, ep=2), BatchSpec(2, 1, "bf16")
    fwd = ops.layer_forward(model, par, batch, MEGATRON_LOCAL)
    bwd = ops.layer_backward(model, par, batch, MEGATRON_LOCAL)
    by = {o.name: o for o in fwd + bwd}
    assert by["core.softmax"].kind == by["core.softmax.bwd"].kind == "torch"
    assert by["core.softmax"].shape == ("softmax", float(SCORES)) and by["core.softmax.bwd"].shape == ("softmax.bwd", float(SCORES))
    routed = 4096 * 1 * 2 // 8 * 4     # tokens x top-k x ep / experts, x 4 local experts
    assert by["swiglu"].shape == ("glu", float(routed * 8192)) and by["swiglu.bwd"].kind == "torch"
    # the other unfused framework (Megatron-LM before flash attention) keeps its fused softmax, dropout and SwiGLU
    plain = {o.name: o for o in ops.layer_forward(model, par, batch, MEGATRON_UNFUSED)}
    assert plain["core.softmax"].kind == plain["swiglu"].kind == "memory" and "core.dropout" in plain
    assert (MEGATRON_LOCAL.loss_fwd_bytes, MEGATRON_LOCAL.loss_bwd_bytes) == (UNFUSED_LOSS["loss_fwd_bytes"], UNFUSED_LOSS["loss_bwd_bytes"])
    # selective recompute of the core re-runs the chain
    again = ops.layer_backward(model, replace(par, recompute="selective", recompute_modules=("core_attn",)), batch, MEGATRON_LOCAL)
    assert any(o.name == "recompute.core.softmax" and o.kind == "torch" for o in again)


def test_softmax_chain_prices_moe3s_measured_kernels():
    """moe3 (not used to set any rate: the masked_fill and softmax rates are the development set's) measured the chain at
    16 heads, seq 4096, 4 layers: rank 0's kernels between the scores GEMM and the context GEMM, forward and backward.
    Development data for this model (it prompted the mend: issue 44, session 40), a check that the kernels add up."""
    kinds = load_script("studies/megatron_moe/kernel_kinds.py")
    measured = kinds.measured_kinds(MOE3 / "trace-h200-x2-switch-e8-top1-ffn8192-ep2-armB-rank0.json.gz")["softmax_chain"]
    gpu, _ = load_gpu(H200)
    model = 4 * (torch_kernels.time_s(gpu, "softmax", SCORES) + torch_kernels.time_s(gpu, "softmax.bwd", SCORES))
    assert measured == pytest.approx(0.02805, rel=0.01)
    assert model == pytest.approx(measured, rel=0.05)
    before = 4 * gpu.memory_time_s((29 + 33) * SCORES)   # the fused-rate bytes priced until session 40: 43% fast
    assert before < 0.6 * measured


def _trace(path: Path) -> None:
    """A synthetic profiled step: a forward core (scores GEMM, two chain kernels, context GEMM), a permutation window with
    one expert GEMM and one SwiGLU kernel, and an NCCL kernel."""
    ev = []

    def op(name, start, dur, tid=1):
        ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": start, "dur": dur})

    def kernel(name, launch, dur, corr, tid=1):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid, "ts": launch, "dur": 1,
                   "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": launch + 5, "dur": dur, "args": {"correlation": corr}})

    op("aten::baddbmm", 0, 10), kernel("nvjet_scores", 1, 100, 1)
    op("aten::to", 20, 10), kernel("unrolled_elementwise_kernel", 21, 300, 2)
    op("aten::softmax", 40, 10), kernel("cunn_SoftMaxForwardReg", 41, 400, 3)
    op("aten::bmm", 60, 10), kernel("nvjet_context", 61, 90, 4)
    op("aten::index_select", 100, 5), kernel("index_select_kernel", 101, 7, 5)
    op("LinearWithGradAccumulationAndAsyncCommunication", 110, 10), op("aten::mm", 111, 5), kernel("nvjet_fc1", 112, 50, 6)
    op("aten::silu", 130, 5), kernel("silu_kernel", 131, 20, 7)
    op("aten::scatter_add_", 150, 5), kernel("scatter_add_kernel", 151, 8, 8)
    op("LinearWithGradAccumulationAndAsyncCommunication", 170, 10), op("aten::mm", 171, 5), kernel("nvjet_qkv", 172, 60, 9)
    kernel("ncclDevKernel_SendRecv", 190, 30, 10)
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": ev}, f)


def test_kernel_kinds_groups_a_synthetic_step(tmp_path):
    kinds = load_script("studies/megatron_moe/kernel_kinds.py")
    path = tmp_path / "trace-h200-x2-toy-rank0.json.gz"
    _trace(path)
    got = {k: round(v * 1e6) for k, v in kinds.measured_kinds(path).items() if v}
    assert got == {"core_gemm": 190, "softmax_chain": 700, "expert_gemm": 50, "expert_other": 35, "dense_gemm": 60, "nccl": 30}


def test_local_spec_prices_rotary_qk_norm_and_gqa_as_torch_kernels():
    """The rest of the local spec's layer (session 40, moekern2): rotary and QK-norm per tensor, the core's context copy and
    GQA's key / value expansion, each kernel at its class's rate; the fused Megatron keeps its one-pass memory ops."""
    model, par, batch = _model(heads=32), ParallelSpec(dp=2, ep=2), BatchSpec(2, 1, "bf16")
    fwd = ops.layer_forward(model, par, batch, MEGATRON_LOCAL)
    bwd = ops.layer_backward(model, par, batch, MEGATRON_LOCAL)
    q, k = 4096 * 32 * 128, 4096 * 8 * 128
    assert [o.shape for o in fwd if o.name == "qk_norm"] == [("qk_norm", float(q), 128.0), ("qk_norm", float(k), 128.0)]
    assert [o.shape for o in bwd if o.name == "qk_norm.bwd"] == [("qk_norm.bwd", float(q), 128.0), ("qk_norm.bwd", float(k), 128.0)]
    by = {o.name: o for o in fwd + bwd}
    assert by["rotary"].shape == ("rotary", float(q + k)) and by["rotary.bwd"].kind == "torch"
    assert by["gqa_expand"].shape == ("gqa_expand", 2.0 * q) and by["attn_layout"].shape == ("attn_layout", float(q))
    no_gqa = {o.name for o in ops.layer_forward(_model(heads=8), par, batch, MEGATRON_LOCAL)}
    assert "gqa_expand" not in no_gqa and "attn_layout" in no_gqa
    plain = {o.name: o for o in ops.layer_forward(model, par, batch, MEGATRON_UNFUSED)}
    assert plain["rotary"].kind == plain["qk_norm"].kind == "memory" and "gqa_expand" not in plain


def test_gamma_beta_switches_template_past_64k_rows_and_norms_run_below_the_copy_rate():
    gpu, _ = load_gpu(H200)
    rows = torch_kernels.GAMMA_BETA_FAST_ROWS
    slow = torch_kernels.kernel_s(gpu, 4 * rows * 128, rows * 128, "gamma_beta", 128)
    fast = torch_kernels.kernel_s(gpu, 4 * 2 * rows * 128, 2 * rows * 128, "gamma_beta", 128)
    assert fast < slow / 5              # twice the rows, the other template: the development traces' 190 us vs 25 us
    assert slow == pytest.approx(rows / 380e6, rel=0.01)
    n = 16 * 4096 * 128
    assert torch_kernels.time_s(gpu, "qk_norm", n, 128) > 3 * gpu.memory_time_s(4 * n)   # rows of 128: one block per row
    assert torch_kernels.chain_bytes("rotary") == 6 + 2 + 4 + 6 + 6 + 4


def test_elementwise_kind_prices_moe5s_traces_within_20_percent():
    """moe5's rank-0 traces (development data now; no rate of the chains was read from them: they come from the
    development set of 2026-11-27): the elementwise kind, within 20% (it was 57-70% fast before these chains)."""
    kinds = load_script("studies/megatron_moe/kernel_kinds.py")
    from simcluster.heldout.moe_lab import run_document

    folder = ROOT / "calibration/h200x2-megatron-moe5-2026-11-30"
    for name in ("e8-top2-ffn4096-h32-ep2", "e8-top2-ffn2816-h24-ep2"):
        measured = kinds.measured_kinds(folder / f"trace-h200-x2-{name}-armB-rank0.json.gz")["elementwise"]
        doc = run_document(folder / f"megatron-moe-h200-x2-{name}-armB.json")[0]
        assert kinds.model_kinds(doc)["elementwise"] == pytest.approx(measured, rel=0.2)


def test_kernel_kinds_names_a_missing_or_corrupt_trace_in_one_line(tmp_path, capsys):
    """Review A 9: no traceback; the one line names the file (each of the three commands)."""
    kinds = load_script("studies/megatron_moe/kernel_kinds.py")
    missing, cut, foreign = tmp_path / "trace-a-rank0.json.gz", tmp_path / "trace-b-rank0.json.gz", tmp_path / "trace-c-rank0.json"
    _trace(cut)
    cut.write_bytes(gzip.compress(gzip.decompress(cut.read_bytes())[:-40]))
    foreign.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 2}]}))   # no thread id
    for argv, path in (([str(missing)], missing), (["--gaps", str(cut)], cut), (["--chain", str(foreign)], foreign)):
        assert kinds.main(argv) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {path}: "), err


def test_kernel_kinds_gaps_puts_each_idle_on_the_kernel_after_it(tmp_path):
    """Three kernels: 20 us, then 30 us idle before a forward norm, 40 us of it, 50 us idle before a backward multiply."""
    kinds = load_script("studies/megatron_moe/kernel_kinds.py")
    ev = []
    for corr, (op, launch, start, dur) in enumerate((("aten::add", 0, 1, 20), ("aten::rms_norm", 40, 51, 40),
                                                     (kinds.EF + "MulBackward0", 120, 141, 10)), 1):
        ev += [{"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": launch, "dur": 2},
               {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": launch + 1, "dur": 1,
                "args": {"correlation": corr}},
               {"ph": "X", "cat": "kernel", "name": f"k{corr}", "pid": 0, "tid": 7, "ts": start, "dur": dur, "args": {"correlation": corr}}]
    path = tmp_path / "trace-h200-x2-toy-rank0.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": ev}, f)
    got = {k: round(v * 1e6) for k, v in kinds.gaps(path).items()}
    assert got == {"fwd elementwise": 30, "bwd elementwise": 50}


def test_trace_read_names_a_missing_or_cut_trace_in_one_line(tmp_path, capsys):
    """Session 40 final read: trace_read reads through torch_profiler.complete_events (the project's trace reader, which
    names a missing file itself) instead of its own gzip / json open, so a bad trace is one line, exit 1."""
    read = load_script("studies/megatron_moe/trace_read.py")
    missing, cut = tmp_path / "none.json.gz", tmp_path / "cut.json.gz"
    _trace(cut)
    cut.write_bytes(gzip.compress(gzip.decompress(cut.read_bytes())[:-40]))
    for path, why in ((missing, "no such trace file"), (cut, "not a complete Chrome trace JSON")):
        assert read.main([str(path)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {path}: ") and why in err[0], err


def test_model_kinds_prices_on_the_run_documents_device_and_the_lab_step_spec():
    """model_kinds reads the run's card from its `device` (moe_lab.device_gpu; was H200 whatever the run) and the
    configuration through moe_lab.lab_spec, the one the registered step uses (cold read C 41, item 6)."""
    from simcluster.errors import SimclusterError
    from simcluster.heldout.moe_lab import lab_spec, run_document, step_s

    kinds = load_script("studies/megatron_moe/kernel_kinds.py")
    doc = run_document(ROOT / "calibration/h200x2-megatron-moe5-2026-11-30/megatron-moe-h200-x2-e8-top2-ffn4096-h32-ep2-armB.json")[0]
    h200 = kinds.model_kinds(doc)
    h100 = kinds.model_kinds({**doc, "device": "NVIDIA H100 80GB HBM3"})
    assert h100["expert_gemm"] != pytest.approx(h200["expert_gemm"], rel=1e-3)
    with pytest.raises(SimclusterError, match="no GPU card"):
        kinds.model_kinds({**doc, "device": "NVIDIA B300"})
    m = {**doc["model"], "ep": doc["parallel"]["ep"]}
    spec, par, batch = lab_spec(m, doc["world_size"])
    assert (spec.experts, par.ep, par.dp, batch.micro_batch) == (m["experts"], m["ep"], doc["world_size"], m["micro_batch"])
    assert h200["nccl"] == pytest.approx(step_s(m, doc["world_size"], "H200")[1].get("ep", 0.0))
