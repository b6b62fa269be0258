"""Session 39's registered pphost set (validation/eager_pp_host.py, calibration/h200x2-eager-pphost-2026-11-29): new
shapes, the device script runs what is registered, and the read-out's rules on synthetic documents."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from conftest import ROOT, load_script, measured_llm_tokens

from simcluster.runner.llm_decoder import PRESETS

pphost = load_script(ROOT / "validation" / "eager_pp_host.py")
BUNDLE = ROOT / "calibration" / "h200x2-eager-pphost-2026-11-29"


def test_every_row_is_new_to_calibration_per_micro_batch_and_per_pipeline_step():
    earlier = measured_llm_tokens(BUNDLE)
    for _, mode, preset, seq, mb, m, _ in pphost.ROWS:
        layers = PRESETS[preset]["layers"]
        assert (preset, layers, seq * mb) not in earlier, (mode, preset)
        assert (preset, layers, seq * mb * m) not in earlier, (mode, preset)   # a pipeline's step tokens (m = 1: the same)


def test_the_registration_holds_every_row_with_both_models_and_the_flag_splits_the_rows():
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    rows = reg["rows"]
    assert [r["name"] for r in rows] == [r[0] for r in pphost.ROWS]
    flags = {r["name"]: r["predicted"]["today"]["host_bound"] for r in rows}
    assert sum(flags.values()) == 4 and len(flags) == 8   # both sides of the flag, pipelines on both
    assert flags["pp-1f1b-1.1b"] and flags["pp-gpipe-1.1b"] and not flags["pp-1f1b-2b"] and not flags["pp-gpipe-2b"]
    for r in rows:
        today, old = r["predicted"]["today"], r["predicted"]["old"]
        if r["mode"].startswith("pp") and today["host_bound"]:   # the change under test moves these, and by much
            assert today["step_ms"] < 0.9 * old["step_ms"]
        elif not r["mode"].startswith("pp"):
            assert today["step_ms"] == old["step_ms"]   # no pipeline: nothing of session 39 applies


def test_with_the_cudnn_form_refused_the_product_computes_the_registered_old_step_to_the_digit(monkeypatch):
    """Session 39 took the candidate (registered "today") back out: with session 39's cuDNN attention form refused at
    every length (the card's curve for attention, as when the set was registered), the product's model is main
    a3c27932's arithmetic, registered as "old", to the digit (step, host share, flag, breakdown)."""
    from simcluster.llm import cudnn_schedule

    monkeypatch.setattr(cudnn_schedule, "MIN_SEQ", 1 << 40)
    from simcluster.llm.eager import leases_unread

    with leases_unread():   # registered before the pooled FSDP2 host term (session 43, fsdphost2): the one lease's fit
        got_rows = {row[0]: pphost.predict(row) for row in pphost.ROWS}
    reg = _registered()
    for row in pphost.ROWS:
        got, old = got_rows[row[0]], reg[row[0]]["predicted"]["old"]
        assert {k: got[k] for k in old} == old, row[0]


def test_the_shipped_product_stays_within_a_percent_of_the_registered_old_step():
    """The product as shipped (the cuDNN form on): within 0.8% of `old` on every row, the same host-bound flag; the
    rows where the form reaches attention (single-0.8b, fsdp-2b, 2560 tokens) move, the others do not."""
    from simcluster.llm.eager import leases_unread

    with leases_unread():   # registered before the pooled FSDP2 host term (session 43, fsdphost2): the one lease's fit
        got_rows = {row[0]: pphost.predict(row) for row in pphost.ROWS}
    reg = _registered()
    moved = {}
    for row in pphost.ROWS:
        got, old = got_rows[row[0]], reg[row[0]]["predicted"][pphost.SHIPPED]
        assert got["host_bound"] == old["host_bound"], row[0]
        moved[row[0]] = round(100 * (got["step_ms"] / old["step_ms"] - 1), 2)
    assert max(abs(v) for v in moved.values()) <= 0.8, moved
    assert {n for n, v in moved.items() if v} == {"single-0.8b", "fsdp-2b"}, moved


def test_the_registration_is_frozen(tmp_path, capsys):
    """The set has run: --register to a new path is refused in one line, nothing written."""
    target = tmp_path / "registered.yaml"
    assert pphost.main(["--register", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "frozen" in err and not target.exists()


def test_the_set_reads_as_its_readme_says_without_the_candidate():
    result = pphost.read_out(BUNDLE)   # the own-fit column from runs/host: the product's model only
    rows = {r["name"]: r for r in result["rows"]}
    got = {n: round(100 * r["err_own_old"], 1) for n, r in rows.items() if "err_own_old" in r}
    assert got == {"pp-1f1b-1.1b": 6.0, "pp-gpipe-1.1b": 4.2, "pp-1f1b-2b": -1.8, "pp-gpipe-2b": -2.4, "single-1.1b": 3.4,
                   "single-0.8b": -0.3}   # the README's "own old" column, but single-0.8b (2560 tokens: -1.1% there)
    # moved by session 39's cuDNN form for the card's attention, adopted after this set's read
    assert not any("err_own_today" in r for r in rows.values())
    v = result["verdicts"]
    assert v["A1"] == "MET: mean |error| 2.4% over 2 rows" and v["B"].startswith("MET: median spread host-bound 8.7%")
    assert v["A2"].startswith("not judged here: 2 host-bound pipeline rows") and "8cebb7bc" in v["A2"]


def test_the_device_script_runs_every_registered_process_and_the_host_runs():
    script = (BUNDLE / "device_run.sh").read_text()
    assert ". calibration/device_lib.sh" in script and "BUDGET_S" in script
    lines = [line for line in script.splitlines() if line.strip().startswith("guarded ")]
    for name, mode, preset, seq, mb, m, procs in pphost.ROWS:
        (line,) = [x for x in lines if f" {name}-r$r " in x]
        assert f"--preset {preset} --shapes {seq}:{mb}" in line
        if mode.startswith("pp"):
            assert f"$pp {mode.split('-')[1]}" in line and "--microbatches 4" in script and m == 4
        else:
            assert f"--mode {mode}" in line
        assert procs == (3 if name == "pp-1f1b-1.1b" else 2)   # the loop: 2 rounds of every row, a third of that one
    assert "for layers in 2 8 32" in script and "host/single-L$layers" in script


def _fake_bundle(tmp_path, medians: dict[str, list[float]]):
    bundle = tmp_path / "set"
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    for name, meds in medians.items():
        for k, ms in enumerate(meds, 1):
            doc = {"shapes": [{"status": "ok", "median_step_s": ms / 1e3}]}
            (bundle / "runs" / f"{name}-r{k}.json").write_text(json.dumps(doc))
    return bundle


def _registered():
    return {r["name"]: r for r in yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]}


def test_the_rules_on_synthetic_documents(tmp_path):
    reg = _registered()
    # every row measured at its registered step x (1 + wobble): GPU-bound rows 0.2% apart, host-bound rows 10% apart
    medians = {}
    for name, r in reg.items():
        p = r["predicted"]["today"]["step_ms"]
        wobble = 0.10 if r["predicted"]["today"]["host_bound"] else 0.002
        medians[name] = [p, p * (1 + wobble)] + ([p * (1 + wobble / 2)] if r["processes"] == 3 else [])
    bundle = _fake_bundle(tmp_path, medians)
    own = {n: {"today": r["predicted"]["today"]["step_ms"], "old": r["predicted"]["old"]["step_ms"]}
           for n, r in reg.items() if r["mode"].startswith("pp") or r["mode"] == "single"}
    got = pphost.read_out(bundle, own)["verdicts"]
    assert got["A1"].startswith("MET") and got["A2"].startswith("MET") and got["B"].startswith("MET"), got
    # the old model's step as the own-fit variant's today: A2 fails (not better than old, and outside the spread)
    worse = {n: {"today": v["old"], "old": v["old"]} for n, v in own.items()}
    assert pphost.read_out(bundle, worse)["verdicts"]["A2"].startswith("NOT MET")
    # GPU-bound pipelines measured 20% slower than today's model: A1 fails; every row equally noisy: B fails
    slow = {n: [x * (1.25 if reg[n]["mode"].startswith("pp") and not reg[n]["predicted"]["today"]["host_bound"] else 1.0)
                for x in meds] for n, meds in medians.items()}
    even = {n: [meds[0], meds[0] * 1.05] + ([meds[0]] if len(meds) == 3 else []) for n, meds in medians.items()}
    assert pphost.read_out(_fake_bundle(tmp_path / "a", slow), own)["verdicts"]["A1"].startswith("NOT MET")
    assert pphost.read_out(_fake_bundle(tmp_path / "b", even), own)["verdicts"]["B"].startswith("NOT MET")


def test_a_missing_run_or_host_fit_is_a_one_line_error(tmp_path, capsys):
    reg = _registered()
    medians = {n: [100.0, 101.0] for n in reg}
    medians.pop("fsdp-2b")
    bundle = _fake_bundle(tmp_path, medians)
    assert pphost.main([str(bundle)]) == 1   # no runs/host: the own-fit variant cannot be made
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "host" in err
    with pytest.raises(pphost.SimclusterError, match="fsdp-2b-r1.json: fsdp-2b has 0 process"):
        pphost.read_out(bundle, {})
    (bundle / "runs" / "ddp-0.3b-r1.json").write_text("{not json")
    with pytest.raises(pphost.SimclusterError, match="ddp-0.3b-r1.json: no timed shape"):
        pphost.read_out(bundle, {})


def test_the_set_enters_the_error_bands_against_the_registered_old_steps():
    """heldout/eager_pphost.py: one row per registered row (its processes' mean), against `old` (the product's model,
    registered before the run), flagged by old's registered share; `today` (the candidate) only where it equals old."""
    from collections import Counter

    from simcluster.heldout import eager_pphost
    from simcluster.llm.host_bound import is_host_bound
    from simcluster.trust.build import eager_residuals

    reg = _registered()
    rows = eager_pphost.held_out_rows()
    assert len(rows) == len(reg) == 8 and {r["bundle"] for r in rows} == {BUNDLE.name}
    for r, (name, x) in zip(rows, reg.items(), strict=True):
        old, today = x["predicted"]["old"], x["predicted"]["today"]
        assert r["predicted_s"] == old["step_ms"] / 1e3 and r["host_bound"] == old["host_bound"] == is_host_bound(old["host_share"])
        assert old["host_bound"] == today["host_bound"]   # the flag is the same under either registered model
        if not x["mode"].startswith("pp"):
            assert today == old, name
        meds = pphost.process_medians(BUNDLE, x)
        assert r["measured_s"] == pytest.approx(sum(meds) / len(meds) / 1e3, rel=1e-12) and len(meds) == x["processes"]
    regimes = Counter(res.regime.split(" | ")[2] for res in eager_residuals(rows))
    assert regimes == {"PP+host-bound": 2, "PP": 2, "single+host-bound": 1, "single": 1, "DDP+host-bound": 1, "FSDP": 1}
    errors = {r["label"].split(" seq")[0]: round(100 * (r["predicted_s"] / r["measured_s"] - 1), 1) for r in rows}
    assert errors["1.1b pp-1f1b"] == -9.1 and errors["1.1b pp-gpipe"] == -10.6   # the README's `old` column


def test_a_registration_without_the_shipped_prediction_is_a_one_line_error(tmp_path):
    from simcluster.heldout import eager_pphost

    doc = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    del doc["rows"][2]["predicted"]["old"]
    (tmp_path / "registered.yaml").write_text(yaml.safe_dump(doc))
    (tmp_path / "runs").symlink_to(BUNDLE / "runs")   # the set's measurements: the first two rows read
    with pytest.raises(pphost.SimclusterError, match=r"registered.yaml: rows\[2\]: no predicted.old step") as err:
        eager_pphost.held_out_rows(tmp_path)
    assert "\n" not in str(err.value)
