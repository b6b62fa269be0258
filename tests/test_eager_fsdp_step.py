"""Session 40 fsdp2time: the registered set of the FSDP2 bf16-block step candidate (eager.bf16_step, read once: KEEP;
taken out of the product in session 41) -- validation/eager_fsdp_step.py, calibration/h200x2-eager-fsdpstep-2026-11-30:
the rows are new, the device script runs what is registered, the read-out's rule on synthetic documents from the
registered columns, `--register` refused, the set's rows in the `llm eager` bands."""

from __future__ import annotations

import gzip
import json
import statistics
from collections import Counter

import pytest
import yaml
from conftest import ROOT, bundles_run_after, fake_step_set, load_script, measured_llm_tokens, runs_started

from simcluster.llm import eager
from simcluster.llm.spec import ParallelSpec

check = load_script(ROOT / "validation" / "eager_fsdp_step.py")
BUNDLE = check.BUNDLE
LATER = bundles_run_after(BUNDLE)   # the repeats and sets run after this one (conftest: by their `started` stamps)
NOISE = ROOT / "calibration" / "h200x2-eager-fsdpnoise-2026-11-30"   # the lead's noise repeats of its rows, run after it


def test_the_candidates_are_out_of_the_product_and_register_refuses_in_one_line_naming_the_registered_file(capsys):
    for name in ("bf16_step", "fsdp2_copy_step"):
        assert not hasattr(eager, name)
    fw = eager.torch_framework(ParallelSpec(dp=2, zero=3))
    assert not hasattr(fw, "bf16_step") and not hasattr(fw, "fsdp2_copies") and fw.residual_bytes == 4
    assert check.main(["--register", str(ROOT / "nowhere" / "registered.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("error: the candidate eager.bf16_step was removed at ")
    assert str(BUNDLE / "registered.yaml") in err


def test_the_later_bundles_are_found_by_their_start_and_the_rule_misses_none(tmp_path):
    """Cold read D 11: the repeats run after this set are found by one rule (conftest.bundles_run_after), not named by
    hand. The lead's noise repeats share this set's shapes: a rule that missed them fails here."""
    assert NOISE in LATER and BUNDLE not in LATER
    assert all(runs_started(b) > runs_started(BUNDLE) for b in LATER)
    # the rule on a synthetic calibration/ folder: before, the set, after (own folder or runs/), no stamp
    cal = tmp_path / "calibration"
    for name, where, stamp in (("before", "runs", "2026-11-29T23:59:59Z"), ("set", "runs", "2026-11-30T00:36:01Z"),
                               ("after", "runs", "2026-11-30T01:22:08Z"), ("after2", ".", "2026-12-01T00:00:00Z"),
                               ("none", "runs", None)):
        (cal / name / where).mkdir(parents=True, exist_ok=True)
        text = "abc123 (main, as given by the caller)" + (f"; started {stamp}" if stamp else "")
        (cal / name / where / "commit.txt").write_text(text + "\n")
    assert [b.name for b in bundles_run_after(cal / "set", cal)] == ["after", "after2"]
    with pytest.raises(ValueError, match="none: no `started` stamp"):
        bundles_run_after(cal / "none", cal)
    # session 58: a set from before the stamps ran before every stamped bundle, when the caller says so
    assert [b.name for b in bundles_run_after(cal / "none", cal, unstamped_first=True)] == ["after", "after2", "before", "set"]


def test_every_row_is_new_to_calibration_with_one_repeated_fsdp_row_and_one_ddp_control():
    earlier = measured_llm_tokens(BUNDLE, *LATER)
    from simcluster.runner.llm_decoder import PRESETS
    keys = [(preset, PRESETS[preset]["layers"], seq * mb) for _, _, preset, seq, _, mb in check.ROWS]
    assert not set(keys) & earlier, f"measured before this set ran, or run after it and missed by bundles_run_after: {set(keys) & earlier}"
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


def test_the_fsdpstep_sets_rows_enter_the_bands_against_their_registered_today_steps():
    from simcluster.heldout import eager_cudnnstep
    from simcluster.strict import load_yaml
    from simcluster.trust.build import eager_residuals

    rows = eager_cudnnstep.held_out_rows(BUNDLE)
    reg = {f"{r['preset']} {r['mode']} seq {r['seq']} mb {r['micro_batch']}": r for r in load_yaml(BUNDLE / "registered.yaml")["rows"]}
    assert len(rows) == 5 and {r["bundle"] for r in rows} == {BUNDLE.name}
    got = {r["label"]: r for r in rows}
    assert set(got) == set(reg)
    for label, r in got.items():
        assert r["predicted_s"] == reg[label]["predicted"]["today"]["step_ms"] / 1e3 and r["host_flag"] == "registered"
    # fsdp-0.5b: the mean of its two processes; fsdp-0.8b: its timed process only (the profiled one is no process)
    assert got["0.5b fsdp seq 5120 mb 2"]["measured_s"] == pytest.approx(statistics.mean([0.12134, 0.13776]), rel=2e-3)
    assert got["0.8b fsdp seq 4096 mb 3"]["measured_s"] == pytest.approx(0.1880, rel=2e-3)
    assert Counter(res.regime.split(" | ")[2] for res in eager_residuals(rows)) == {"FSDP": 4, "DDP": 1}


def test_the_registered_result_reads_keep_from_the_registered_columns():
    """The set as it ran (runs/), read from registered.yaml's columns (the candidate is no longer computable): the
    README's KEEP, today 5.8% and the candidate 9.1% over the four FSDP2 rows."""
    out = check.read_out(BUNDLE)
    assert out["verdict"].startswith("KEEP: mean |error| today 5.8%, candidate 9.1% ")
    assert [round(100 * r["err_cand"], 1) for r in out["rows"]] == [-18.8, -5.3, -7.7, -4.5, -1.8]
