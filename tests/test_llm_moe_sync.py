"""Framework megatron's host after each MoE dispatcher sync (llm/moe_sync.py; issue 44, session moepub)."""

import re
from dataclasses import replace

import numpy as np
import pytest
from conftest import ROOT, load_script
from test_moeker50 import ROW0_GPU_WORK_S

from simcluster.cards import load_collective
from simcluster.hardware.gpu import load_gpu
from simcluster.heldout.registration import before_adopt49
from simcluster.llm import moe_sync, ops
from simcluster.llm.comm import Network
from simcluster.llm.framework import MEGATRON, MOE_SYNC_KERNEL_S, FrameworkSpec
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec
from simcluster.llm.work import build_work

GPU = ROOT / "models/gpu/h100-sxm.yaml"
NET = ROOT / "models/collective/h200x4-primitives.yaml"
QWEN_LIKE = dict(layers=4, hidden=2048, ffn=6144, heads=32, kv_heads=4, vocab=32768, seq=4096, attn_head_dim=128, qk_norm=True)


def _host(model: TransformerSpec, par: ParallelSpec, fw: FrameworkSpec, precision: str = "bf16") -> tuple[float, float]:
    gpu, _ = load_gpu(GPU)
    net = Network(load_collective(NET)[0], 4)
    work = build_work(model, par, BatchSpec(4, 1, precision), gpu, net, fw=fw)
    f, b = work.stages[0].forward[0], work.stages[0].backward[0]
    return f.duration_s + b.duration_s, f.parts["host"] + b.parts["host"]


def test_the_constant_is_the_one_the_profiles_gpu_idle_gives():
    """MOE_SYNC_KERNEL_S is studies/moe_te_host.py's derivation from the skills' Nsight GPU idle (1.893 s), not a typed
    number: any change of the model under it (or of the source row) moves the derived value and fails here. Derived on
    the model before session 49's router / permutation term (heldout/registration.before_adopt49): moerouter's rule
    judged that term with this c unchanged (decided before its run: the sync stays moe_sync's); under the adopted model
    c adds 0.49 s of the 1.893 s idle to its source row, whose predicted GPU work alone then exceeds the measured step
    (docs/models/llm-findings.md, session 49 adopt49)."""
    study = load_script("studies/moe_te_host.py")
    assert study.IDLE_S == pytest.approx(24.7138 - 22.821)
    with before_adopt49():
        assert study.derive() == pytest.approx(MOE_SYNC_KERNEL_S, abs=0.1e-6)
    assert MEGATRON.moe_sync_kernel_s == MOE_SYNC_KERNEL_S > 0


@pytest.mark.slow
def test_the_plain_command_prints_the_shipped_c_and_labels_todays_as_development(capsys):
    """`python studies/moe_te_host.py` (llm.md cites it for the shipped c; review A50, finding 1): its first line is the
    shipped c derived where it was derived (before_adopt49), the c under today's model is labelled development, not
    shipped, and the committed studies/moe_te_host-sensitivity.txt is the command's output below its header (stale fails)."""
    study = load_script("studies/moe_te_host.py")
    study.main()
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("GPU idle 1.893 s of the 24.7138 s step -> c = 147.2 us per modelled kernel, derived on the")
    assert lines[0].endswith(": the shipped MOE_SYNC_KERNEL_S (147.2 us)")
    assert lines[3].startswith("under today's model (router term on): c = ") and lines[3].endswith(study.DEVELOPMENT)
    committed = (ROOT / "studies/moe_te_host-sensitivity.txt").read_text().splitlines()
    assert committed[0].startswith("# python studies/moe_te_host.py") and committed[1:] == lines


def test_gpu_work_prints_the_source_rows_modelled_gpu_work_with_and_without_the_router_term(capsys):
    """`studies/moe_te_host.py --gpu-work` (llm.md's "How far to trust it", review A49 finding 1): row 0's modelled GPU
    work (c = 0) with the adopted term, with session 49's table (before_adopt50) and before adopt49, beside the profile's
    22.821 s GPU-active: the figures pinned once in tests/test_moeker50.ROW0_GPU_WORK_S (--rederive prints the same three
    from its own loop); the term over-prices that row (26.07 s of GPU work against 22.821 s active: what the line exists
    to show); the step at the shipped c is the GPU work plus the sync term's printed share."""
    study = load_script("studies/moe_te_host.py")
    study.gpu_work()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "row 0 profiled: GPU-active 22.821 s of the 24.7138 s step"
    before, s49, now = ROW0_GPU_WORK_S.values()
    assert lines[1] == (f"row 0 modelled GPU work (c = 0): {now} s with the router term (adopt50), {s49} s with "
                        f"session 49's table, {before} s before adopt49")
    assert float(s49) > float(now) > study.GPU_ACTIVE_S > float(before)
    step = re.fullmatch(r"row 0 step at c = 147\.2 us: ([0-9.]+) s with the term \(the sync term adds ([0-9.]+) s of the "
                        r"profile's 1\.893 s idle\)", lines[2])
    assert step and float(step[1]) - float(now) == pytest.approx(float(step[2]), abs=0.011)


