"""Session 46's ppboth set (calibration/h200x2-ppboth-2026-11-30, validation/ppboth.py): the registration against a
fresh --register at its commit, the device script against the registered rows and their ABBA launch positions with no
timeline recorder, the shapes new to calibration/, synthetic reads where every process ran at one model's step (rule A
ships it; loud processes read NOISE; a drift over the lease reads in rule D), and the error-band wiring."""

from __future__ import annotations

import json
import re
import shutil

import yaml
from conftest import ROOT, fresh_register_equals, load_script
from test_pphost_set import PRODUCT_HOST, doc

BUNDLE = ROOT / "calibration" / "h200x2-ppboth-2026-11-30"
SEQS = {576, 1600, 2880, 3264}   # session 46's seqs for this helper


def script():
    return load_script("validation/ppboth.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)


def test_the_device_script_runs_the_registered_rows_in_abba_order_host_probe_first_no_recorder():
    s, text = script(), (BUNDLE / "device_run.sh").read_text()
    assert "--timeline" not in text
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == [str(k) for k in range(1, s.PROCESSES + 1)]
    assert '  order="1f1b gpipe"\n  [ $((r % 2)) = 0 ] && order="gpipe 1f1b"\n' in text
    (preset, seq, mb), = s.SHAPES
    assert f"    guarded pp-$s-{preset}-r$r 80 $two $step $s --preset {preset} --shapes {seq}:{mb}\n" in text
    # the launch order the script makes, against each registered process's position
    order = [(f"pp-{m}-{preset}", r) for r in range(1, s.PROCESSES + 1)
             for m in (("1f1b", "gpipe") if r % 2 else ("gpipe", "1f1b"))]
    for row in registered()["rows"]:
        assert row["positions"] == [order.index((row["name"], k)) + 1 for k in range(1, row["processes"] + 1)]
    step = re.search(r'^step="(.*)"$', text, re.M).group(1)
    assert f"--warmup {s.WARMUP} --steps {s.STEPS} " in step and f"--microbatches {s.MICROBATCHES}" in step
    assert re.findall(r"^host (\d+)$", text, re.M) == ["2", "32"] and text.index("host 32") < text.index("for r in")
    product = (PRODUCT_HOST / "device_run.sh").read_text()
    assert re.search(r'^arch="(.*)"$', text, re.M).group(1) == re.search(r'^arch="(.*)"$', product, re.M).group(1) + " --profile 0"
    assert int(re.search(r"BUDGET_S:-(\d+)", text).group(1)) + 80 <= 300


def test_the_registered_shapes_are_new_to_calibration_per_micro_batch_and_per_step():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = registered()["rows"]
    earlier = measured_llm_tokens(BUNDLE)
    assert registered_tokens(rows) & earlier == set()
    assert registered_tokens([r | {"micro_batch": r["micro_batch"] * r["microbatches"]} for r in rows]) & earlier == set()
    assert {r["seq"] for r in rows} <= SEQS
    assert seqs_named_elsewhere(BUNDLE, {r["seq"] for r in rows}) == []


def synthetic(tmp_path, model: str, spread: float = 0.004, drift: float = 0.0):
    """Every process at the registered `model`'s step, alternately `spread` either side, times (1 + drift) per launch
    position from the middle of the ten (5.5); the product host folder's single-mode runs as this lease's probe."""
    bundle = tmp_path / f"{model}{spread}{drift}"
    (bundle / "runs" / "host").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    for row in registered()["rows"]:
        p = row["predicted"]
        for k in range(1, row["processes"] + 1):
            t = p[model]["step_ms"] / 1e3 * (1 + spread * (-1) ** k) * (1 + drift) ** (row["positions"][k - 1] - 5.5)
            d = doc(row, t, p["product"]["peak_mem_GiB"])
            (bundle / "runs" / f"{row['name']}-r{k}.json").write_text("torchrun noise\n" + json.dumps(d))
    for path in sorted(PRODUCT_HOST.glob("single-L*.json")):
        shutil.copy(path, bundle / "runs" / "host" / path.name)
    return bundle


def test_rule_a_ships_the_model_the_steps_follow_with_this_sets_follows(tmp_path):
    s = script()
    for model, word in (("term", "ADOPT TERM"), ("free", "ADOPT FREE"), ("product", "KEEP SERIES")):
        v = s.read_out(synthetic(tmp_path, model))["verdicts"]
        assert v["A"].startswith(word + ":") and v["A"].endswith("follows: " + s.FOLLOWS[word]), (model, v["A"])
        assert v["X"].startswith("NONE") and "below the 8% target" in v["N"] and "(8 dof)" in v["N"], v["N"]


def test_loud_processes_read_noise_whichever_model_the_steps_follow(tmp_path):
    v = script().read_out(synthetic(tmp_path, "term", spread=0.25))["verdicts"]
    assert "ABOVE the 8% target" in v["N"] and v["A"].startswith("NOISE:"), (v["N"], v["A"])


def test_a_drift_over_the_lease_reads_in_rule_d_and_balanced_positions_keep_rule_a(tmp_path):
    """1% a position about the middle (9% from the first process to the last): D reads it; the ABBA order puts both
    schedules' mean position within 0.2 of each other, so the term's steps are still read as the term's."""
    v = script().read_out(synthetic(tmp_path, "term", spread=0.0, drift=0.01))["verdicts"]
    assert v["D"].startswith("reported: drift +1.00% per position over 10 processes"), v["D"]
    assert v["D"].endswith("mean position pp-1f1b 5.4, pp-gpipe 5.6"), v["D"]
    assert v["A"].startswith("ADOPT TERM:"), v["A"]


def test_the_set_enters_the_error_bands_as_pp_host_bound_rows_against_the_product():
    """Session 46's ppboth set: once run, one row per schedule, its processes' mean against the registered product (the
    hosts in series, as shipped), regime PP+host-bound at 2 GPUs; no row before the run."""
    from simcluster.heldout import eager_pphost, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_pphost.PP_BOTH_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_pphost.PP_BOTH_BUNDLE
    if not (BUNDLE / "runs").is_dir():
        assert eager_pphost.s44_rows(BUNDLE) == []
        return
    rows = eager_pphost.s44_rows(BUNDLE)
    regs = {f"{r['preset']} {r['mode']} seq {r['seq']}": r["predicted"]["product"]["step_ms"] / 1e3 for r in registered()["rows"]}
    assert len(rows) == 2
    for r in rows:
        assert r["predicted_s"] == regs[r["label"].split(" mb ")[0]] and r["host_bound"] and r["pp"] == 2
    assert {res.regime.split(" | ")[2] for res in eager_residuals(rows)} == {"PP+host-bound"}


def test_a_synthetic_run_enters_the_error_bands_through_s44_rows(tmp_path):
    """The wiring before the run: a synthetic bundle of this registration read by s44_rows gives the two rows at the
    registered product step, each the mean of its five processes."""
    from simcluster.heldout import eager_pphost

    rows = eager_pphost.s44_rows(synthetic(tmp_path, "free"))
    assert len(rows) == 2 and all(r["host_bound"] and r["pp"] == 2 for r in rows)
    for r, reg in zip(rows, registered()["rows"], strict=True):
        assert r["predicted_s"] == reg["predicted"]["product"]["step_ms"] / 1e3
        assert abs(r["measured_s"] / (reg["predicted"]["free"]["step_ms"] / 1e3) - 1) < 0.002
