"""The eager5 set (validation/llm_eager5.py, calibration/h200x1-llm-eager5-2026-11-29): its registration is the plan (kind
eager, five shapes), its shapes were never measured before in any mode, device_run.sh runs exactly the registered runs
once, the band's reader (eager_registered.read_compile2) and the read-out take its documents; and the two kernel rates
of this session (GpuSpec.upcast_time_s, framework.FUSED_ADAMW_BYTES) price what they say."""

from __future__ import annotations

import json
import pathlib
import re

from conftest import load_script, measured_llm_shapes, registered_shapes
from test_llm_compile4 import _doc as compiled_doc

from simcluster.hardware.gpu import load_gpu
from simcluster.heldout.eager_registered import REGISTERED, read_compile2
from simcluster.llm import eager, ops, vocab_ops
from simcluster.llm.framework import FUSED_ADAMW_BYTES, TORCH_AMP
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

ROOT = pathlib.Path(__file__).resolve().parent.parent
SET = ROOT / "calibration/h200x1-llm-eager5-2026-11-29"
LEASE2 = ROOT / "calibration/h200x1-llm-eager5-lease2-2026-11-29"   # the same registration on another launch (after the read)
H200 = ROOT / "models/gpu/h200-sxm-interleaved.yaml"


def _script():
    return load_script("validation/llm_eager5.py")


def _registered() -> list[dict]:
    return json.loads((SET / "registered.json").read_text())["runs"]


def test_the_registered_runs_are_the_plan_on_never_measured_shapes():
    mod = _script()
    reg = _registered()
    assert [r["run"] for r in reg] == [r["run"] for r in mod.llm_compile2.planned((), (), mod.EAGER)]
    assert {r["kind"] for r in reg} == {"eager"} and len(reg) == 5
    assert any(r["seq"] == 4096 for r in reg) and min(r["predicted_step_ms"] for r in reg) < 80   # a 4096-token, a short step
    before = measured_llm_shapes(SET, LEASE2)   # eager5's own runs, and its registration run again (lease2)
    assert ("3.1b", 36, 2048, 2) in before and ("2b", 24, 4096, 2) in before   # the compile set's and compile4's are seen
    assert not registered_shapes(reg) & before
    assert str(SET.relative_to(ROOT)) in REGISTERED   # added by the lead after the read (8ea3121), not before


def test_device_run_runs_each_registered_run_once_eager_and_unchecked():
    script = (SET / "device_run.sh").read_text()
    assert sorted(re.findall(r"^go (\S+) ", script, flags=re.M)) == sorted(r["run"] for r in _registered())
    for r in _registered():
        assert re.search(rf"^go {re.escape(r['run'])} \d+ \d+ --preset {re.escape(r['preset'])} "
                         rf"--shapes {r['seq']}:{r['micro_batch']} \$C$", script, flags=re.M), r["run"]
    assert re.search(r'^C="--warmup 5 --profile 1"$', script, flags=re.M) and "--compile" not in script.split("C=")[1]
    assert "--ac-mode" not in script and "CAP=210" in script


def _doc(run: dict, scale: float, compiled: bool = False) -> str:
    """compile4's fake llm-step document of a registered run (test_llm_compile4._doc), eager unless `compiled`."""
    log, doc = compiled_doc(run, scale).split("\n", 1)
    return log + "\n" + json.dumps({**json.loads(doc), "compile": compiled})


def test_the_band_reader_and_the_read_out_take_its_documents(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    (tmp_path / "registered.json").write_text((SET / "registered.json").read_text())
    for r, scale in zip(_registered(), (1.06, 0.9, 1.0, 1.1, 0.95), strict=True):
        (tmp_path / "runs" / f"{r['run']}.json").write_text(_doc(r, scale))
    rows, skipped = read_compile2(tmp_path)
    assert not skipped and len(rows) == 5 and {(r["framework"], r["recompute"]) for r in rows} == {("torch-amp", "none")}
    assert _script().main([str(tmp_path)]) == 0
    verdicts = [x for x in capsys.readouterr().out.splitlines() if x.startswith(("eager:", "compiled:", "op:"))]
    assert verdicts[0].startswith("eager: step mean |error| 6.2%") and verdicts[0].endswith(": met"), verdicts
    assert verdicts[1] == "op: none registered", verdicts
    first = _registered()[0]
    (tmp_path / "runs" / f"{first['run']}.json").write_text(_doc(first, 1.0, compiled=True))   # not its registration
    assert len(read_compile2(tmp_path)[0]) == 4


def test_develop_prints_every_eager_row_before_and_after(capsys):
    assert _script().main(["--develop"]) == 0
    out = capsys.readouterr().out
    # pinned: the numbers llm-findings.md cites (session 34, eagerfix; the compile set 6.1% since llmmend2; since the
    # interleaved cards' split-K, session 35 gemm, with session 34's records (no autocast block): 9.7 -> 5.0% became 10.9 -> 6.3%;
    # since the session-37 GEMM refit (epilogue write, call time; gemmk) 11.5 -> 6.9%: these steps read faster still;
    # since session 39's cuDNN schedule form for the card's attention: 11.5 -> 6.9% became 11.7 -> 7.0%)
    assert re.search(r"^all +8 eager steps: mean \|error\| 11\.7% -> +7\.0%, max 16\.0% -> 14\.1%", out, flags=re.M), out
    assert re.search(r"^compile +5 eager steps: mean \|error\| 11\.9% -> +7\.0%", out, flags=re.M), out
    assert re.search(r"^sac +3 eager steps: mean \|error\| 11\.3% -> +7\.1%", out, flags=re.M), out
    assert len(re.findall(r"^  eager-\S+ +kernels", out, flags=re.M)) == 5


def test_up_casts_run_at_the_sms_rate_and_adamw_at_its_measured_bytes():
    gpu = load_gpu(H200)[0]
    big = 6e9   # bytes of a bf16 -> fp32 copy: SM-bound on an H200 (2.06 TB/s < 4.18)
    assert abs(gpu.upcast_time_s(big) - big / 2.06e12) < 1e-9 and gpu.upcast_time_s(big) > 2 * gpu.memory_time_s(big) * 0.95
    assert gpu.upcast_time_s(0.0) == gpu.memory_time_s(0.0)
    model = TransformerSpec(layers=2, hidden=256, ffn=512, heads=4, kv_heads=2, vocab=1000, seq=64)
    par, batch = ParallelSpec(), BatchSpec(2, 2)
    bwd = ops.layer_backward(model, par, batch, TORCH_AMP)
    assert {o.kind for o in bwd if o.name == "cast.bwd"} == {"upcast"}   # autocast's casts come back as up-casts
    assert {o.kind for o in vocab_ops.head_forward(model, par, batch, TORCH_AMP) if o.name == "logits_upcast"} == {"upcast"}
    assert abs(FUSED_ADAMW_BYTES - 28 / 0.827) < 1e-9 and TORCH_AMP.adam_bytes == FUSED_ADAMW_BYTES
    assert eager.torch_framework(ParallelSpec(tp=2)).adam_bytes == 28.0   # tp: AdamW per parameter, not the fused kernel
