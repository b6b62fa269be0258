"""Selective activation checkpointing in eager PyTorch (issue 44): the model's price of each mode (llm/eager_ac.py and
where ops / memory / work / eager use it) and the runner's --ac-mode path (runner/llm_ac.py; CI has no GPU, no torch)."""

from __future__ import annotations

import argparse
import json
import pathlib
import textwrap
from dataclasses import replace
from types import SimpleNamespace

import pytest

from simcluster.errors import ScenarioError
from simcluster.hardware.gpu import load_gpu
from simcluster.heldout.eager_runs import regime_mode_of
from simcluster.llm import caveats, eager, eager_ac, ops, work
from simcluster.llm.comm import Network
from simcluster.llm.framework import TORCH_AMP
from simcluster.llm.memory import layer_activation_bytes, memory_per_gpu
from simcluster.llm.predict import predict_llm
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec
from simcluster.llm.spec_check import check_framework
from simcluster.runner import llm_ac
from simcluster.scenario import load
from simcluster.trust.regime import llm_regime_of

ROOT = pathlib.Path(__file__).resolve().parent.parent
CARD = ROOT / "models/gpu/h200-sxm-interleaved.yaml"
HOST = ROOT / "calibration/h200x1-llm-ckpt-host-2026-11-28/host"
MODEL = TransformerSpec(16, 2048, 8192, 32, 8, 128256, 2048, tied_embeddings=True)   # llm-step's 1b preset
BATCH = BatchSpec(4, 4)
FULL, OP = ParallelSpec(recompute="full"), ParallelSpec(recompute="op")


def every(n: int) -> ParallelSpec:
    return ParallelSpec(recompute="full", recompute_every=n)


def recomputed(par: ParallelSpec) -> list[str]:
    return [o.name.removeprefix("recompute.") for o in ops.layer_backward(MODEL, par, BATCH, TORCH_AMP)
            if o.name.startswith("recompute.")]


def predict(par: ParallelSpec, hosts=None):
    fw = eager.torch_framework(par, hosts)
    step = predict_llm(MODEL, par, BATCH, load_gpu(CARD)[0], Network(None, 1), 1, trace=False, framework=fw).step_time_s
    return step, memory_per_gpu(MODEL, par, BATCH, 141e9, fw).total


def test_torchtitans_op_policy_keeps_every_other_mm_and_sdpa():
    assert eager_ac.saved_mms() == ("q", "v", "gate", "down")   # mm 1, 3, 5, 7 of q k v o gate up down
    names = recomputed(OP)
    for kept in ("q", "v", "gate", "down"):
        assert kept not in names
    for again in ("k", "attn_out", "up", "rmsnorm", "rotary", "swiglu", "cast", "residual_add", "attn_out_copy"):
        assert again in names
    assert not any(n.startswith(("attention", "core")) or "flash" in n for n in names)
    full = recomputed(FULL)
    assert set(names) < set(full) and len(full) - len(names) == 5   # q, v, gate, down and the attention kernel


def test_op_keeps_the_saved_outputs_bytes():
    s, b, h, a_d, kv_d, f = 2048, 4, 2048, 2048, 512, 8192
    expected = s * b * (4 * h + 2 * (a_d + kv_d + f + h) + 2 * a_d) + 4 * 32 * s * b
    assert layer_activation_bytes(MODEL, OP, BATCH, TORCH_AMP) == expected
    assert layer_activation_bytes(MODEL, FULL, BATCH, TORCH_AMP) < expected < layer_activation_bytes(MODEL, ParallelSpec(), BATCH, TORCH_AMP)


def test_every_one_is_full_and_every_n_checkpoints_blocks_n_2n():
    assert predict(every(1)) == predict(FULL)
    assert eager_ac.checkpointed_layers(every(2), 16) == 8 and eager_ac.checkpointed_layers(every(3), 16) == 5
    assert [i for i in range(7) if llm_ac.checkpointed(i, "every:3")] == [2, 5]   # blocks 3 and 6, counted from 1
    none, full, half = (layer_activation_bytes(MODEL, p, BATCH, TORCH_AMP) for p in (ParallelSpec(), FULL, every(2)))
    assert half == pytest.approx((none + full) / 2)
    (t_none, m_none), (t_full, m_full), (t_half, m_half) = predict(ParallelSpec()), predict(FULL), predict(every(2))
    assert t_none < t_half < t_full and m_full < m_half < m_none
    assert t_half - t_none == pytest.approx((t_full - t_none) / 2, rel=0.02)   # half the blocks' recompute


