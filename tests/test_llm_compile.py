"""Issue 44: torch.compile in eager PyTorch. The runner's --compile path (CI has no GPU: the argument path, the
collect plan and the record) and the step model's compiled framework (llm/compiled.py)."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import types

import pytest

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
    for bad in (dict(llm_checkpointing=(False, True)), dict(llm_modes=("pp",), gpus=2)):
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
    (["--compile", "--activation-checkpointing"], "--compile with --activation-checkpointing"),
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
    fake = types.SimpleNamespace(compile=fake_compile, __version__="x",
                                 _dynamo=types.SimpleNamespace(utils=types.SimpleNamespace(
                                     counters={"stats": {"unique_graphs": 2}, "graph_break": {"a": 1, "b": 2}})))
    assert llm_compile.compile_layers(fake, decoder) == 3
    assert decoder.layers == [("compiled", "l0"), ("compiled", "l1"), ("compiled", "l2")]
    assert calls[0] == {"dynamic": False, "fullgraph": False}
    rec = llm_compile.warmup_record([30.0, 0.2, 0.1], [0.1, 0.12, 0.1], fake)
    assert rec["compile_s"] == pytest.approx(29.9) and rec["warmup_step_times_s"] == [30.0, 0.2, 0.1]
    assert rec["dynamo"] == {"unique_graphs": 2, "graph_breaks": 3}
    described = llm_compile.describe(fake)
    assert described["backend"] == "inductor" and "no CUDA graphs" in described["mode"] and described["torch"] == "x"
    json.dumps(described)
