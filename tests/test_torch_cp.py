"""Context parallelism as eager PyTorch runs it (simcluster/llm/torch_cp.py; issue 44, session 36): the layout is accepted
by framework torch with DDP over its ranks, each rank's ring SDPA calls do 1 / cp of the causal work, the CP collectives
move the bytes torch's ring moves, the exposed waits follow the source's issue order, memory falls with cp, the runner's
--mode cp is wired, and the registered cp set's (preset, tokens) are new to calibration/."""

from __future__ import annotations

import pathlib

import pytest
import yaml
from conftest import LATER_REPEATS, measured_llm_tokens, registered_tokens

from simcluster.heldout import eager as heldout
from simcluster.heldout import eager_regimes
from simcluster.llm import comm, compiled, eager, torch_cp
from simcluster.llm.ops import attention
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL = TransformerSpec(16, 2048, 8192, 32, 8, 128256, 32768, tied_embeddings=True)   # the 1b preset at 32K
BATCH = BatchSpec(1, 1)


def test_framework_torch_accepts_cp_with_ddp_over_its_ranks():
    par = ParallelSpec(cp=2)
    assert eager.mode_of(par) == "cp" and eager.host_mode(par) == "ddp"
    fw = eager.torch_framework(par)
    assert fw.torch_cp and fw.attention_kernel == "fa2" and fw.ddp_bucket_bytes == 4.0 and fw.name == "torch-cp2+ddp"
    for bad in (ParallelSpec(cp=2, tp=2), ParallelSpec(cp=2, dp=2, zero=3), ParallelSpec(cp=2, recompute="full")):
        with pytest.raises(LlmConfigError, match="parallel.cp"):
            eager.mode_of(bad)
    with pytest.raises(LlmConfigError, match=r"parallel.cp: .*no tp, pp, zero \(ZeRO / FSDP\) or recompute"):
        eager.mode_of(ParallelSpec(cp=2, zero=1))   # zero 1 is ZeRO, not FSDP: the message names the key's values


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_every_rank_computes_one_cp_th_of_the_causal_scores(cp):
    par = ParallelSpec(cp=cp)
    whole = attention("a", 1, MODEL.heads, MODEL.kv_heads, MODEL.seq, MODEL.seq, MODEL.head_dim, True, False).flops
    for rank in range(cp):
        calls = torch_cp.sdpa_calls(MODEL, par, BATCH, rank)
        assert len(calls) == cp and calls[0][0].shape[6] is True and not any(c.shape[6] for c, _ in calls[1:])
        assert sum(c.flops for c, _ in calls) == pytest.approx(whole / cp)
        assert sum(p for _, p in calls) == cp - 1 - rank    # steps i > rank take the second half of q


def test_the_layer_runs_torchs_calls_in_place_of_megatrons_blocks():
    par, fw = ParallelSpec(cp=2), eager.torch_framework(ParallelSpec(cp=2))
    for rank in range(2):
        fwd, bwd = compiled.layer_ops(MODEL, par, BATCH, fw, cp_rank=rank)
        names = [o.name for o in fwd if o.kind == "attention"]
        assert names == [torch_cp.LOCAL, torch_cp.RING + "1"]
        assert [o.name for o in bwd if o.kind == "attention"] == [n + ".bwd" for n in names]
        assert any(o.name == "cp.merge_out" for o in fwd) and any(o.name == "cp.dkv_cat" for o in bwd)
    assert sum(o.kind == "attention" for o in compiled.layer_ops(MODEL, par, BATCH, eager.TORCH_AMP)[0]) == 1   # megatron's


