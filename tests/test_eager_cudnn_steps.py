"""Session 39's registered long-sequence eager set (validation/eager_cudnn_steps.py, calibration/h200x2-eager-cudnnstep-
2026-11-29): the old model is the pre-adoption card, the rows are new, GPU-bound and attention-heavy, the device script
runs what is registered, and the read-out's rules on synthetic documents."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import ROOT, fake_step_set, load_script, measured_llm_tokens

from simcluster.llm import attention_kernels
from simcluster.runner.llm_decoder import PRESETS

steps = load_script(ROOT / "validation" / "eager_cudnn_steps.py")
BUNDLE = steps.BUNDLE


def test_the_old_model_is_the_bare_card_the_model_priced_before_the_adoption(monkeypatch):
    row = steps.ROWS[2]   # 64K tokens: the form moves attention most
    today, old = steps.predict(row), steps.predict(row, old=True)
    assert old["step_ms"] != today["step_ms"]   # the switch does something
    kept = attention_kernels.for_kernel
    monkeypatch.setattr(attention_kernels, "for_kernel", lambda gpu, kernel: gpu if kernel == "card" else kept(gpu, kernel))
    bare = steps.predict(row)   # bf03707e^'s for_kernel: 'card' returned the card itself
    assert bare["step_ms"] == old["step_ms"] and bare["attention_ms"] == old["attention_ms"]
    assert steps.predict(row)["step_ms"] == old["step_ms"]
    monkeypatch.undo()
    assert steps.predict(row)["step_ms"] == today["step_ms"]   # the context restores the form


def test_every_row_is_new_to_calibration_and_one_step_a_mode_and_preset_at_a_time():
    earlier = measured_llm_tokens(BUNDLE)
    seen = set()
    for _, mode, preset, seq, _ in steps.ROWS:
        key = (preset, PRESETS[preset]["layers"], seq)   # micro-batch 1: tokens = seq
        assert key not in earlier and key not in seen, (mode, preset, seq)
        seen.add(key)
    assert sorted({r[1] for r in steps.ROWS}) == sorted(steps.MODES)
    assert all(sum(r[1] == m for r in steps.ROWS) == 3 for m in steps.MODES)


def test_the_registration_is_gpu_bound_attention_heavy_and_fits_the_card():
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    rows = reg["rows"]
    assert [r["name"] for r in rows] == [r[0] for r in steps.ROWS]
    assert reg["registered_at_commit"] and "old" in reg["calibration"] and set(reg["rules"]) >= {"S", "M"}
    shares = [r["predicted"]["today"]["attention_share"] for r in rows]
    assert min(shares) >= 0.3 and sum(shares) / len(shares) >= 0.45
    waves = [r["forward_waves"] for r in rows]
    assert any(w == int(w) for w in waves) and any(w != int(w) for w in waves)   # full and partial last waves
    assert {r["head_dim"] for r in rows} == {64, 128}
    for r in rows:
        today, old = r["predicted"]["today"], r["predicted"]["old"]
        assert not today["host_bound"] and today["host_share"] < 0.1
        assert today["stage_mem_GiB"][0] < 0.8 * 139.8   # the H200 card's capacity, with room for the model's error
        assert today["steady_mem_GiB"][0] <= today["stage_mem_GiB"][0]
        assert today["step_ms"] != old["step_ms"] and today["stage_mem_GiB"] == old["stage_mem_GiB"]


def test_the_device_script_runs_every_registered_process():
    script = (BUNDLE / "device_run.sh").read_text()
    assert ". calibration/device_lib.sh" in script and "BUDGET_S" in script and "for r in 1 2;" in script
    lines = [line for line in script.splitlines() if line.strip().startswith(("guarded ", "CUDA_VISIBLE_DEVICES=0 guarded "))]
    for name, mode, preset, seq, procs in steps.ROWS:
        (line,) = [x for x in lines if f" {name}-r$r " in x]
        assert f"--preset {preset} --shapes {seq}:1 --mode {mode}" in line and procs == 2
        assert line.strip().startswith("CUDA_VISIBLE_DEVICES=0") == (mode == "single")
        assert ("$two" in line) == (mode != "single")
        p = PRESETS[preset]
        assert f"{name}:{p['heads']}:{p['kv_heads']}:{p['hidden'] // p['heads']}:{seq}" in script   # the SDPA check's call


def _fake_bundle(tmp_path, medians: dict[str, list[float]], peak_GiB: dict[str, float] | None = None):
    return fake_step_set(tmp_path / "set", BUNDLE / "registered.yaml", medians,
                         lambda name: {"max_memory_allocated_bytes": (peak_GiB or {}).get(name, 1.0) * 2**30})


def _registered():
    return {r["name"]: r for r in yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]}


def test_the_rules_on_synthetic_documents(tmp_path):
    reg = _registered()
    # single and fsdp rows measured 5% slower than registered (S met), ddp 12% slower (not met); peaks at the job peak
    # but for one fsdp row 20% above it (M not met)
    medians = {n: [r["predicted"]["today"]["step_ms"] * f for f in ((1.10, 1.0) if r["mode"] != "ddp" else (1.12, 1.12))]
               for n, r in reg.items()}
    peaks = {n: r["predicted"]["today"]["stage_mem_GiB"][0] for n, r in reg.items()}
    peaks["fsdp-2b"] *= 1.2
    out = steps.read_out(_fake_bundle(tmp_path, medians, peaks))
    row = {r["name"]: r for r in out["rows"]}
    assert row["single-0.5b"]["mean"] == pytest.approx(1.05 * reg["single-0.5b"]["predicted"]["today"]["step_ms"])
    assert row["single-0.5b"]["spread"] == pytest.approx(0.10)
    assert row["single-0.5b"]["err_today"] == pytest.approx(1 / 1.05 - 1)
    assert row["fsdp-2b"]["mem_err"] == [pytest.approx(1 / 1.2 - 1)] * 2 and row["ddp-2b"]["mem_err"] == [0.0, 0.0]
    v = out["verdicts"]
    assert v["single"].startswith("S MET (mean |error| 4.8%") and "M MET (max |memory error| 0.0%)" in v["single"]
    assert v["ddp"].startswith("S NOT MET (mean |error| 10.7%")
    assert "S MET" in v["fsdp"] and "M NOT MET (max |memory error| 16.7%)" in v["fsdp"]
    assert out["sdpa"] == []   # no SDPA check in the bundle: nothing reported


def test_a_row_the_budget_left_at_one_process_counts_and_a_missing_row_leaves_its_mode_incomplete(tmp_path):
    reg = _registered()
    medians = {n: [r["predicted"]["today"]["step_ms"]] * (1 if n == "fsdp-2b" else 2) for n, r in reg.items() if n != "ddp-1.1b"}
    out = steps.read_out(_fake_bundle(tmp_path, medians))
    assert out["verdicts"]["ddp"].startswith("INCOMPLETE: 2 of 3 rows")
    assert out["verdicts"]["fsdp"].startswith("S MET (mean |error| 0.0%")


def test_the_sdpa_check_is_read_against_the_registered_calls(tmp_path):
    reg = _registered()
    bundle = _fake_bundle(tmp_path, {n: [r["predicted"]["today"]["step_ms"]] * 2 for n, r in reg.items()})
    call = reg["ddp-2b"]["predicted"]["today"]["attention_call_ms"]
    (bundle / "runs" / "sdpa.json").write_text(json.dumps({"calls": [
        {"name": "ddp-2b", "fwd_ms": call["fwd"] / 1.1, "bwd_ms": call["bwd"], "kernels": ["aten::_scaled_dot_product_cudnn_attention"]},
        {"name": "fsdp-2b", "error": "OutOfMemoryError"}]}))
    (got,) = steps.read_out(bundle)["sdpa"]
    assert got["name"] == "ddp-2b" and got["err_today"] == (pytest.approx(0.1), pytest.approx(0.0))


def test_bad_input_is_one_line_naming_the_file(tmp_path, capsys):
    reg = _registered()
    bundle = _fake_bundle(tmp_path, {n: [r["predicted"]["today"]["step_ms"]] * 2 for n, r in reg.items()})
    (bundle / "runs" / "single-1.1b-r1.json").write_text("{not json")
    assert steps.main([str(bundle)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "single-1.1b-r1.json" in err
    assert steps.main([str(tmp_path / "nothing")]) == 1 and "registered.yaml: missing" in capsys.readouterr().err
    assert steps.main(["--register", str(BUNDLE / "registered.yaml")]) == 2   # never over a registration
    assert "registrations are never overwritten" in capsys.readouterr().err


# Rows each registered step set gives the band inputs (shape x variant, or a row a shape), once its runs/ exists:
# session 44's pphost / ppcouple, 45's ppblock .. ddpaccum, 46's ppboth .. compileac, 47's zero2c / zero2d / repeats47,
# 48's zero2e / zero2f / zero2g, tp4 / tp4b (runs/host gives no row), compck / compck2 (cold review B48 item 12: one dict)
ONCE_RUN = {f"h200x{g}-{name}-2026-11-30": n for g, name, n in (
    (2, "pphost", 6), (2, "ppcouple", 4),
    (2, "ppblock", 4), (2, "opsplit", 3), (2, "nosync", 6), (2, "ppfree", 4), (2, "ddpaccum", 4),
    (2, "ppboth", 2), (2, "zero2", 6), (2, "compilefsdp", 4), (2, "zero2b", 2), (2, "compileac", 4),
    (2, "zero2c", 2), (2, "zero2d", 2), (2, "repeats47", 2),
    (2, "zero2e", 4), (2, "zero2f", 4), (2, "zero2g", 4), (4, "tp4", 3), (4, "tp4b", 2), (2, "compck", 2), (2, "compck2", 2))}
# session 49's (run and read once on 2026-12-01): hb49's five one-GPU host-bound rows (heldout/eager_hostsingle), x2set49's
# two zero-3, one zero-2 (heldout/eager_nosync) and two compiled FSDP2 rows, with and without checkpointing
# (heldout/eager_compilefsdp), mem49's two compiled FSDP2 rows without checkpointing (heldout/eager_compilefsdp)
ONCE_RUN |= {"h200x1-hb49-2026-12-01": 5, "h200x2-x2set49-2026-12-01": 5, "h200x2-mem49-2026-12-01": 2}
# session 51's (run and read once on 2026-12-01): lab1x51's two compiled + checkpointed one-GPU rows
# (heldout/eager_compilefsdp, part C) and three op-checkpointed rows (heldout/eager_hostsingle, part E)
ONCE_RUN |= {"h200x1-lab1x51-2026-12-01": 5}
# session 52's (run and read once on 2026-12-01): lab1x52's five host-bound one-GPU rows and lseq52's six long-sequence
# one-GPU rows (heldout/eager_hostsingle)
ONCE_RUN |= {"h200x1-lab1x52-2026-12-01": 5, "h200x1-lseq52-2026-12-01": 6}


def test_the_set_enters_the_error_bands_against_the_registered_today_steps(tmp_path):
    """heldout/eager_cudnnstep.py: nothing while the set has not run; then one row per registered row that ran (its
    processes' mean), against `today` (the product's model, registered before the run), flagged by today's share."""
    from collections import Counter

    from simcluster.heldout import eager_cudnnstep, step_sets
    from simcluster.trust.build import eager_residuals

    if not (BUNDLE / "runs").is_dir():
        assert eager_cudnnstep.held_out_rows() == []   # registered, not run: no row in the table
    reg = _registered()
    medians = {n: [r["predicted"]["today"]["step_ms"] * 1.1, r["predicted"]["today"]["step_ms"] * 1.2]
               for n, r in reg.items() if n != "fsdp-2b"}
    rows = eager_cudnnstep.held_out_rows(_fake_bundle(tmp_path, medians))
    assert len(rows) == 8 and {r["bundle"] for r in rows} == {"set"}
    both = step_sets.all_held_out_rows()   # every REGISTERED_STEP_SETS set as it ran, one source each
    ran = {"h200x2-eager-cudnnstep-2026-11-29": 9, "h200x2-eager-fsdpmem-2026-11-29": 3, "h200x2-eager-fsdpstep-2026-11-30": 5,
           "h200x2-eager-today-2026-11-30": 10}
    ran["h200x2-hostsingle-2026-11-30"] = 4   # session 44's one-GPU hostsingle set (heldout/eager_hostsingle), run once
    ran["h200x2-opcheck-2026-11-30"] = 4      # session 44's opcheck set, read the same way, run once
    for name, n in ONCE_RUN.items():   # every other registered set's rows, once its runs/ exists
        if (ROOT / f"calibration/{name}/runs").is_dir():
            ran[name] = n
    assert Counter(r["bundle"] for r in both) == ran
    for r in rows:
        x = reg[next(n for n in reg if r["label"].startswith(f"{reg[n]['preset']} {reg[n]['mode']} seq {reg[n]['seq']} "))]
        assert r["predicted_s"] == x["predicted"]["today"]["step_ms"] / 1e3 and r["host_bound"] is False
        assert r["measured_s"] == pytest.approx(1.15 * r["predicted_s"]) and r["host_flag"] == "registered"
    regimes = Counter(res.regime.split(" | ")[2] for res in eager_residuals(rows))
    assert regimes == {"single": 3, "DDP": 3, "FSDP": 2}