def test_dense_layers_and_a_zero_host_cost_have_no_term():
    dense = TransformerSpec(**QWEN_LIKE)
    moe = TransformerSpec(**QWEN_LIKE, experts=128, top_k=8, expert_ffn=768)
    off = replace(MEGATRON, moe_sync_kernel_s=0.0)
    assert _host(dense, ParallelSpec(dp=4), MEGATRON) == _host(dense, ParallelSpec(dp=4), off)
    t_off, h_off = _host(moe, ParallelSpec(dp=4, ep=4), off)
    t_on, h_on = _host(moe, ParallelSpec(dp=4, ep=4), MEGATRON)
    assert h_off == 0.0 and h_on > 0 and t_on == pytest.approx(t_off + h_on)


def test_issue_bound_segment_long_kernels_hide_the_host_short_ones_do_not():
    gpu, _ = load_gpu(GPU)
    fwd = [ops.memory("rmsnorm", 1e3), ops.gemm("router", 64, 8, 64), ops.permutation("permute", 1e3),
           ops.gemm("expert_up", 64, 64, 64, 16), ops.gemm("expert_down", 64, 64, 64, 16)]
    bwd = [ops.memory("rmsnorm.bwd", 2e3)]
    seg = moe_sync.forward_segment(gpu, fwd, "bf16", ep_f=0.0)
    # an expert GEMM group is one host call (TE's grouped linear), the dispatch and combine one each: 3 + 2 + 2 calls
    assert len(seg) == 7
    c = 100e-6
    f, b = moe_sync.sync_host_s(gpu, fwd, bwd, "bf16", 0.0, 0.0, 4, c)
    # the last call cannot start before the host issued it (7 c), and the host adds at most its own time
    assert 7 * c + seg[-1] - seg.sum() <= f <= 7 * c
    # fully host-bound (every call's host time above its kernel's): the segment ends when the last call is issued and run
    big = 1e-3
    f2, _ = moe_sync.sync_host_s(gpu, fwd, bwd, "bf16", 0.0, 0.0, 4, big)
    assert f2 == pytest.approx(7 * big + seg[-1] - seg.sum(), rel=1e-9)
    # the backward: one stream over the chunk's 4 layers, per layer about one call's host time when its kernel is short
    assert 1.5 * c < b <= 2 * c
    # long kernels (a second of dispatch and of combine): the host gets ahead after its first calls (the permutation
    # before the dispatch is shorter than a call), so it adds between one and two calls' host time (the backward: over
    # the chunk's 4 layers)
    f3, b3 = moe_sync.sync_host_s(gpu, fwd, bwd, "bf16", 2.0, 2.0, 4, c)
    assert c <= f3 <= 2 * c and c / 4 <= b3 <= 2 * c / 4
    assert moe_sync.sync_host_s(gpu, fwd, bwd, "bf16", 0.0, 0.0, 4, 0.0) == (0.0, 0.0)


def test_under_a2a_overlap_the_term_is_off_as_the_profile_shows_no_idle():
    """With moe_a2a_overlap the source's own Nsight table gives no GPU idle (rank 0's GPU-active union 21.221 s in a
    20.99-21.07 s step, the skills' row 1), so the term does not price the host there (moe_sync.applies): the overlap
    row's prediction is the one without the term. Until mendB (s35) the model put 5.9 s of host idle (27% of the step)
    into that row, contradicting the profile; the row's -4.6% then came from host idle standing in for ~5 s of GPU work
    the model lacks. Now +23.4% (16.08 s against 20.99 s): the missing GPU work shows as a miss. On the model c was
    derived on (before_adopt49: the router term off); with the router term row 0's term is 0.49 s (llm-findings, adopt49)."""
    study = load_script("studies/moe_te_host.py")
    with before_adopt49():
        r0, r1 = study.row_result(0, MOE_SYNC_KERNEL_S), study.row_result(1, MOE_SYNC_KERNEL_S)
        assert r1.breakdown["exposed_ep_comm"] < 0.2 * r0.breakdown["exposed_ep_comm"]
        assert r1.step_time_s == study.row_result(1, 0.0).step_time_s
        assert r0.step_time_s > study.row_result(0, 0.0).step_time_s + 1.0   # without the overlap the term stays (row 0's idle)
        assert r1.step_time_s < 21.221   # no more than the GPU work the profile measured: the model adds no idle there
    r1 = study.row_result(1, MOE_SYNC_KERNEL_S)   # adopted: the overlap row still gets no host term
    assert r1.step_time_s == study.row_result(1, 0.0).step_time_s
    assert not moe_sync.applies(MEGATRON, ParallelSpec(dp=16, ep=16, moe_a2a_overlap=True))
    assert moe_sync.applies(MEGATRON, ParallelSpec(dp=16, ep=16))