def test_every_n_prices_its_plain_blocks_at_the_single_host_cost():
    hosts = eager.fit_modes(HOST)
    fw = eager.torch_framework(every(2), hosts)
    assert (fw.host_kernel_s, fw.host_plain_kernel_s) == (hosts["ckpt"][0], hosts["single"][0])
    assert (fw.host_step_s, fw.host_plain_step_s) == (hosts["ckpt"][1], hosts["single"][1])
    # the per-step cost blended by the share of blocks checkpointed, floor(L / N) / L: 8 of 16, 2 of 5
    assert work._host_step_s(fw, every(2), 16) == pytest.approx((hosts["ckpt"][1] + hosts["single"][1]) / 2)
    assert work._host_step_s(fw, every(2), 5) == pytest.approx(0.4 * hosts["ckpt"][1] + 0.6 * hosts["single"][1])
    assert work._host_step_s(eager.torch_framework(FULL, hosts), FULL, 5) == hosts["ckpt"][1]
    assert eager.torch_framework(OP, hosts).host_kernel_s == hosts["ckpt"][0]
    assert eager.mode_of(every(2)) == "single+ckpt-every2" and eager.mode_of(OP) == "single+sac-op"


def test_op_sits_between_none_and_full():
    (t_none, m_none), (t_full, m_full), (t_op, m_op) = predict(ParallelSpec()), predict(FULL), predict(OP)
    assert t_none < t_op < t_full and m_full < m_op < m_none


@pytest.mark.parametrize("par, key", [(ParallelSpec(recompute="op", tp=2), "parallel.recompute"),
                                      (ParallelSpec(recompute="full", recompute_every=2, pp=2), "parallel.recompute_every")])
def test_selective_modes_outside_one_gpu_or_dp_are_refused(par, key):
    fw = eager.torch_framework(par)   # the one rule: spec_check.check_framework (predict_llm and the job's reader call it)
    with pytest.raises(LlmConfigError) as err:
        check_framework(par, fw)
    assert err.value.key == key
    with pytest.raises(LlmConfigError) as err:
        predict_llm(MODEL, par, BatchSpec(8, 4), load_gpu(CARD)[0], Network(None, 1), par.gpus, trace=False, framework=fw)
    assert err.value.key == key


@pytest.mark.parametrize("change, what", [({"mlp": "gelu", "ffn": 8192}, "gelu MLP"), ({"qk_norm": True}, "QK-norm")])
def test_op_is_refused_for_a_layer_other_than_the_swiglu_llama_block(change, what):
    model = replace(MODEL, **change)
    with pytest.raises(LlmConfigError, match=what) as err:
        predict_llm(model, OP, BATCH, load_gpu(CARD)[0], Network(None, 1), 1, trace=False, framework=eager.torch_framework(OP))
    assert err.value.key == "parallel.recompute"
    eager_ac.check_op(model, FULL)   # whole blocks are any layer's
    eager_ac.check_op(MODEL, OP)


def test_op_and_every_n_are_regimes_of_their_own_with_the_op_caveat():
    regimes = {name: llm_regime_of(MODEL, par, BATCH, "torch-amp").key
               for name, par in (("none", ParallelSpec()), ("full", FULL), ("op", OP), ("every", every(2)))}
    assert regimes["none"] == regimes["full"] == "llm | PyTorch eager | single | bf16"
    assert regimes["op"] == "llm | PyTorch eager | single+sac-op | bf16"
    assert regimes["every"] == "llm | PyTorch eager | single+ckpt-every2 | bf16"
    gpu = load_gpu(CARD)[0]
    said = caveats.caveats(MODEL, OP, eager.torch_framework(OP), gpu)
    assert any(c.startswith("recompute op:") for c in said)
    assert not any(c.startswith("recompute op:") for c in caveats.caveats(MODEL, FULL, eager.torch_framework(FULL), gpu))


OP_HOST = ROOT / "calibration/h200x1-llm-diag-2026-11-29/host"   # a host folder with op runs (ophost's registration)


