"""Session 40 fsdp2time: the FSDP2 bf16-block step candidate (eager.bf16_step, autocast_block.bf16_runner_ops) and its
registered set (validation/eager_fsdp_step.py, calibration/h200x2-eager-fsdpstep-2026-11-30): what the candidate
changes and what it leaves, the rows are new, the device script runs what is registered, the read-out's rule on
synthetic documents."""

from __future__ import annotations

import gzip
import json

import pytest
import yaml
from conftest import ROOT, fake_step_set, load_script, measured_llm_tokens

from simcluster.llm import compiled, eager, host
from simcluster.llm.memory import stage_memories
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

check = load_script(ROOT / "validation" / "eager_fsdp_step.py")
BUNDLE = check.BUNDLE
LATER = ROOT / "calibration" / "h200x2-eager-fsdpnoise-2026-11-30"   # the lead's noise repeats of its rows, run after it
FSDP, DDP = ParallelSpec(dp=2, zero=3), ParallelSpec(dp=2)
MODEL = TransformerSpec(16, 1536, 4096, 12, 4, 32000, 4096)
BATCH = BatchSpec(4, 2, "bf16")


def _names(fw):
    fwd, bwd = compiled.layer_ops(MODEL, FSDP, BATCH, fw)
    return [o.name for o in fwd], [o.name for o in bwd]


def test_the_candidate_prices_fsdp2s_block_in_bf16_and_leaves_every_other_framework_alone():
    kept = eager.torch_framework(FSDP)
    cand = eager.bf16_step(kept)
    assert (kept.residual_bytes, kept.bf16_step) == (4, False) and (cand.residual_bytes, cand.bf16_step) == (2, True)
    for par in (DDP, ParallelSpec(), ParallelSpec(tp=2)):   # no bf16 block: unchanged
        assert eager.bf16_step(eager.torch_framework(par)) == eager.torch_framework(par)
    (kf, kb), (cf, cb) = _names(kept), _names(cand)
    for name in ("cast", "attn_out_copy"):
        assert name in kf and name not in cf
    for name in ("cast.bwd", "attn_out_copy.bwd", "qkv_grad_copy", "residual_add.bwd"):
        assert name in kb and name not in cb
    assert host.layer_kernels(MODEL, FSDP, BATCH, cand) < host.layer_kernels(MODEL, FSDP, BATCH, kept)
    # the residual stream's ops at 2 B: the forward add reads two bf16 tensors and writes one
    add = next(o for o in compiled.layer_ops(MODEL, FSDP, BATCH, cand)[0] if o.name == "residual_add")
    assert add.bytes == pytest.approx(MODEL.seq * BATCH.micro_batch * MODEL.hidden * 6)
    # memory is the bf16 block's already (bf16_param_block): the candidate moves step time only
    mem = [stage_memories(MODEL, FSDP, BATCH, 150e9, fw)[0].allocated for fw in (kept, cand)]
    assert mem[0] == mem[1]


def test_the_candidate_context_refits_the_host_and_restores_the_product():
    row = check.ROWS[0]
    today, cand = check.predict(row), check.predict(row, candidate=True)
    assert cand["step_ms"] < 0.95 * today["step_ms"] and cand["stage_mem_GiB"] == today["stage_mem_GiB"]
    assert cand["classes_ms"]["memory"] < 0.8 * today["classes_ms"]["memory"]
    assert not eager.torch_framework(FSDP).bf16_step   # restored after the block
    assert check.predict(row) == today


def test_every_row_is_new_to_calibration_with_one_repeated_fsdp_row_and_one_ddp_control():
    earlier = measured_llm_tokens(BUNDLE, LATER)
    from simcluster.runner.llm_step import PRESETS
    keys = [(preset, PRESETS[preset]["layers"], seq * mb) for _, _, preset, seq, _, mb in check.ROWS]
    assert not set(keys) & earlier
    assert [r[1] for r in check.ROWS].count("ddp") == 1 and [r[1] for r in check.ROWS].count("fsdp") == 4
    assert {r[0]: r[4] for r in check.ROWS}[check.FSDP2_REPEAT] == 2 and check.TRACED in {r[0] for r in check.ROWS}


def test_the_registration_is_gpu_bound_and_separates_the_two_forms_on_fsdp2_only():
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    assert [r["name"] for r in reg["rows"]] == [r[0] for r in check.ROWS] and set(reg["rules"]) >= {"ADOPT", "SPREAD", "reported"}
    for r in reg["rows"]:
        today, cand = r["predicted"]["today"], r["predicted"][check.CANDIDATE]
        assert not today["host_bound"] and not cand["host_bound"] and today["stage_mem_GiB"][0] < 0.75 * 139.8
        if r["mode"] == "fsdp":   # the forms further apart than the rule's margin at every row
            assert cand["step_ms"] / today["step_ms"] - 1 < -0.05
        else:
            assert cand["step_ms"] == today["step_ms"]


def test_the_device_script_runs_every_registered_process_within_the_budget():
    script = (BUNDLE / "device_run.sh").read_text()
    assert ". calibration/device_lib.sh" in script and "BUDGET_S=${BUDGET_S:-140}" in script
    lines = [x.strip() for x in script.splitlines() if x.strip().startswith("guarded ")]
    for name, mode, preset, seq, procs, mb in check.ROWS:
        for k in range(1, procs + 1):
            assert any(x.startswith(f"guarded {name}-r{k} 60 $two $step --preset {preset} --shapes {seq}:{mb} --mode {mode}")
                       for x in lines)
    assert lines[-1].startswith(f"guarded {check.TRACED}-trace-r1 60 ") and "--profile 1 --trace" in lines[-1]
    assert len(lines) == sum(r[4] for r in check.ROWS) + 1 and 140 + 60 <= 200


