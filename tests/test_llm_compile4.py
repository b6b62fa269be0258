"""The compile4 set (validation/llm_compile4.py, calibration/h200x1-llm-compile4-2026-11-29): its registration is the plan,
its shapes were never measured before in any mode (every llm-step document under calibration/), device_run.sh runs
exactly the registered runs once, the band's reader (eager_registered.read_compile2) and compile2's read-out take its
documents unchanged; and the eager loss's bytes (framework.EAGER_LOSS) are what the head's ops move."""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import replace

import pytest
from conftest import load_script, measured_llm_shapes, registered_shapes

from simcluster.heldout.eager_registered import read_compile2
from simcluster.llm import eager, vocab_ops
from simcluster.llm.framework import EAGER_LOSS, EAGER_LOSS_UNTIL_34, MEGATRON, TORCH_AMP, TORCH_COMPILE, FrameworkSpec
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec

ROOT = pathlib.Path(__file__).resolve().parent.parent
SET = ROOT / "calibration/h200x1-llm-compile4-2026-11-29"


def _script():
    return load_script("validation/llm_compile4.py")


def _registered() -> list[dict]:
    return json.loads((SET / "registered.json").read_text())["runs"]


def test_the_registered_runs_are_the_plan_on_never_measured_shapes():
    mod = _script()
    reg = _registered()
    assert [r["run"] for r in reg] == [r["run"] for r in mod.llm_compile2.planned(mod.COMPILED, mod.OP)]
    assert {r["kind"] for r in reg} == {"compile"} and len(reg) == 5
    before = measured_llm_shapes(SET)
    assert ("0.3b", 24, 4096, 4) in before and ("1b", 16, 2048, 2) in before   # lease3's and the compile set's are seen
    assert not registered_shapes(reg) & before


def test_device_run_runs_each_registered_run_once():
    script = (SET / "device_run.sh").read_text()
    assert sorted(re.findall(r"^go (\S+) ", script, flags=re.M)) == sorted(r["run"] for r in _registered())
    for r in _registered():
        assert re.search(rf"^go {re.escape(r['run'])} \d+ \d+ --preset {re.escape(r['preset'])} "
                         rf"--shapes {r['seq']}:{r['micro_batch']} \$C$", script, flags=re.M), r["run"]


def _doc(run: dict, scale: float) -> str:
    shape = {"seq": run["seq"], "micro_batch": run["micro_batch"], "status": "ok",
             "median_step_s": run["predicted_step_ms"] * scale / 1e3,
             "max_memory_allocated_bytes": run["predicted_mem_GiB"] * 1.01 * 2**30,
             "max_memory_allocated_timed_bytes": run["predicted_mem_GiB"] * 1.01 * 2**30}
    doc = {"tool": "llm-step", "model": {"preset": run["preset"]}, "shapes": [shape], "compile": True, "ac_mode": "none"}
    return "llm-step log line\n" + json.dumps(doc)