def test_the_op_caveat_names_the_price_the_answer_took():
    """Per-phase text where the framework carries a backward host cost (a host folder with op runs), the uniform
    ckpt/single fallback's where it does not (eager-checkpointing.yaml's op variant: a ckpt-only host folder)."""
    gpu = load_gpu(CARD)[0]
    split = eager.torch_framework(OP, eager.fit_modes(OP_HOST))
    assert split.host_bwd_kernel_s > 0
    said = [c for c in caveats.caveats(MODEL, OP, split, gpu) if c.startswith("recompute op:")]
    # 118.5 / 49.3 us until session 35: the runner's block (llm/autocast_block.py) has 3 more kernels a layer to share the fit
    assert len(said) == 1 and "priced per phase (115.3 us per forward kernel, 47.8 us per backward one" in said[0]
    assert "five rows from this per-phase model, six from the uniform one" in said[0] and "unvalidated" not in said[0]
    # the band's counts are the shipped table's (cold review C 44, item 5), and the product folder's price is said
    bands = json.loads((ROOT / "simcluster" / "trust" / "error_bands.json").read_text())
    rows = [r for v in bands.values() if isinstance(v, list) for r in v
            if isinstance(r, dict) and r.get("regime") == "llm | PyTorch eager | single+sac-op | bf16"]
    assert f"band ({len(rows)} rows, {len({r['source'] for r in rows})} sources)" in said[0]
    assert "held out on two fresh 2 x H200 leases" in said[0]   # opcheck (session 44) and opsplit (session 45), read once
    uniform = eager.torch_framework(OP, eager.fit_modes(HOST))
    assert uniform.host_bwd_kernel_s == 0
    said = [c for c in caveats.caveats(MODEL, OP, uniform, gpu) if c.startswith("recompute op:")]
    assert said == [caveats.SAC_OP_HOST_UNIFORM] and "missed fast by 14-24%" in said[0]


def test_the_scenarios_op_variant_is_caveated_with_the_uniform_fallback():
    import contextlib
    import io
    import json

    from simcluster.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["run", str(ROOT / "scenarios/llm/eager-checkpointing.yaml"), "--json"]) == 0
    said = {v["variant"]: v["jobs"][0]["caveats"] for v in json.loads(buf.getvalue())["variants"]}
    assert caveats.SAC_OP_HOST_UNIFORM in said["op"] and not any("per phase (" in c for c in said["op"])
    assert not any(c.startswith("recompute op:") for c in said["full"] + said["every-2"])


def test_documents_are_read_by_their_ac_mode():
    doc = {"mode": "single", "activation_checkpointing": "op: ...", "ac_mode": "op"}
    assert eager_ac.document_mode(doc) == "op" and regime_mode_of(doc) == "single+sac-op"
    assert regime_mode_of({"mode": "single", "activation_checkpointing": "every:2: ...", "ac_mode": "every:2"}) == "single+ckpt-every2"
    assert regime_mode_of({"mode": "single", "activation_checkpointing": "full: ..."}) == "single+ckpt"   # older runs
    assert regime_mode_of({"mode": "single"}) == "single"
    assert eager_ac.parallel_of("every:3") == ParallelSpec(recompute="full", recompute_every=3)


def test_recompute_every_needs_full():
    with pytest.raises(LlmConfigError, match="recompute: full"):
        ParallelSpec(recompute="op", recompute_every=2)