def test_a_registration_without_the_shipped_prediction_is_a_one_line_error(tmp_path):
    from simcluster.heldout import eager_cudnnstep

    bundle = _fake_bundle(tmp_path, {})
    doc = yaml.safe_load((bundle / "registered.yaml").read_text())
    del doc["rows"][2]["predicted"]["today"]
    (bundle / "registered.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(steps.SimclusterError, match=r"registered.yaml: rows\[2\]: no predicted.today step") as err:
        eager_cudnnstep.held_out_rows(bundle)
    assert "\n" not in str(err.value)


def test_a_one_process_row_shows_its_within_process_range_not_a_zero_spread(tmp_path):
    reg = _registered()
    bundle = _fake_bundle(tmp_path, {n: [r["predicted"]["today"]["step_ms"]] * (1 if n == "fsdp-2b" else 2)
                                     for n, r in reg.items()})
    doc = json.loads((bundle / "runs" / "fsdp-2b-r1.json").read_text())
    doc["shapes"][0]["step_times_s"] = [1.0, 1.1, 1.05]
    (bundle / "runs" / "fsdp-2b-r1.json").write_text(json.dumps(doc))
    row = {r["name"]: r for r in steps.read_out(bundle)["rows"]}
    assert row["fsdp-2b"]["spread"] is None and steps.spread_text(row["fsdp-2b"]) == "(10.0%)"
    assert steps.spread_text(row["single-0.5b"]) == "0.0%"
    assert steps.spread_text({**row["fsdp-2b"], "within": None}) == "-"   # no step samples in the document


def test_a_non_numeric_registered_step_is_one_line_naming_the_row(tmp_path, capsys):
    reg = _registered()
    bundle = _fake_bundle(tmp_path, {n: [r["predicted"]["today"]["step_ms"]] * 2 for n, r in reg.items()})
    doc = yaml.safe_load((bundle / "registered.yaml").read_text())
    doc["rows"][2]["predicted"]["today"]["step_ms"] = "fast"
    (bundle / "registered.yaml").write_text(yaml.safe_dump(doc))
    assert steps.main([str(bundle)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rows[2].predicted.today" in err and "registered.yaml" in err
