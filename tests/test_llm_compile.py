"""Issue 44: torch.compile in eager PyTorch. The runner's --compile path (CI has no GPU: the argument path, the
collect plan and the record) and the step model's compiled framework (llm/compiled.py)."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import types

import pytest
from conftest import load_script

from simcluster.errors import SimclusterError

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_collect_plans_compiled_runs_beside_eager_ones(tmp_path):
    from simcluster.runner import plans

    opts = plans.Options(llm_presets=("tiny",), llm_shapes="128:1", llm_layers=(2, 8), gpus=1, llm_compile=(False, True))
    steps = plans.plan(["llm-step"], opts, tmp_path)
    assert [s.run_id for s in steps] == ["tiny-L2-single", "tiny-L2-single-compile", "tiny-L8-single", "tiny-L8-single-compile"]
    assert [("--compile" in s.argv, s.meta["compile"]) for s in steps] == [(False, False), (True, True)] * 2
    only = plans.plan(["llm-step"], dataclasses.replace(opts, llm_compile=(True,)), tmp_path)
    assert [s.run_id for s in only] == ["tiny-L2-single-compile", "tiny-L8-single-compile"]
    plain = plans.plan(["llm-step"], dataclasses.replace(opts, llm_compile=(False,)), tmp_path)
    assert all("--compile" not in s.argv for s in plain) and len(plain) == 2
    for bad in (dict(llm_checkpointing=(False, True)), dict(llm_ac_modes=("none", "op")), dict(llm_ac_modes=("every:2",)),
                dict(llm_modes=("pp",), gpus=2)):
        with pytest.raises(SimclusterError, match="--llm-compile: not with") as err:
            plans.plan(["llm-step"], dataclasses.replace(opts, **bad), tmp_path)
        assert "\n" not in str(err.value)


def test_collect_reads_llm_compile_from_the_command_line():
    from simcluster.cli import build_parser
    from simcluster.cli_args import collect_options

    args = build_parser().parse_args(["collect", "--out", "/tmp/b", "--tools", "llm-step", "--llm-compile", "both"])
    assert collect_options(args).llm_compile == (False, True)
    args = build_parser().parse_args(["collect", "--out", "/tmp/b", "--tools", "llm-step"])
    assert collect_options(args).llm_compile == (False,)


@pytest.mark.parametrize("argv, message", [
    (["--compile", "--mode", "pp"], "--compile with --mode pp"),
    (["--compile", "--compile-scope", "model", "--mode", "tp"], "--compile-scope model with --mode tp"),   # session 46:
    # --compile with --ac-mode full runs (checkpoint around each compiled block, or inside the whole model's graph)
    (["--compile", "--ac-mode", "op"], "--compile with --ac-mode op"),
    (["--compile", "--ac-mode", "every:2"], "--compile with --ac-mode every:2"),
    (["--compile-scope", "model", "--mode", "fsdp"], "--compile-scope model without --compile"),   # review B46, 11
])
def test_the_runner_refuses_what_it_does_not_compile_before_torch(argv, message):
    from simcluster.runner import llm_step

    with pytest.raises(SystemExit, match=message):
        llm_step.main(argv)


def test_compile_layers_replaces_each_layer_and_the_record_holds_the_compile_time():
    from simcluster.runner import llm_compile

    calls = []

    def fake_compile(module, **kw):
        calls.append(kw)
        return ("compiled", module)

    decoder = types.SimpleNamespace(layers=["l0", "l1", "l2"])
    config = types.SimpleNamespace(recompile_limit=8)
    fake = types.SimpleNamespace(compile=fake_compile, __version__="x",
                                 _dynamo=types.SimpleNamespace(config=config, utils=types.SimpleNamespace(
                                     counters={"stats": {"unique_graphs": 2}, "graph_break": {"a": 1, "b": 2}})))
    assert llm_compile.compile_layers(fake, decoder) == 3
    assert config.recompile_limit == 11 and not hasattr(config, "cache_size_limit")   # above the layers, only if present
    assert decoder.layers == [("compiled", "l0"), ("compiled", "l1"), ("compiled", "l2")]
    assert calls[0] == {"dynamic": False, "fullgraph": False}
    rec = llm_compile.warmup_record([30.0, 0.2, 0.1], [0.1, 0.12, 0.1], fake)
    assert rec["compile_s"] == pytest.approx(29.9) and rec["warmup_step_times_s"] == [30.0, 0.2, 0.1]
    assert rec["dynamo"] == {"unique_graphs": 2, "graph_breaks": 3}
    described = llm_compile.describe(fake)
    assert described["backend"] == "inductor" and "no CUDA graphs" in described["mode"] and described["torch"] == "x"
    json.dumps(described)


# --- the step model -------------------------------------------------------------------------------------------
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm import compiled, eager, host  # noqa: E402
from simcluster.llm.caveats import COMPILED_STEP  # noqa: E402
from simcluster.llm.comm import Network  # noqa: E402
from simcluster.llm.framework import TORCH_AMP, TORCH_COMPILE  # noqa: E402
from simcluster.llm.memory import layer_activation_bytes  # noqa: E402
from simcluster.llm.predict import predict_llm  # noqa: E402
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec  # noqa: E402

MODEL = TransformerSpec(24, 1024, 2816, 16, 8, 32000, 2048, tied_embeddings=True)   # the runner's 0.3b preset
ONE, BATCH = ParallelSpec(), BatchSpec(4, 4)


@pytest.fixture(scope="module")
def gpu():
    return load_gpu(ROOT / "models" / "gpu" / "h200-sxm-interleaved.yaml")[0]


def test_a_compiled_block_keeps_every_library_kernel_and_fuses_the_memory_bound_ones():
    e_fwd, e_bwd = compiled.layer_ops(MODEL, ONE, BATCH, TORCH_AMP)
    c_fwd, c_bwd = compiled.layer_ops(MODEL, ONE, BATCH, TORCH_COMPILE)
    for eager_ops, comp_ops in ((e_fwd, c_fwd), (e_bwd, c_bwd)):
        lib = [o for o in eager_ops if o.kind in compiled.LIBRARY_KINDS]
        assert [o for o in comp_ops if o.kind in compiled.LIBRARY_KINDS] == lib      # GEMMs and flash attention: eager's, in order
    kernels = [sum(o.count for o in ops_ if o.kind in ("memory", "upcast", "unvectorized")) for ops_ in (e_fwd, e_bwd, c_fwd, c_bwd)]
    assert kernels == [23, 43, 7, 10]   # eager: the runner's block (llm/autocast_block.py; the generic eager list is 22 + 41)
    T, h, f = 4 * 2048, 1024, 2816
    by_name = {o.name: o for o in c_fwd + c_bwd}
    assert by_name["swiglu"].total_bytes == 3 * T * f * 2                  # gate and up read, the product written once
    assert by_name["add_norm2_cast"].total_bytes == T * h * (2 * 4 + 2 * 2)   # fp32 x and bf16 branch in; fp32 x, bf16 out
    mem = [sum(o.total_bytes for o in ops_ if o.kind in ("memory", "unvectorized")) for ops_ in (e_fwd, c_fwd)]
    assert mem[1] < 0.5 * mem[0]


def test_compile_lowers_the_step_and_the_memory_and_issues_fewer_kernels(gpu):
    hosts = {"single": (30e-6, 0.0, 3), "compile": (30e-6, 0.0, 3)}
    plain, comp = eager.torch_framework(ONE, hosts), eager.torch_framework(ONE, hosts, compiled=True)
    assert comp.compiled and comp.name == "torch-compile" and comp.weight_copy_bytes == 2 and not plain.compiled
    # 7 GEMMs x 3 + 2 attention + memory-bound 66 eager (the runner's block) / 17 compiled + weight casts 7 x 2 (compiled
    # too: its bf16 copies are saved, not cast again in the backward)
    assert (host.layer_kernels(MODEL, ONE, BATCH, plain), host.layer_kernels(MODEL, ONE, BATCH, comp)) == (103, 54)
    step = {fw.name: predict_llm(MODEL, ONE, BATCH, gpu, Network(None, 1), 1, trace=False, framework=fw) for fw in (plain, comp)}
    assert step["torch-compile"].step_time_s < step["torch-amp"].step_time_s
    assert step["torch-compile"].memory_per_gpu_GiB["allocated"] < step["torch-amp"].memory_per_gpu_GiB["allocated"]
    s, b, h, f = 2048, 4, 1024, 2816   # compiled keeps one fp32 residual (eager two: - 4 s b h), the out-projection's
    # output instead of the attention output's contiguous copy (2 s b h each), not the SiLU output (- 2 s b f), the
    # norms' rstd (+ 8 s b); the eager runner's block also saves three more bf16 casts of the norm outputs and no
    # attention-output copy (+ 4 s b h: llm/autocast_block.py)
    saved = layer_activation_bytes(MODEL, ONE, BATCH, plain) - layer_activation_bytes(MODEL, ONE, BATCH, comp)
    assert saved == pytest.approx(8 * s * b * h + 2 * s * b * f - 8 * s * b)
    assert step["torch-compile"].regime.key.endswith("single+compile | bf16")
    assert COMPILED_STEP in step["torch-compile"].caveats and COMPILED_STEP not in step["torch-amp"].caveats


def test_compile_is_refused_where_it_is_not_modelled():
    for par in (ParallelSpec(dp=2), ParallelSpec(tp=2), ParallelSpec(recompute="op"),   # full: modelled since session 46
                ParallelSpec(recompute="full", recompute_every=2)):
        with pytest.raises(LlmConfigError, match="with no activation checkpointing or every block's") as err:
            eager.torch_framework(par, None, compiled=True)
        assert err.value.key == "framework.compile"
        assert any(f"parallel.{k}" in str(err.value) for k in ("dp: 2", "tp: 2", "recompute: ", "recompute_every: 2"))
    for zero in (0, 2):   # framework torch's dp > 1 under compile is FSDP2 (zero 3) alone: said, naming parallel.zero (review B46, 10)
        with pytest.raises(LlmConfigError, match=re.escape("one GPU or FSDP2 (zero 3), with no activation")) as err:
            eager.torch_framework(ParallelSpec(dp=2, zero=zero), None, compiled=True)
        assert f"got parallel.dp: 2, parallel.zero: {zero}" in str(err.value) and "\n" not in str(err.value)
    assert eager.torch_framework(ParallelSpec(dp=2, zero=3), None, compiled=True).name == "torch-compile+fsdp2"
    gpipe = ParallelSpec(pp_schedule="gpipe")   # one rule (compiled.check_compiled_parallel): a 1-GPU job's schedule is moot
    assert eager.torch_framework(gpipe, None, compiled=True).compiled
    compiled.check_compiled(MODEL, gpipe)
    with pytest.raises(LlmConfigError, match=re.escape("got parallel.pp: 2, parallel.recompute: op")):
        eager.torch_framework(ParallelSpec(pp=2, recompute="op"), None, compiled=True)
    gelu = TransformerSpec(4, 256, 1024, 4, 4, 512, 128, mlp="gelu")
    with pytest.raises(LlmConfigError, match="SwiGLU"):
        compiled.layer_ops(gelu, ONE, BatchSpec(1, 1), TORCH_COMPILE)


SCENARIO = """\
name: t
machine:
  card: {root}/models/collective/h200x2-primitives.yaml
  gpus_per_node: {gpus}
  gpu: {{card: {root}/models/gpu/h200-sxm-interleaved.yaml}}