def test_a_negative_host_cost_is_a_one_line_error():
    with pytest.raises(LlmConfigError) as e:
        FrameworkSpec("megatron-x", moe_sync_kernel_s=-1e-6)
    assert str(e.value).startswith("framework.moe_sync_kernel_s:") and "\n" not in str(e.value)
    with pytest.raises(LlmConfigError):
        FrameworkSpec("megatron-x", moe_sync_kernel_s=float("nan"))


def test_fractional_op_counts_round_to_whole_calls():
    gpu, _ = load_gpu(GPU)
    half = replace(ops.memory("attention_window", 1e6), count=0.5)
    assert len(moe_sync.kernel_list(gpu, [half], "bf16")) == 1
    assert np.isclose(moe_sync.kernel_list(gpu, [half], "bf16").sum(), ops.op_time_s(gpu, half, "bf16"))


def test_the_term_follows_transformer_engine_not_the_framework_name():
    """Every Transformer Engine framework gets the term (megatron-te-fa2 and megatron-unfused-loss run TE's grouped
    linear and the same dispatcher); a framework without TE does not (the local spec prices its host with MoeHost)."""
    from simcluster.llm.framework import FRAMEWORKS
    par = ParallelSpec(dp=4, ep=4)
    for name in ("megatron", "megatron-te-fa2", "megatron-unfused-loss"):
        assert moe_sync.applies(FRAMEWORKS[name], par), name
    for name in ("megatron-local-spec", "megatron-unfused-attention", "megatron-2023-sync"):
        assert not moe_sync.applies(FRAMEWORKS[name], par), name
    moe = TransformerSpec(**QWEN_LIKE, experts=128, top_k=8, expert_ffn=768)
    assert _host(moe, par, FRAMEWORKS["megatron-unfused-loss"])[1] > 0
    assert _host(moe, par, replace(FRAMEWORKS["megatron"], transformer_engine=False))[1] == 0.0


def test_capacity_padding_has_no_dispatcher_sync_and_the_old_model_priced_one():
    """moedev51: with moe_pad_expert_input_to_capacity the alltoall dispatcher keeps cuda_sync_point 'no_sync'
    (token_dispatcher.py, core_v0.9.0 / core_v0.10.0 / d98e8a64), so the term does not apply; the sets registered
    before session 51 priced the sync there too (heldout/registration.moedev51_off); a published file states the padding
    (reference/llm: read only where given, so no other row's assumptions list grows)."""
    from simcluster.heldout.registration import moedev51_off
    from simcluster.reference.llm_specs import spec_of

    padded = ParallelSpec(dp=16, ep=16, moe_pad_to_capacity=True)
    assert moe_sync.applies(MEGATRON, ParallelSpec(dp=16, ep=16)) and not moe_sync.applies(MEGATRON, padded)
    with moedev51_off():
        assert moe_sync.applies(MEGATRON, padded)
    assert not moe_sync.applies(MEGATRON, padded)
    run = {"model": {"name": "m", "layers": 4, "hidden": 2048, "ffn": 6144, "heads": 32, "vocab": 32768, "seq": 4096,
                     "experts": 16, "top_k": 2, "expert_ffn": 768},
           "parallel": {"tp": 1, "pp": 1, "dp": 16, "ep": 16}, "batch": {"global_batch": 64}}
    (_, par, _), _, used = spec_of(run, {})
    assert not par.moe_pad_to_capacity and not any("pad" in u for u in used)
    (_, par, _), _, used = spec_of(run, {"moe_pad_to_capacity": True})
    assert par.moe_pad_to_capacity and "moe_pad_to_capacity=True" in used


def test_only_files_on_a_sync_free_padded_core_set_the_padding():
    """mendC51 (cold review C51 item 1): Megatron-Core's padded permute syncs through masked_select until f27a04f6
    (core_v0.11.0), so a published file sets parallel.moe_pad_to_capacity only where its stated software maps to such a
    core (moe_sync.PAD_NO_SYNC_SOFTWARE); the dgxc Grok-1 files (NeMo 24.12 = core 0.10; an unnamed nemo:dev image) pad
    but keep the sync."""
    import yaml

    setting, padded_recipe = [], []
    for f in sorted((ROOT / "calibration" / "published").glob("llm-*.yaml")):
        text = f.read_text()
        if "moe_pad_to_capacity: true" in text:
            setting.append(f.name)
            software = yaml.safe_load(text)["system"]["software"]
            assert any(software.startswith(k) for k in moe_sync.PAD_NO_SYNC_SOFTWARE), (f.name, software)
        if "moe_pad_expert_input_to_capacity true" in text:
            padded_recipe.append(f.name)
    assert setting == ["llm-megatron-bridge-25.09-dgx-h100-moe.yaml"]
    assert {"llm-dgxc-benchmarking-v24.11.1-grok1-h100.yaml", "llm-dgxc-benchmarking-v25.02-grok1-h100.yaml"} <= set(padded_recipe)
