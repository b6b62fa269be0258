"""fms-fsdp with torch.compile (issue 44, session 42 fsdpsrc): the compiled block (llm/compiled.py) under FSDP data
parallelism for the FSDP trainers' compiled variant only, its own regime in the PyTorch FSDP family, and the runner's
torch framework still refused at dp > 1 (its compiled rows are one GPU)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simcluster.llm.compiled import check_compiled_parallel
from simcluster.llm.framework import FMS_FSDP, FRAMEWORKS
from simcluster.llm.spec import LlmConfigError, ParallelSpec
from simcluster.trust.regime import FSDP_TRAINERS, llm_regime


def test_the_compiled_variant_is_fms_fsdp_compiled_and_nothing_else():
    fw = FRAMEWORKS["fms-fsdp-compile"]
    assert fw.compiled and not FMS_FSDP.compiled
    assert replace(fw, name="fms-fsdp", compiled=False) == FMS_FSDP
    assert "fms-fsdp-compile" in FSDP_TRAINERS


def test_fsdp_dp_is_allowed_only_for_an_fsdp_trainer_and_checkpointing_only_every_block():
    par = ParallelSpec(tp=1, pp=1, dp=16, zero=3)
    check_compiled_parallel(par, fsdp=True)
    with pytest.raises(LlmConfigError, match="parallel.dp: 16"):
        check_compiled_parallel(par)
    check_compiled_parallel(replace(par, recompute="full"), fsdp=True)   # every block checkpointed: session 46
    with pytest.raises(LlmConfigError, match="parallel.recompute: op"):
        check_compiled_parallel(replace(par, recompute="op"), fsdp=True)
    with pytest.raises(LlmConfigError, match="parallel.tp: 2"):
        check_compiled_parallel(replace(par, tp=2, dp=8), fsdp=True)


def test_compiled_regime_is_its_own_key_in_the_fsdp_family():
    eager = llm_regime("fms-fsdp", 1, 1, 1, 3, False, "bf16", 128).key
    compiled = llm_regime("fms-fsdp-compile", 1, 1, 1, 3, False, "bf16", 128).key
    assert eager == "llm | PyTorch FSDP | ZeRO-3/FSDP | bf16" and compiled == "llm | PyTorch FSDP | ZeRO-3/FSDP+compile | bf16"


def test_compile_prices_the_same_fsdp_step_faster_on_a_synthetic_model(tmp_path):
    """A 1.4B Llama on 16 H100 (a synthetic file, not a recorded row), FULL_SHARD, no checkpointing: the compiled block
    fuses the memory-bound kernels, so the step is faster than eager fms-fsdp's, in the +compile regime."""
    import yaml
    from conftest import ROOT

    from simcluster.reference.llm import validate_published_llm

    doc = yaml.safe_load((ROOT / "calibration" / "published" / "llm-fms-fsdp-h100.yaml").read_text())
    run = doc["runs"][2]
    run.update(model={"name": "synthetic 1.4b", "layers": 24, "hidden": 2048, "ffn": 5632, "heads": 16, "kv_heads": 16,
                      "vocab": 32000, "seq": 4096}, gpus=16, measured={"tokens_per_s": 1.0e6})
    run["parallel"].update(dp=16, recompute="none")
    run["batch"].update(global_batch=32)
    doc["runs"] = [run]
    sim = doc["simcluster"]
    sim.pop("runs_not_compared")
    sim["machine"] = {k: str((ROOT / "calibration" / "published" / v).resolve()) if k.endswith("card") else v
                      for k, v in sim["machine"].items()}
    step = {}
    for framework in ("fms-fsdp", "fms-fsdp-compile"):
        sim["framework"] = framework
        path = tmp_path / f"llm-synthetic-{framework}.yaml"
        path.write_text(yaml.safe_dump(doc))
        (row,) = validate_published_llm(path).rows
        step[framework] = 1 / row.predicted
        assert row.regime.endswith("FSDP+compile | bf16") == (framework == "fms-fsdp-compile")
    assert step["fms-fsdp-compile"] < 0.95 * step["fms-fsdp"]