jobs:
  - kind: llm_training
    model: {{layers: 16, hidden: 2048, ffn: 8192, heads: 32, kv_heads: 8, vocab: 128256, seq: 2048, tied_embeddings: true}}
    parallel: {{dp: {gpus}}}
    global_batch: 4
    micro_batch: 2
    framework: {framework}
"""


def test_a_scenario_takes_compile_true_under_framework_torch(tmp_path):
    from simcluster.build import llm_prediction
    from simcluster.errors import ScenarioError
    from simcluster.scenario import load

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(root=ROOT, gpus=1, framework="{name: torch, compile: true}"))
    sc = load(path)
    assert sc.jobs[0].framework_spec().name == "torch-compile"
    assert llm_prediction(sc.machine, sc.jobs[0], trace=False).step_time_s > 0
    for gpus, framework, message in ((2, "{name: torch, compile: true}", "jobs[0].framework.compile: torch.compile is modelled"),
                                     (1, "{name: megatron, compile: true}", "jobs[0].framework.compile: framework megatron")):
        path.write_text(SCENARIO.format(root=ROOT, gpus=gpus, framework=framework))
        with pytest.raises(ScenarioError, match=re.escape(message)) as err:
            load(path)
        assert "\n" not in str(err.value).strip()
    for recompute in ("recompute: op", "recompute: full, recompute_every: 2"):   # torchtitan's selective modes too
        path.write_text(SCENARIO.format(root=ROOT, gpus=1, framework="{name: torch, compile: true}")
                        .replace("parallel: {dp: 1}", f"parallel: {{dp: 1, {recompute}}}"))
        with pytest.raises(ScenarioError, match=re.escape("jobs[0].framework.compile: torch.compile is modelled")):
            load(path)


def test_the_registered_device_run_plans_host_and_check_bundles_in_both_arms(tmp_path):
    """device_run.sh where torch is absent (CI): every llm-step run fails at its import, but the flow is the
    registered one: the host bundle's six runs, then one check bundle per preset, eager and compiled, and the tgz."""
    import os
    import shutil
    import subprocess
    import sys
    import tarfile

    stubs, out = tmp_path / "bin", tmp_path / "out"
    stubs.mkdir()
    out.mkdir()
    (stubs / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')   # this environment's python (simpy in it)
    (stubs / "python3").chmod(0o755)
    name = f"compile-test-{os.getpid()}"
    env = dict(os.environ, PATH=f"{stubs}:{os.environ['PATH']}", OUT=str(out))
    done = subprocess.run(["bash", "calibration/h200x1-llm-compile-2026-11-29/device_run.sh", name], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    status = (out / "status.txt").read_text().splitlines()
    assert status[0].startswith("host exit") and len(status) == 6 and not any("skipped" in s for s in status)
    with tarfile.open(out / f"{name}.tgz") as tgz:
        names = tgz.getnames()
    host_runs = sorted({n.split("/")[3] for n in names if n.startswith(f"{name}/host/llm-step/") and n.count("/") >= 3})
    assert host_runs == sorted(f"tiny-L{n}-single{c}" for n in (2, 8, 32) for c in ("", "-compile"))
    for preset in ("0.3b", "1b", "1.1b", "3b", "3.1b"):
        assert f"{name}/check/{preset}/llm-step/{preset}-single-compile/run.json" in names
        assert f"{name}/check/{preset}/llm-step/{preset}-single/run.json" in names
    manifest = json.loads((pathlib.Path("/tmp") / name / "host" / "manifest.json").read_text())
    assert manifest["options"]["llm_compile"] == [False, True]
    shutil.rmtree(pathlib.Path("/tmp") / name)


def _read_out(bundle: pathlib.Path, capsys) -> tuple[int, list[str], str]:
    mod = load_script("validation/llm_compile.py")
    rc = mod.main([str(bundle)])
    out = capsys.readouterr()
    return rc, out.out.splitlines(), out.err.strip()


def test_a_re_read_of_the_compile_set_says_it_is_todays_model_and_prints_the_registered_verdict(tmp_path, capsys):
    """Today's model reads the set's runs as a development re-read; the registered verdict (not met, the rule read at
    c0bd808: readout-registered.json) is printed beside it, and a broken stored read is one line."""
    import shutil

    folder = ROOT / "calibration/h200x1-llm-compile-2026-11-29"
    rc, lines, _ = _read_out(folder, capsys)
    assert rc == 0 and lines[-2].startswith("development re-read with today's model: rule (compiled step <= 8% mean")
    assert lines[-1] == "registered verdict (the rule read at the run's commit c0bd808, readout-registered.json): not met"
    copy = tmp_path / folder.name
    for sub in ("host", "check"):
        shutil.copytree(folder / sub, copy / sub)
    rc, lines, _ = _read_out(copy, capsys)
    assert rc == 0 and lines[-1].startswith("registered verdict: none stored")
    (copy / "readout-registered.json").write_text(json.dumps({"verdict": "fine"}))
    rc, lines, err = _read_out(copy, capsys)
    assert rc == 2 and not lines and len(err.splitlines()) == 1 and "readout-registered.json" in err and "verdict" in err