def test_the_band_reader_and_the_read_out_take_its_documents(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    (tmp_path / "registered.json").write_text((SET / "registered.json").read_text())
    for r, scale in zip(_registered(), (1.06, 0.9, 1.0, 1.1, 0.95), strict=True):
        (tmp_path / "runs" / f"{r['run']}.json").write_text(_doc(r, scale))
    rows, skipped = read_compile2(tmp_path)
    assert not skipped and len(rows) == 5
    assert _script().main([str(tmp_path)]) == 0
    verdicts = [x for x in capsys.readouterr().out.splitlines() if x.startswith(("compiled:", "op:"))]
    assert verdicts[0].startswith("compiled: step mean |error| 6.2%") and verdicts[0].endswith(": met"), verdicts
    assert verdicts[1] == "op: none registered", verdicts


def test_develop_prints_every_earlier_compiled_step_before_and_after(capsys):
    assert _script().main(["--develop"]) == 0
    out = capsys.readouterr().out
    # pinned: the numbers llm.md and llm-findings.md cite for today's model (since eagerfix; 5.6 -> 3.6% at 320b162; since
    # the interleaved cards' split-K, session 35 gemm: 7.0 -> 4.5% became 6.6 -> 4.1%, compile 2.0 -> 2.8%; since the session-37
    # GEMM refit (epilogue write, call time; gemmk): 5.5 -> 3.1%, compile 3.6 -> 2.5%; since session 39's cuDNN schedule
    # form for the card's attention (llm/cudnn_schedule.py): 5.5 -> 2.8%, compile 4.0 -> 2.3%)
    assert re.search(r"^all +14 compiled steps: mean \|error\| +5\.5% -> +2\.8%, max 13\.7% -> 10\.4%, mean +-4\.7% -> +-1\.8%$",
                     out, flags=re.M), out
    assert re.search(r"^compile +5 compiled steps: mean \|error\| +4\.0% -> +2\.3%", out, flags=re.M), out
    assert re.search(r"^  single-1b-2048x2 +kernels +89\.1 ms +model +93\.5 -> +89\.0 ms +-4\.7% -> +\+0\.1%$", out, flags=re.M), out
    assert len(re.findall(r"^  (single|compile)-\S+ +kernels", out, flags=re.M)) == 10


def test_the_eager_loss_moves_its_measured_bytes_per_logit():
    model = TransformerSpec(layers=2, hidden=256, ffn=512, heads=4, kv_heads=2, vocab=1000, seq=64)
    par, batch = ParallelSpec(), BatchSpec(2, 2)
    n = 2 * 64 * 1000
    for fw in (TORCH_AMP, TORCH_COMPILE, eager.torch_framework(par, {}, compiled=False)):
        loss = ("logits_upcast", "cross_entropy")   # the .float() copy (an up-cast) and log_softmax; backward alike
        fwd = [o for o in vocab_ops.head_forward(model, par, batch, fw) if o.name in loss]
        bwd = [o for o in vocab_ops.head_backward(model, par, batch, fw) if o.name.removesuffix(".bwd") in loss]
        assert sum(o.bytes * o.count for o in fwd) == EAGER_LOSS["loss_fwd_bytes"] * n and len(fwd) == 2
        assert sum(o.bytes * o.count for o in bwd) == EAGER_LOSS["loss_bwd_bytes"] * n and len(bwd) == 2
        assert [o.kind for o in fwd] == ["upcast", "memory"] and fwd[0].bytes == 6 * n   # bf16 read, fp32 written
        assert [o.kind for o in bwd] == ["memory", "memory"]   # the cast back to bf16: a vectorized copy
        # kernels a pass, as compile4's traces list them: copy, SoftMaxForward; fill, SoftMaxBackward, cast back
        assert sum(o.count for o in fwd) == 2 and sum(o.count for o in bwd) == 3
        assert [(o.bytes, o.count) for o in bwd] == [(6 * n, 1), (10 * n, 2)]   # 4 + 16 B: an equal share each
    mega = [o for o in vocab_ops.head_forward(model, par, batch, MEGATRON) if o.name == "cross_entropy"]
    assert [(o.bytes, o.count) for o in mega] == [(MEGATRON.loss_fwd_bytes * n, 1)]
    mega_bwd = [o for o in vocab_ops.head_backward(model, par, batch, MEGATRON) if o.name == "cross_entropy.bwd"]
    assert [(o.bytes, o.count) for o in mega_bwd] == [(MEGATRON.loss_bwd_bytes * n, 1)]   # fused: one kernel


def test_an_eager_framework_without_the_eager_loss_is_refused():
    with pytest.raises(LlmConfigError, match=r"framework.loss_fwd_bytes: framework 'x' is eager.*EAGER_LOSS"):
        FrameworkSpec("x", eager=True)   # the fused default 6 / 12 a forgotten **EAGER_LOSS would leave
    with pytest.raises(LlmConfigError, match="eager"):
        replace(TORCH_AMP, loss_bwd_bytes=12.0)
    assert replace(TORCH_AMP, **EAGER_LOSS_UNTIL_34).loss_bwd_bytes == 56.0   # the development 'before' arm only
    assert FrameworkSpec("y", loss_fwd_bytes=6.0).loss_bwd_bytes == 12.0      # not eager: any loss