def test_a_dp16_fms_fsdp_compile_scenario_runs_and_says_it_is_extrapolated(tmp_path, capsys):
    """`simcluster run` on fms-fsdp-compile at dp 16 (the job's refusal decides FSDP from the framework, as layer_ops
    does: compiled.FSDP_COMPILED), and the answer prints the under-FSDP caveat; the runner's torch-compile at dp 16 is
    still refused at its key."""
    import yaml
    from conftest import ROOT

    from simcluster.cli import main
    from simcluster.llm.caveats import COMPILED_FSDP

    base = yaml.safe_load((ROOT / "scenarios/llm/fsdp-hsdp-7b.yaml").read_text())   # its machine, 2 nodes of 8 H100
    here = ROOT / "scenarios/llm"
    machine = {k: ({**v, "card": str((here / v["card"]).resolve())} if isinstance(v, dict) and "card" in v else v)
               for k, v in base["machine"].items()}
    machine.update(card=str((here / base["machine"]["card"]).resolve()), nodes=2)

    def scenario(framework) -> str:
        path = tmp_path / f"{len(str(framework))}.yaml"
        job = {"kind": "llm_training", "parallel": {"dp": 16, "zero": 3}, "global_batch": 32, "micro_batch": 2,
               "model": {"layers": 24, "hidden": 2048, "ffn": 5632, "heads": 16, "kv_heads": 16, "vocab": 32000, "seq": 4096},
               "framework": framework}
        path.write_text(yaml.safe_dump({"name": "fsdp-compile-16", "machine": machine, "jobs": [job]}))
        return str(path)

    assert main(["run", scenario("fms-fsdp-compile")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(fms-fsdp-compile), dp 16" in out and " ".join(COMPILED_FSDP.lstrip("; ").split()) in out
    assert "ZeRO-3/FSDP+compile" in out
    assert main(["run", scenario({"name": "torch", "compile": True})]) == 0   # torch's FSDP2 under compile: session 46
    assert "(torch-compile+fsdp2), dp 16" in " ".join(capsys.readouterr().out.split())


def test_adopt48s_terms_are_set_after_the_host_cost_per_kernel():
    """eager_compiled.compiled_framework sets ADOPTED_FSDP2 after pricing the host per compiled kernel (review finalA48
    item 10): the fsdp hooks' and compile's host seconds per block are spread over the kernel count WITHOUT the
    adoption (down_proj's recompute kernel counted, as compck2's registered column priced it), not the adopted count."""
    from simcluster.llm import eager_compiled
    from simcluster.llm.eager import torch_framework

    par = ParallelSpec(dp=2, zero=3, recompute="full")
    hosts = {"single": (20e-6, 1e-3, 3), "fsdp": (50e-6, 6e-3, 3), "compile": (30e-6, 4e-3, 3)}
    fw = eager_compiled.compiled_framework(par, hosts, torch_framework)
    assert all(getattr(fw, k) for k in eager_compiled.ADOPTED_FSDP2)
    before = replace(fw, **dict.fromkeys(eager_compiled.ADOPTED_FSDP2, False))
    n_before, n_adopted = (eager_compiled.compiled_kernels_per_block(par, f) for f in (before, fw))
    assert n_before == n_adopted + 1   # the adopted block issues one kernel fewer (down_proj's recompute)
    hook_block = eager_compiled.per_block_host_s(hosts, "fsdp", torch_framework)
    assert fw.host_hook_kernel_s == pytest.approx(hook_block / n_before)
    assert fw.host_kernel_s == pytest.approx(30e-6 + hook_block / n_before)
    assert fw.host_kernel_s != pytest.approx(30e-6 + hook_block / n_adopted)   # the other order would move it
    no_fit = eager_compiled.compiled_framework(par, {}, torch_framework)   # without a compile fit: adopted all the same
    assert all(getattr(no_fit, k) for k in eager_compiled.ADOPTED_FSDP2) and no_fit.host_kernel_s == eager_compiled.TORCH_COMPILE.host_kernel_s
    assert not any(getattr(eager_compiled.compiled_framework(ParallelSpec(), hosts, torch_framework), k)
                   for k in eager_compiled.ADOPTED_FSDP2)   # one GPU: never