def test_a_megatron_job_refuses_the_torch_only_modes(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: t
        machine:
          card: {ROOT}/models/collective/h200x2-primitives.yaml
          gpus_per_node: 2
          gpu: {{card: {CARD}}}
        jobs:
          - kind: llm_training
            model: {{layers: 16, hidden: 1536, ffn: 4096, heads: 12, kv_heads: 4, vocab: 32000, seq: 2048}}
            parallel: {{dp: 2, recompute: op}}
            global_batch: 8
            micro_batch: 4
        """))
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.parallel\.recompute.*eager PyTorch"):
        load(path)


def test_the_runner_reads_the_mode_and_records_it():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="single")
    llm_ac.add_argument(ap)
    assert llm_ac.resolve(ap.parse_args([])) == "none" and llm_ac.record("none", 4) == {}
    assert llm_ac.resolve(ap.parse_args(["--activation-checkpointing"])) == "full"
    assert llm_ac.resolve(ap.parse_args(["--ac-mode", "every:02"])) == "every:2"
    doc = llm_ac.record("every:2", 5)
    assert doc["ac_mode"] == "every:2" and doc["ac_blocks"] == [1, 3]
    assert llm_ac.record("op", 2)["ac_blocks"] == [0, 1]
    assert doc["preserve_rng_state"] is False   # torchtitan's; the registered sac set ran torch's default True
    for bad in ("every:0", "half", "every:x"):
        with pytest.raises(SystemExit):
            ap.parse_args(["--ac-mode", bad])
    with pytest.raises(SystemExit, match="--ac-mode op beside it"):
        llm_ac.resolve(ap.parse_args(["--activation-checkpointing", "--ac-mode", "op"]))
    with pytest.raises(SystemExit, match="pipeline"):
        llm_ac.resolve(ap.parse_args(["--ac-mode", "op", "--mode", "pp"]))


def test_the_op_policy_saves_odd_mms_and_sdpa_per_pass():
    enum = SimpleNamespace(MUST_SAVE="save", PREFER_RECOMPUTE="recompute")
    aten = SimpleNamespace(mm=SimpleNamespace(default="mm"), _scaled_dot_product_flash_attention=SimpleNamespace(default="flash"))
    torch = SimpleNamespace(ops=SimpleNamespace(aten=aten), utils=SimpleNamespace(checkpoint=SimpleNamespace(CheckpointPolicy=enum)))
    policy = llm_ac.op_policy(torch)
    fwd, again = SimpleNamespace(is_recompute=False), SimpleNamespace(is_recompute=True)
    assert [policy(fwd, "mm") for _ in range(7)] == ["save", "recompute"] * 3 + ["save"]
    assert [policy(again, "mm") for _ in range(3)] == ["save", "recompute", "save"]   # its own counter
    assert policy(fwd, "flash") == "save" and policy(fwd, "add") == "recompute"


def test_collect_runs_one_llm_step_per_ac_mode_and_records_it():
    from simcluster.errors import SimclusterError
    from simcluster.runner import plans, plans_gpu

    steps = plans_gpu.llm_steps(plans.Options(llm_presets=("1b",), llm_ac_modes=("none", "full", "every:2", "op")), 1)
    assert [s.run_id for s in steps] == ["1b-single", "1b-single-ckpt", "1b-single-ac-every2", "1b-single-ac-op"]
    assert [s.meta["ac_mode"] for s in steps] == ["none", "full", "every:2", "op"]
    assert "--activation-checkpointing" in steps[1].argv and steps[2].argv[-2:] == ["--ac-mode", "every:2"]
    old = plans_gpu.llm_steps(plans.Options(llm_presets=("1b",), llm_checkpointing=(False, True)), 1)
    assert [s.run_id for s in old] == ["1b-single", "1b-single-ckpt"]
    with pytest.raises(SimclusterError, match="--llm-ac-modes: expected none, full, op or every:N"):
        plans_gpu.llm_steps(plans.Options(llm_presets=("1b",), llm_ac_modes=("every:0",)), 1)


def test_the_torchtitan_framework_refuses_the_modes_with_tp_too():
    from simcluster.llm.framework import TORCHTITAN_FSDP2
    from simcluster.llm.spec_check import check_framework

    check_framework(ParallelSpec(dp=8, zero=3, recompute="op"), TORCHTITAN_FSDP2)
    with pytest.raises(LlmConfigError, match="no tp, no pp"):
        check_framework(ParallelSpec(tp=2, dp=4, zero=3, recompute="op"), TORCHTITAN_FSDP2)


def test_host_fits_leave_the_selective_runs_out(tmp_path):
    import json

    model = {"layers": 0, "hidden": 128, "ffn": 352, "heads": 4, "kv_heads": 2, "vocab": 512, "tied": False}
    for layers in (2, 8):
        for ac, per_layer in (("none", 1e-3), ("full", 2e-3), ("op", 9e-3), ("every:2", 9e-3)):
            doc = {"mode": "single", "model": {**model, "layers": layers},
                   "shapes": [{"seq": 128, "micro_batch": 1, "status": "ok", "median_step_s": 0.002 + layers * per_layer}],
                   **llm_ac.record(ac, layers)}
            run = tmp_path / "llm-step" / f"tiny-L{layers}-{ac.replace(':', '')}"
            run.mkdir(parents=True)
            (run / "stdout.txt").write_text(json.dumps(doc))
    fits = eager.fit_modes(tmp_path)
    assert set(fits) == {"single", "ckpt", "op"} and fits["single"][2] == fits["ckpt"][2] == fits["op"][2] == 2
    assert fits["single"][1] == pytest.approx(0.002) and fits["ckpt"][1] == pytest.approx(0.002)
    # op: its own runs only (every:2 left out), over the op policy's kernels per layer
    from simcluster.llm import host
    from simcluster.llm.spec import BatchSpec, TransformerSpec
    k_op = host.layer_kernels(TransformerSpec(2, 128, 352, 4, 2, 512, 128), ParallelSpec(recompute="op"), BatchSpec(1, 1),
                              eager.torch_framework(ParallelSpec(recompute="op")))
    assert fits["op"][0] == pytest.approx(9e-3 / k_op) and fits["op"][1] == pytest.approx(0.002)
    # an op layout takes the op fit where there is one, else ckpt's, else single's
    # (split by phase: op_phase_factors, forward dearer than backward)
    f_fwd, f_bwd = eager.op_phase_factors()
    op_fw = eager.torch_framework(ParallelSpec(recompute="op"), fits)
    assert op_fw.host_kernel_s == pytest.approx(fits["op"][0] * f_fwd) and op_fw.host_bwd_kernel_s == pytest.approx(fits["op"][0] * f_bwd)
    assert eager.torch_framework(ParallelSpec(recompute="op"), {"ckpt": fits["ckpt"]}).host_kernel_s == fits["ckpt"][0]
    assert eager.fitted_mode("op", {"single": fits["single"]}) == "single" and eager.fitted_mode("op", {}) == "op"


def test_recompute_every_beyond_the_layer_count_is_refused_at_its_key():
    from simcluster.llm import eager_ac

    eager_ac.check_op(MODEL, every(MODEL.layers))       # the last block checkpointed: a valid answer
    with pytest.raises(LlmConfigError) as err:
        eager_ac.check_op(MODEL, every(MODEL.layers + 1))
    assert err.value.key == "parallel.recompute_every"


@pytest.mark.parametrize("n", [1, 2, 3, 5, 16, 17])
def test_the_runners_every_n_blocks_are_as_many_as_the_model_prices(n):
    layers = 16
    ran = sum(llm_ac.checkpointed(i, f"every:{n}") for i in range(layers))
    assert ran == eager_ac.checkpointed_layers(every(n), layers)


def test_op_phase_factors_keep_the_hidden_128_total_and_refuse_a_foreign_file(tmp_path):
    """The probe's tiny L24 forward and backward issue times split op's cost per kernel; the split keeps the step's
    total over the model's kernels (n_f f_fwd + n_b f_bwd = n_f + n_b), and the forward is the dearer phase."""
    from simcluster.llm import compiled, eager, host
    from simcluster.llm.framework import TORCH_AMP
    from simcluster.llm.spec import BatchSpec, TransformerSpec
    f_fwd, f_bwd = eager.op_phase_factors()
    par = ParallelSpec(recompute="op")
    tiny = TransformerSpec(24, 128, 352, 4, 2, 512, 128)
    fwd, bwd = compiled.layer_ops(tiny, par, BatchSpec(1, 1), TORCH_AMP)
    w = host.weight_matrices(tiny, TORCH_AMP)
    n_f, n_b = sum(o.count for o in fwd) + w, sum(o.count for o in bwd) + 2 * w
    assert n_f * f_fwd + n_b * f_bwd == pytest.approx(n_f + n_b) and f_fwd > 1.5 > 1 > f_bwd
    bad = tmp_path / "x.json"
    bad.write_text('{"modes": []}')
    with pytest.raises(ValueError, match="x.json"):
        eager.op_phase_factors(bad)


def test_the_backward_issues_at_its_own_host_cost_per_kernel():
    """host_bwd_kernel_s prices the backward's kernels (work._host_bound): the step moves with it where the backward is
    host-bound, and the forward's cost given again changes nothing."""
    gpu = load_gpu(CARD)[0]

    def step(**host) -> float:
        fw = replace(eager.torch_framework(OP), **host)
        return predict_llm(MODEL, OP, BATCH, gpu, Network(None, 1), 1, trace=False, framework=fw).step_time_s

    uniform = step(host_kernel_s=100e-6)
    assert step(host_kernel_s=100e-6, host_bwd_kernel_s=100e-6) == pytest.approx(uniform)
    assert step(host_kernel_s=100e-6, host_bwd_kernel_s=1e-3) > uniform > step(host_kernel_s=100e-6, host_bwd_kernel_s=1e-6)


def test_an_op_layout_without_any_fit_on_its_chain_takes_the_default_host_cost():
    """hosts without op, ckpt or single (a ddp-only folder): no KeyError, the framework's default cost, no split."""
    fw = eager.torch_framework(OP, {"ddp": (50e-6, 1e-3, 2)})
    assert fw.host_kernel_s == TORCH_AMP.host_kernel_s and fw.host_bwd_kernel_s == 0