def _set(tmp_path, err_cand: float, repeat: tuple[float, float] = (1.0, 1.0)):
    """A synthetic bundle whose FSDP2 rows measure so that the candidate's error is err_cand (today's follows from the
    registered ratio), the DDP control today's step, the repeat row's processes scaled by `repeat`."""
    reg = {r["name"]: r for r in yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]}
    medians = {}
    for name, r in reg.items():
        t, c = r["predicted"]["today"]["step_ms"], r["predicted"][check.CANDIDATE]["step_ms"]
        meas = t if r["mode"] == "ddp" else c / (1 + err_cand)
        medians[name] = [meas * f for f in (repeat if name == check.FSDP2_REPEAT else (1.0,))]
    return fake_step_set(tmp_path / "set", BUNDLE / "registered.yaml", medians), reg


def test_the_rule_keeps_the_product_when_the_candidate_reads_the_rows_fast(tmp_path):
    bundle, _ = _set(tmp_path, -0.09, repeat=(0.995, 1.005))
    out = check.read_out(bundle)
    assert out["verdict"].startswith("KEEP") and "spread 1.0%, fsdp-0.5b's processes" in out["verdict"]
    assert all(r["err_cand"] == pytest.approx(-0.09, abs=2e-3) for r in out["rows"] if r["mode"] == "fsdp")
    assert out["classes"] == []   # no trace in the synthetic set


def test_the_rule_adopts_the_candidate_when_it_is_closer_by_more_than_the_spread(tmp_path):
    bundle, reg = _set(tmp_path, 0.0, repeat=(0.99, 1.01))   # measured = the candidate's step
    out = check.read_out(bundle)
    assert out["verdict"].startswith("ADOPT: mean |error| today ") and ", candidate 0.0% " in out["verdict"]
    fsdp = [r for r in out["rows"] if r["mode"] == "fsdp"]
    assert len(fsdp) == 4 and min(r["err_today"] for r in fsdp) > 0.05


def test_one_process_of_the_repeated_row_falls_back_to_the_noise_sets_spread_and_a_missing_row_is_incomplete(tmp_path):
    bundle, _ = _set(tmp_path, 0.0)
    (bundle / "runs" / f"{check.FSDP2_REPEAT}-r2.json").unlink()
    assert "spread 2.6%, the noise set's" in check.read_out(bundle)["verdict"]
    (bundle / "runs" / "fsdp-2b-r1.json").unlink()
    assert check.read_out(bundle)["verdict"] == "INCOMPLETE: 3 of 4 fsdp rows"


def test_a_truncated_run_is_dropped_and_named_and_the_rule_reads_incomplete(tmp_path, capsys):
    """Review A 9: a run file cut short drops that process (named), never a traceback; a row left without one is missing."""
    bundle, _ = _set(tmp_path, 0.0)
    repeat = bundle / "runs" / f"{check.FSDP2_REPEAT}-r2.json"
    repeat.write_text(repeat.read_text()[:20])
    out = check.read_out(bundle)
    assert len(out["dropped"]) == 1 and out["dropped"][0].startswith(f"{repeat}: no timed shape (JSONDecodeError")
    assert "spread 2.6%, the noise set's" in out["verdict"]   # one process of the repeated row left
    cut = bundle / "runs" / "fsdp-2b-r1.json"
    cut.write_text(cut.read_text()[:-3])
    assert check.main([str(bundle)]) == 0
    printed = capsys.readouterr().out
    assert f"dropped: {cut}: no timed shape" in printed and "INCOMPLETE: 3 of 4 fsdp rows" in printed
    folder = bundle / "runs" / "traces"
    folder.mkdir()
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())["rows"]
    row = next(r for r in reg if r["name"] == check.TRACED)
    trace = folder / f"{check.TRACED}-{row['seq']}x{row['micro_batch']}-rank0.json.gz"
    trace.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", '))
    out = check.read_out(bundle)
    assert out["classes"] == [] and any(d.startswith(str(trace)) for d in out["dropped"])


def test_the_profiled_step_is_read_per_class_beside_both_forms(tmp_path):
    bundle, reg = _set(tmp_path, 0.0)
    row = reg[check.TRACED]
    folder = bundle / "runs" / "traces"
    folder.mkdir()
    events = [{"ph": "X", "cat": "kernel", "name": n, "ts": ts, "dur": dur, "pid": 0, "tid": 7}
              for n, ts, dur in (("nvjet_sm90_tst_256x128", 0, 5000), ("vectorized_layer_norm_kernel<c10::BFloat16, float>", 5000, 3000),
                                 ("chunk_cat_cuda_kernel<float, c10::BFloat16>", 8000, 2000), ("ncclDevKernel_AllGather_RING_LL", 8000, 4000))]
    path = folder / f"{check.TRACED}-{row['seq']}x{row['micro_batch']}-rank0.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    (got,) = check.read_out(bundle)["classes"]
    assert got["rank"] == 0 and got["measured"]["memory"] == pytest.approx(3.0) and got["measured"]["copies"] == pytest.approx(2.0)
    assert got["measured"]["gemm"] == pytest.approx(5.0)
    assert got["today"]["memory"] == pytest.approx(row["predicted"]["today"]["classes_ms"]["memory"])