def test_cp_collectives_move_torchs_bytes(monkeypatch):
    seen = []
    monkeypatch.setattr(comm, "collective_s", lambda net, group, op, nbytes: seen.append((op, nbytes)) or 1.0)
    for cp in (2, 4):
        seen.clear()
        torch_cp.comm_s(MODEL, ParallelSpec(cp=cp), BATCH, None, None)
        kv = MODEL.seq * 2 * MODEL.kv_heads * MODEL.head_dim * 2          # every rank's K and V, bf16: Megatron's kv
        assert seen == [("all_gather", kv), ("sendrecv", MODEL.seq // cp * 2 * MODEL.kv_heads * MODEL.head_dim * 4)]


class _Gpu:   # every op 1 ms
    pass


def test_exposed_waits_follow_the_issue_order(monkeypatch):
    monkeypatch.setattr(torch_cp.ops, "op_time_s", lambda gpu, op, dtype: 1e-3)
    fwd = torch_cp._forward_seq(MODEL, ParallelSpec(cp=2), BATCH, 0)
    between = fwd[fwd.index(torch_cp.ISSUE_AG) + 1:fwd.index(torch_cp.WAIT_AG)]
    assert len(between) == 2                                   # the local causal call and its output's fp32 cast
    assert torch_cp._exposed(_Gpu(), "bf16", fwd, 5e-3, 0.0) == pytest.approx(3e-3)
    assert torch_cp._exposed(_Gpu(), "bf16", fwd, 1e-3, 0.0) == 0.0
    bwd = torch_cp._backward_seq(MODEL, ParallelSpec(cp=2), BATCH, 1)
    assert bwd.count(torch_cp.ISSUE_PASS) == bwd.count(torch_cp.WAIT_PASS) == 2
    # no all_gather cost: the first pass waits behind the ring step's call; the last is waited 1 op after its issue
    assert torch_cp._exposed(_Gpu(), "bf16", bwd, 0.0, 10e-3) > 10e-3


def test_memory_falls_with_cp_and_the_slowest_rank_sets_the_layer():
    from simcluster.cards import load_collective
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.layer_work import _torch_cp_layer
    from simcluster.llm.memory import memory_per_gpu

    gpu, _ = load_gpu(ROOT / heldout.H200)
    one = memory_per_gpu(MODEL, ParallelSpec(), BATCH, gpu.hbm_capacity_bytes, eager.torch_framework(ParallelSpec()))
    two = memory_per_gpu(MODEL, ParallelSpec(cp=2), BATCH, gpu.hbm_capacity_bytes, eager.torch_framework(ParallelSpec(cp=2)))
    assert two.activations == pytest.approx(one.activations / 2) and two.allocated < one.allocated
    assert torch_cp.transient_bytes(MODEL, ParallelSpec(cp=2), BATCH) < two.logits      # the logits' peak stays the peak
    card, _ = load_collective(ROOT / heldout.CARDS[("nvlink", 2)])
    net, par = comm.Network(card, 2), ParallelSpec(cp=2)
    fw = eager.torch_framework(par)
    f, b, e_f, e_b = _torch_cp_layer(MODEL, par, BATCH, gpu, net, comm.groups(par, net), fw)
    for rank in range(2):
        rf, rb = compiled.layer_ops(MODEL, par, BATCH, fw, cp_rank=rank)
        ef, eb = torch_cp.exposed_s(gpu, "bf16", MODEL, par, BATCH, net, comm.groups(par, net).cp, rank)
        from simcluster.llm.ops import ops_time_s
        assert ops_time_s(gpu, f + b, "bf16") + e_f + e_b >= ops_time_s(gpu, rf + rb, "bf16") + ef + eb


def test_the_runner_has_the_cp_mode():
    from simcluster.runner import llm_cp, llm_mesh, llm_step

    assert "cp" in llm_step.MODES and llm_mesh.layout("cp", 2, 2) == {"cp": 2}
    llm_cp.check_shapes([(32768, 1)], 2)
    with pytest.raises(SystemExit, match="one --shapes entry per process, not 2"):
        llm_cp.check_shapes([(32768, 1), (512, 2)], 2)
    with pytest.raises(SystemExit, match="--mode cp: seq 510"):
        llm_cp.check_shapes([(510, 1)], 2)


def test_the_cp_sets_tokens_are_new_and_its_runs_are_two_gpu_cp():
    bundle = ROOT / heldout.CP_BUNDLE
    runs = yaml.safe_load((bundle / "registered.yaml").read_text())["runs"]
    assert registered_tokens(runs) & measured_llm_tokens(bundle, *LATER_REPEATS) == set()
    assert {(r["preset"], r["seq"], r["micro_batch"], r["mode"], r["gpus"]) for r in runs} == {
        (p, seq, mb, "cp", 2) for p, mb, _, seq in heldout.SIZES7}
    assert all(r["predicted"]["h200"]["framework"] == "torch-cp2+ddp" for r in runs)


def test_a_cp_run_reads_back_against_its_registration(tmp_path, capsys):
    """What the lead will read: a document as --mode cp writes it (rank 0's, every rank under 'ranks' with stage 0) is a
    held-out row at its registered step, and the comparison takes both ranks' peaks against the one prediction."""
    import json

    from conftest import load_script

    full = yaml.safe_load((ROOT / heldout.CP_BUNDLE / "registered.yaml").read_text())
    reg = full["runs"][0]   # a registration of this one run: a mode with registered runs left unread gets no verdict
    (tmp_path / "registered.yaml").write_text(yaml.safe_dump(full | {"runs": [reg]}, sort_keys=False))
    ranks = [{"rank": r, "stage": 0, "status": "ok", "median_step_s": 0.8, "max_memory_allocated_bytes": 70 * 2**30} for r in (0, 1)]
    doc = {"tool": "llm-step", "mode": "cp", "world_size": 2, "device": {"name": "NVIDIA H200"}, "precision": "fp32 weights, bf16 autocast",
           "model": {"preset": reg["preset"]}, "shapes": [{"seq": reg["seq"], "micro_batch": reg["micro_batch"], "status": "ok",
                                                          "median_step_s": 0.8, "max_memory_allocated_bytes": 70 * 2**30, "ranks": ranks}]}
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "cp-x.json").write_text(json.dumps(doc))
    rows = eager_regimes.registered_rows(tmp_path)
    from simcluster.trust.build import eager_residuals

    assert eager_residuals(rows)[0].regime == "llm | PyTorch eager | CP | bf16"   # its own regime, not DDP's (cold read D)
    one_rank = doc | {"world_size": 1}   # a cp mesh of one (probe-1gpu) at a registered shape: not a 2-GPU row
    (tmp_path / "runs" / "cp-y.json").write_text(json.dumps(one_rank))
    assert len(eager_regimes.registered_rows(tmp_path)) == 1
    (tmp_path / "runs" / "cp-y.json").unlink()
    assert len(rows) == 1 and rows[0]["gpus"] == 2 and rows[0]["predicted_s"] == pytest.approx(reg["predicted"]["h200"]["step_ms"] / 1e3)
    assert load_script("validation/llm_eager_regimes.py").compare(tmp_path) == 0
    out = capsys.readouterr().out
    assert "cp: step mean |error|" in out and "2 GPUs" in out


def test_the_cp_bundle_is_read_as_held_out_once_its_runs_are_in():
    """REGISTERED leaves CP_BUNDLE out until its runs exist; once runs/ is unpacked the held-out rows must read it (else
    the runs would sit beside the table unjudged)."""
    if (ROOT / heldout.CP_BUNDLE / "runs").is_dir():
        assert heldout.CP_BUNDLE in heldout.REGISTERED, "calibration/h200x2-llm-eager-cp-2026-11-29/runs/ exists: add CP_BUNDLE to REGISTERED"
    else:
        assert heldout.CP_BUNDLE not in heldout.REGISTERED   # registered.yaml only: nothing to read yet


def test_llm_md_states_the_bytes_the_code_moves(monkeypatch):
    """docs/models/llm.md's per-layer copy / merge bytes at c = 2 are the sums of _forward_seq / _backward_seq's kernels."""
    from simcluster.llm.ops import Op

    def coefficients(fn, rank):
        out = []
        for unit in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)):   # E, K, L one at a time
            monkeypatch.setattr(torch_cp, "_sizes", lambda *a, u=unit: (2, MODEL.seq // 2, *u))
            out.append(sum(o.bytes * o.count for o in fn(MODEL, ParallelSpec(cp=2), BATCH, rank)
                           if isinstance(o, Op) and o.kind != "attention"))
        return out

    def text(coef):   # K first, as the page writes it
        e, k, lse = coef
        return " + ".join(f"{c:g}{u}" for c, u in ((k, "K"), (e, "E"), (lse, "L")) if c)

    doc = " ".join((ROOT / "docs" / "models" / "llm.md").read_text().split())
    fwd = [text(coefficients(torch_cp._forward_seq, r)) for r in (0, 1)]
    bwd = [text(coefficients(torch_cp._backward_seq, r)) for r in (0, 1)]
    assert fwd == ["16K + 43E + 34L", "16K + 50E + 52L"] and bwd == ["116K + 37E + 4L", "122K + 30E"]
    assert f"forward {fwd[0]} (rank 0) / {fwd[1]} (rank 1), backward {bwd[0]} / {bwd[1]} at c = 2" in doc


def test_the_read_out_of_a_set_not_run_says_so(tmp_path, capsys):
    """A registered set with no runs/ (the cp set until a 2-GPU lease) gets one line saying it has not run, exit 1."""
    import shutil

    from conftest import load_script

    shutil.copy(ROOT / heldout.CP_BUNDLE / "registered.yaml", tmp_path / "registered.yaml")
    assert load_script("validation/llm_eager_regimes.py").compare(tmp_path) == 1
    out = capsys.readouterr().out.strip()
    assert out.endswith("not run (no runs/): no verdict") and "\n" not in out


_SCENARIO = """name: cp-framework
machine:
  card: {root}/models/collective/h200x2-primitives.yaml
  gpus_per_node: 2
  nodes: 1
  gpu: {{card: {root}/models/gpu/h200-sxm-interleaved.yaml}}
jobs:
  - kind: llm_training
    model: {{layers: 16, hidden: 2048, ffn: 8192, heads: 32, kv_heads: 8, vocab: 128256, seq: 32768, tied_embeddings: true}}
    parallel: {{cp: 2}}
    global_batch: 1
    micro_batch: 1
    framework: {framework}
"""


@pytest.mark.parametrize("name", ["torchtitan-fsdp2", "composer-fsdp", "fms-fsdp"])
def test_published_eager_trainers_refuse_cp_rather_than_price_megatrons_ring(tmp_path, name):
    """cold read D (2): these frameworks with cp > 1 were priced by Megatron's ring model (1b 32K torchtitan-fsdp2 0.575 s
    against framework torch's 0.825 s), with no caveat: refused at parallel.cp, pointing at framework torch."""
    from simcluster import scenario
    from simcluster.errors import SimclusterError
    from simcluster.llm.framework import FRAMEWORKS
    from simcluster.llm.spec_check import check_framework

    with pytest.raises(LlmConfigError, match="parallel.cp: framework .*context parallelism is not modelled"):
        check_framework(ParallelSpec(cp=2), FRAMEWORKS[name])
    check_framework(ParallelSpec(dp=2), FRAMEWORKS[name])   # cp 1 stays accepted
    check_framework(ParallelSpec(cp=2), FRAMEWORKS["megatron"])
    path = tmp_path / "s.yaml"
    path.write_text(_SCENARIO.format(root=ROOT, framework=name))
    with pytest.raises(SimclusterError) as err:
        scenario.load(path)
    text = str(err.value)
    assert "jobs[0].parallel.cp" in text and "\n" not in text and "framework: torch prices torch's context_parallel" in text
    path.write_text(_SCENARIO.format(root=ROOT, framework="torch"))
    assert scenario.load(path).jobs[0].framework_spec().torch_cp


def test_mla_under_torch_cp_is_refused_at_parallel_cp(tmp_path):
    """cold read D (11): torch_cp sizes K and V with model.head_dim (MLA's v_head_dim ignored): refused, not mispriced."""
    from simcluster import scenario
    from simcluster.errors import SimclusterError
    from simcluster.llm.spec_check import check_model_framework

    mla = TransformerSpec(16, 2048, 8192, 16, 16, 128256, 32768, tied_embeddings=True, attn_head_dim=128,
                          q_lora_rank=1536, kv_lora_rank=512, qk_rope_dim=64, v_head_dim=128)
    with pytest.raises(LlmConfigError, match="parallel.cp: framework torch: context parallelism with multi-head latent"):
        check_model_framework(mla, eager.torch_framework(ParallelSpec(cp=2)))
    check_model_framework(mla, eager.torch_framework(ParallelSpec(dp=2)))   # MLA without CP, and CP without MLA, pass
    check_model_framework(MODEL, eager.torch_framework(ParallelSpec(cp=2)))
    path = tmp_path / "s.yaml"
    text = _SCENARIO.format(root=ROOT, framework="torch").replace(
        "seq: 32768,", "seq: 32768, attn_head_dim: 128, q_lora_rank: 1536, kv_lora_rank: 512, qk_rope_dim: 64, v_head_dim: 128,")
    path.write_text(text.replace("heads: 32, kv_heads: 8", "heads: 16, kv_heads: 16"))
    with pytest.raises(SimclusterError, match=r"jobs\[0\]\.parallel\.cp: .*multi-head latent attention is not modelled"):
        scenario.load(path)
