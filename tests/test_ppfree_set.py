"""Session 45's ppfree set (calibration/h200x2-ppfree-2026-11-30, validation/ppfree.py): the registration against a
fresh --register at its commit, the device script against the registered rows, the shapes new to calibration/, and a
synthetic read where every process ran at the term's step: rule A adopts the term."""

from __future__ import annotations

import json
import re
import shutil

import yaml
from conftest import ROOT, load_script
from test_ppblock_set import rank_timelines
from test_pphost_set import PRODUCT_HOST, doc

BUNDLE = ROOT / "calibration" / "h200x2-ppfree-2026-11-30"


def script():
    return load_script("validation/ppfree.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = registered()
    monkeypatch.setenv("REGISTER_COMMIT", reg["registered_at_commit"])
    assert script().main(["--register", str(tmp_path / "again.yaml")]) == 0
    assert (tmp_path / "again.yaml").read_text() == (BUNDLE / "registered.yaml").read_text()


def test_the_device_script_runs_the_registered_rows_host_probe_first_timeline_in_round_one():
    text = (BUNDLE / "device_run.sh").read_text()
    specs = re.search(r'^  for spec in (.*); do$', text, re.M).group(1)
    assert [tuple(s.split()) for s in re.findall(r'"([^"]+)"', specs)] == [(p, f"{s}:{mb}") for p, s, mb in script().SHAPES]
    assert "guarded pp-1f1b-$1-r$r 80 $two $step 1f1b --preset $1 --shapes $2 $tl" in text
    assert "guarded pp-gpipe-$1-r$r 80 $two $step gpipe --preset $1 --shapes $2 $tl" in text
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == ["1", "2"] and script().PROCESSES == 2
    assert '[ "$r" = 1 ] && tl="--timeline"' in text and script().TIMELINE_ROUNDS == (1,)
    step = re.search(r'^step="(.*)"$', text, re.M).group(1)
    assert f"--warmup {script().WARMUP} --steps {script().STEPS} " in step and "--microbatches 4" in step
    assert "--timeline" not in step
    assert re.findall(r"^host (\d+)$", text, re.M) == ["2", "32"] and text.index("host 32") < text.index("for r in")
    product = (PRODUCT_HOST / "device_run.sh").read_text()
    assert re.search(r'^arch="(.*)"$', text, re.M).group(1) == re.search(r'^arch="(.*)"$', product, re.M).group(1) + " --profile 0"
    budget = int(re.search(r"BUDGET_S:-(\d+)", text).group(1))
    assert budget + 80 <= 280


def test_the_registered_shapes_are_new_to_calibration_per_micro_batch_and_per_step():
    from conftest import measured_llm_tokens, registered_tokens

    rows = registered()["rows"]
    earlier = measured_llm_tokens(BUNDLE)
    assert registered_tokens(rows) & earlier == set()
    assert registered_tokens([r | {"micro_batch": r["micro_batch"] * r["microbatches"]} for r in rows]) & earlier == set()
    assert {r["seq"] for r in rows} <= {640, 2176, 2752, 3136}   # session 45's seqs for this helper


def synthetic(tmp_path, model: str, timeline: str | None = None, spread: float = 0.004):
    """Every process at the registered `model`'s step, the rounds `spread` either side; with `timeline` the first round's
    processes carry both ranks' timelines (test_ppblock_set.rank_timelines: series, free or half), else none (rules K,
    W, V, R: no data)."""
    bundle = tmp_path / f"{model}{timeline or ''}{spread}"
    (bundle / "runs" / "host").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    for row in registered()["rows"]:
        p = row["predicted"]
        for k in range(1, row["processes"] + 1):
            d = doc(row, p[model]["step_ms"] / 1e3 * (1 + spread * (-1) ** k), p["product"]["peak_mem_GiB"])
            if timeline and k in script().TIMELINE_ROUNDS:
                shape = d["shapes"][0]
                shape["step_times_s"] = [shape["median_step_s"]] * 12
                for rank, tl in zip(shape["ranks"], rank_timelines(row, timeline), strict=True):
                    rank["timeline"] = tl
            (bundle / "runs" / f"{row['name']}-r{k}.json").write_text("torchrun noise\n" + json.dumps(d))
    for path in sorted(PRODUCT_HOST.glob("single-L*.json")):
        shutil.copy(path, bundle / "runs" / "host" / path.name)
    return bundle


def test_rule_a_ships_the_model_the_steps_follow(tmp_path):
    for model, word in (("term", "ADOPT TERM"), ("free", "ADOPT FREE"), ("product", "KEEP SERIES")):
        v = script().read_out(synthetic(tmp_path, model))["verdicts"]
        assert v["A"].startswith(word + ":"), (model, v["A"])
        assert v["K"].startswith("NO DATA") and v["R"].startswith("NO DATA")


def test_loud_processes_read_noise_whichever_model_the_steps_follow(tmp_path):
    """Rule A's NOISE, the word the set read (review B45, 8): the two rounds 25% either side of the term's steps (the
    term's errors -20% and +33%), N above the 8% target: no switch, whatever the models' errors."""
    v = script().read_out(synthetic(tmp_path, "term", spread=0.25))["verdicts"]
    assert "ABOVE the 8% target" in v["N"], v["N"]
    assert v["A"].startswith("NOISE: mean |error| product") and v["A"].endswith("follows: " + script().FOLLOWS["NOISE"]), v["A"]
    assert v["T"].startswith("the term mean |error| 26.7% (pp-1f1b 26.7%, pp-gpipe 26.7%); UNDECIDED:"), v["T"]


def test_the_first_rounds_timelines_read_k_and_the_stage_starts(tmp_path):
    v = script().read_out(synthetic(tmp_path, "free", "free"))["verdicts"]
    assert v["A"].startswith("ADOPT FREE:") and v["K"].startswith("FREE:"), (v["A"], v["K"])
    assert v["V"].startswith("WITHIN: the recorded steps +0.0% against the unrecorded (mean over 4 processes"), v["V"]
    assert v["R"] == "stage 1 starts its step (ms against stage 0): " + ", ".join(
        f"{r['name']} +0.0" for r in registered()["rows"])


def test_the_set_that_ran_enters_the_error_bands_as_four_pp_host_bound_rows_against_the_product():
    """Session 45's ppfree set, run once: one row per (shape, schedule), its processes' mean against the registered
    product (the hosts in series, as shipped), regime PP+host-bound at 2 GPUs."""
    from simcluster.heldout import eager_pphost, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_pphost.PP_FREE_BUNDLE in step_sets.STEP_SET_BUNDLES
    bundle = ROOT / eager_pphost.PP_FREE_BUNDLE
    if not (bundle / "runs").is_dir():
        assert eager_pphost.s44_rows(bundle) == []
        return
    rows = eager_pphost.s44_rows(bundle)
    regs = {f"{r['preset']} {r['mode']} seq {r['seq']}": r["predicted"]["product"]["step_ms"] / 1e3
            for r in yaml.safe_load((bundle / "registered.yaml").read_text())["rows"]}
    assert len(rows) == 4
    for r in rows:
        assert r["predicted_s"] == regs[r["label"].split(" mb ")[0]] and r["host_bound"] and r["pp"] == 2
    assert {res.regime.split(" | ")[2] for res in eager_residuals(rows)} == {"PP+host-bound"}
