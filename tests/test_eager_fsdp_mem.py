"""Session 39 fsdpmem's registered set (validation/eager_fsdp_mem.py, calibration/h200x2-eager-fsdpmem-2026-11-29): the
old model is the fix switched off, the rows are new, the device script runs what is registered, and the read-out (reused
from eager_cudnn_steps.py) on synthetic documents."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT, fake_step_set, load_script, measured_llm_tokens

from simcluster.llm import eager
from simcluster.llm.spec import ParallelSpec
from simcluster.runner.llm_decoder import PRESETS

check = load_script(ROOT / "validation" / "eager_fsdp_mem.py")
BUNDLE = check.BUNDLE


def _registered():
    return {r["name"]: r for r in yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]}


def test_the_old_model_is_the_fix_switched_off_and_the_context_restores_it():
    fsdp, ddp = check.ROWS[0], check.ROWS[2]
    today, old = check.predict(fsdp), check.predict(fsdp, old=True)
    assert old["steady_mem_GiB"][0] > 1.05 * today["steady_mem_GiB"][0] and old["step_ms"] == today["step_ms"]
    assert check.predict(ddp, old=True)["stage_mem_GiB"] == check.predict(ddp)["stage_mem_GiB"]   # DDP untouched
    assert eager.torch_framework(ParallelSpec(dp=2, zero=3)).bf16_param_block   # restored after the block
    assert check.predict(fsdp) == today


def test_every_row_is_new_to_calibration_and_the_modes_are_two_fsdp_and_one_ddp():
    earlier = measured_llm_tokens(BUNDLE)
    keys = [(preset, PRESETS[preset]["layers"], seq) for _, _, preset, seq, _ in check.ROWS]
    assert not set(keys) & earlier and len(set(keys)) == len(keys)
    assert [r[1] for r in check.ROWS].count("fsdp") == 2 and [r[1] for r in check.ROWS].count("ddp") == 1
    assert all(r[4] == 1 for r in check.ROWS)   # one process a row


def test_the_registration_is_gpu_bound_fits_the_card_and_separates_the_two_models():
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    rows = _registered()
    assert list(rows) == [r[0] for r in check.ROWS] and set(reg["rules"]) >= {"S", "M", "reported"}
    for r in rows.values():
        today, old = r["predicted"]["today"], r["predicted"]["old"]
        assert not today["host_bound"] and today["stage_mem_GiB"][0] < 0.75 * 139.8
        assert today["step_ms"] == old["step_ms"]
        if r["mode"] == "fsdp":   # the two models more than the M rule's 10% apart at one row at least, > 5% at each
            assert old["steady_mem_GiB"][0] / today["stage_mem_GiB"][0] - 1 > 0.05
        else:
            assert old["stage_mem_GiB"] == today["stage_mem_GiB"]
    assert max(r["predicted"]["old"]["steady_mem_GiB"][0] / r["predicted"]["today"]["stage_mem_GiB"][0] for r in rows.values()) > 1.1


def test_the_device_script_runs_every_registered_row_once_within_the_budget():
    script = (BUNDLE / "device_run.sh").read_text()
    assert ". calibration/device_lib.sh" in script and "BUDGET_S=${BUDGET_S:-170}" in script
    lines = [x.strip() for x in script.splitlines() if x.strip().startswith("guarded ")]
    assert len(lines) == len(check.ROWS)
    for (name, mode, preset, seq, _), line in zip(check.ROWS, lines, strict=True):
        assert line.startswith(f"guarded {name}-r1 90 $two $step --preset {preset} --shapes {seq}:1 --mode {mode}")


def test_the_rules_and_the_old_models_memory_on_synthetic_documents(tmp_path):
    reg = _registered()
    medians = {n: [r["predicted"]["today"]["step_ms"] * (1.05 if r["mode"] == "fsdp" else 1.10)] for n, r in reg.items()}
    # every peak 2% under today's steady peak: M met for today; the old model's error is its own
    peaks = {n: 0.98 * r["predicted"]["today"]["steady_mem_GiB"][0] for n, r in reg.items()}
    bundle = fake_step_set(tmp_path / "set", BUNDLE / "registered.yaml", medians,
                           lambda name: {"max_memory_allocated_bytes": peaks[name] * 2**30})
    out = check.read_out(bundle)
    row = {r["name"]: r for r in out["rows"]}
    for name, r in reg.items():
        assert row[name]["mem_err"] == [pytest.approx(1 / 0.98 - 1)]
        assert row[name]["mem_err_old"] == [pytest.approx(r["predicted"]["old"]["steady_mem_GiB"][0] / peaks[name] - 1)]
    v = out["verdicts"]
    assert v["fsdp"].startswith("S MET (mean |error| 4.8%, before the fix 4.8%); M MET (max |memory error| 2.0%)")
    assert v["ddp"].startswith("S NOT MET (mean |error| 9.1%") and "before the fix: max |memory error| 2.0% (reported)" in v["ddp"]
    worst = max(row[n]["mem_err_old"][0] for n in reg if reg[n]["mode"] == "fsdp")
    assert f"before the fix: max |memory error| {100 * worst:.1f}% (reported)" in v["fsdp"] and worst > 0.07


def test_a_row_that_did_not_run_leaves_its_mode_incomplete_and_bad_input_is_one_line(tmp_path, capsys):
    reg = _registered()
    medians = {n: [r["predicted"]["today"]["step_ms"]] for n, r in reg.items() if n != "fsdp-3b"}
    bundle = fake_step_set(tmp_path / "set", BUNDLE / "registered.yaml", medians, lambda name: {"max_memory_allocated_bytes": 2**30})
    assert check.read_out(bundle)["verdicts"]["fsdp"].startswith("INCOMPLETE: 1 of 2 rows")
    (bundle / "runs" / "ddp-1.1b-r1.json").write_text("{not json")
    assert check.main([str(bundle)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ddp-1.1b-r1.json" in err
    assert check.main(["--register", str(BUNDLE / "registered.yaml")]) == 2   # never over a registration
