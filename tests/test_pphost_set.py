"""Session 44's PP+host-bound set (calibration/h200x2-pphost-2026-11-30, validation/pphost.py): the registration against
a fresh --register at its commit, the device script against the registered rows, and synthetic runs through the rules
N, B, M, C, P, H, O and D."""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest
import yaml
from conftest import ROOT, load_script

from simcluster.errors import SimclusterError

BUNDLE = ROOT / "calibration" / "h200x2-pphost-2026-11-30"
PRODUCT_HOST = ROOT / "calibration" / "h200x2-llm-host-2026-11-23"     # the product's single host fit (21.0 us per kernel)
SLOW_HOST = ROOT / "calibration" / "h200x2-llm-host-2026-11-27"        # 26.8 us per kernel


def script():
    return load_script("validation/pphost.py")


def doc(row: dict, t: float, peak_gib: float) -> dict:
    """An llm-step document of a registered pipeline row's process: rank 0's median step t (s) and peak (GiB)."""
    shape = {"seq": row["seq"], "micro_batch": row["micro_batch"], "microbatches": row["microbatches"], "status": "ok",
             "median_step_s": t, "host_issue_median_s_by_rank": [0.9 * t, 0.8 * t], "host_cpu_median_s_by_rank": [0.85 * t, None],
             "step_times_s": [t] * 10, "max_memory_allocated_bytes": int(peak_gib * 2**30),
             "ranks": [{"rank": 0, "max_memory_allocated_bytes": int(peak_gib * 2**30)},
                       {"rank": 1, "max_memory_allocated_bytes": int(peak_gib * 2**30)}]}
    schedule = {"pp-1f1b": "Schedule1F1B", "pp-gpipe": "ScheduleGPipe"}[row["mode"]]
    return {"tool": "llm-step", "format": 1, "mode": "pp", "world_size": 2, "model": {"preset": row["preset"]},
            "pipeline": {"schedule": schedule, "stages": 2, "microbatches": row["microbatches"]}, "shapes": [shape]}


def synthetic(tmp_path, offset: float, jitter: list[float], mem: float = 1.0, host=PRODUCT_HOST, base=None):
    """A bundle whose every process measures `base` (row name -> step s; default the registered product step) times
    exp(offset) (offset > 0: the model fast) times exp(jitter[i]) for the i-th process, its rank-0 peak `mem` times the
    registered one; runs/host/ holds `host`'s single-L<n>.json (None: no host runs)."""
    bundle = tmp_path / "set"
    (bundle / "runs" / "host").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    i = 0
    for row in yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]:
        p = row["predicted"]["product"]
        for k in range(1, row["processes"] + 1):
            t = (base[row["name"]] if base else p["step_ms"] / 1e3) * math.exp(offset + jitter[i % len(jitter)])
            i += 1
            text = "torchrun noise\n" + json.dumps(doc(row, t, p["peak_mem_GiB"] * mem))
            (bundle / "runs" / f"{row['name']}-r{k}.json").write_text(text)
    for path in sorted(host.glob("single-L*.json")) if host else ():
        shutil.copy(path, bundle / "runs" / "host" / path.name)
    return bundle


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    monkeypatch.setenv("REGISTER_COMMIT", reg["registered_at_commit"])
    assert script().main(["--register", str(tmp_path / "again.yaml")]) == 0
    assert (tmp_path / "again.yaml").read_text() == (BUNDLE / "registered.yaml").read_text()
    assert script().main(["--register", str(BUNDLE / "registered.yaml")]) == 2   # never overwritten
    for row in reg["rows"]:   # the set's point: host-bound rows in today's model, the candidate slower
        assert row["predicted"]["product"]["host_share"] >= 0.85, row
        assert row["predicted"]["candidate"]["step_ms"] > row["predicted"]["product"]["step_ms"], row


def test_the_device_script_runs_the_registered_rows_and_host_probe():
    text = (BUNDLE / "device_run.sh").read_text()
    specs = re.search(r'^  for spec in (.*); do$', text, re.M).group(1)
    shapes = [tuple(s.split()) for s in re.findall(r'"([^"]+)"', specs)]
    assert shapes == [(p, f"{s}:{mb}") for p, s, mb in script().SHAPES]
    assert "guarded pp-1f1b-$1-r$r 80 $two $step 1f1b --preset $1 --shapes $2" in text
    assert "guarded pp-gpipe-$1-r$r 80 $two $step gpipe --preset $1 --shapes $2" in text
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == [str(k) for k in range(1, script().PROCESSES + 1)]
    assert "--microbatches 4" in text and script().MICROBATCHES == 4 and script().PROCESSES == 2
    assert sorted(int(n) for n in re.findall(r"^host (\d+)$", text, re.M)) == list(script().HOST_LAYERS)
    assert "guarded host/single-L$1 60 python3 -m simcluster.runner.llm_step --layers $1 $arch --mode single" in text
    product = (PRODUCT_HOST / "device_run.sh").read_text()   # the product host folder's hidden-128 shapes and steps
    want = re.search(r'^arch="(.*)"$', product, re.M).group(1)
    assert re.search(r'^arch="(.*)"$', text, re.M).group(1) == want + " --profile 0"


def test_a_fast_lease_its_own_fit_does_not_explain_reads_a_model_term(tmp_path):
    out = script().read_out(synthetic(tmp_path, 0.17, [0.02, -0.02, 0.01, -0.01, 0.0, 0.015]))
    v = out["verdicts"]
    assert v["B"].startswith("FAST: lease bias -15.8%"), v["B"]
    assert "below the 8% target" in v["N"] and v["M"].startswith("PP+host-bound 2 not within"), v
    assert v["H"].startswith("WITHIN the leases' spread") and "x1.00 the product's" in v["H"], v["H"]
    assert v["O"].startswith("with this lease's own single host fit not within"), v["O"]
    assert "FAST" in v["O"] and v["D"].startswith("MODEL (a missing pipeline host term)") and v["P"].startswith("memory met"), v
    assert len(out["procs"]) == 12 and not out["left"]
    assert v["I"].startswith("reported, not judged") and "pp-gpipe-2b issue 0.90/0.80 cpu 0.85/-" in v["I"], v["I"]


def test_a_slow_host_lease_its_own_fit_explains_reads_the_lease_and_the_candidate_judged(tmp_path):
    from simcluster.heldout.eager_regimes import regime_predict

    rows = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]
    own = {r["name"]: regime_predict(r["preset"], r["micro_batch"], r["mode"], "h200", SLOW_HOST, r["microbatches"],
                                     r["seq"], free_hosts=False)["step_ms"] / 1e3 for r in rows}   # as own_lease: in series
    v = script().read_out(synthetic(tmp_path, 0.0, [0.02, -0.02, 0.0, 0.01], host=SLOW_HOST, base=own))["verdicts"]
    assert v["H"].startswith("WITHIN the leases' spread") and "x1.28 the product's" in v["H"], v["H"]
    assert v["O"].startswith("with this lease's own single host fit within the target") and "NONE" in v["O"], v["O"]
    assert v["B"].startswith("FAST") and v["D"].startswith("LEASE (the single host fit's lease)"), v
    assert v["C"].startswith("BETTER"), v["C"]


def test_a_lease_the_product_prices_well_but_its_own_slower_host_prices_slow_reads_the_hosts_coupling(tmp_path):
    v = script().read_out(synthetic(tmp_path, 0.0, [0.02, -0.02, 0.0, 0.01], host=SLOW_HOST))["verdicts"]
    assert v["B"].startswith("NONE") and v["M"].startswith("PP+host-bound 2 within"), v
    assert "SLOW" in v["O"] and v["D"].startswith("MODEL (the hosts' coupling)"), v


def test_loud_processes_read_noise_and_a_quiet_exact_lease_reads_met(tmp_path):
    loud = script().read_out(synthetic(tmp_path / "loud", 0.0, [0.3, -0.3, 0.0, 0.25]))["verdicts"]
    assert "ABOVE the 8% target" in loud["N"] and loud["D"].startswith("NOISE"), loud
    met = script().read_out(synthetic(tmp_path / "met", 0.0, [0.01, -0.01, 0.0, 0.005]))["verdicts"]
    assert met["B"].startswith("NONE") and met["M"].startswith("PP+host-bound 2 within") and met["D"].startswith("MET"), met
    assert met["C"].startswith("NOT BETTER"), met["C"]
    none = script().read_out(synthetic(tmp_path / "nohost", 0.17, [0.0, 0.01], host=None))["verdicts"]
    assert none["H"].startswith("NO DATA: fewer than two layer counts") and none["D"] == "UNDECIDED", none


def test_memory_outside_the_registered_range_by_more_than_ten_percent_is_not_met(tmp_path):
    v = script().read_out(synthetic(tmp_path, 0.0, [0.0], mem=1.2))["verdicts"]
    assert v["P"].startswith("memory not met: max |error| 16.7%"), v["P"]


def test_missing_runs_wrong_configurations_and_a_bad_registration_are_one_line(tmp_path):
    s = script()
    bundle = synthetic(tmp_path, 0.17, [0.0, 0.01])
    (bundle / "runs" / "pp-gpipe-2b-r2.json").unlink()
    (bundle / "runs" / "pp-1f1b-0.5b-r2.json").write_text("Traceback ...")
    wrong = json.loads((bundle / "runs" / "pp-gpipe-0.8b-r1.json").read_text().split("\n", 1)[1])
    wrong["pipeline"]["schedule"] = "Schedule1F1B"
    (bundle / "runs" / "pp-gpipe-0.8b-r1.json").write_text(json.dumps(wrong))
    (bundle / "runs" / "host" / "single-L8.json").write_text("Traceback ...")
    out = s.read_out(bundle)
    left = " ".join(out["left"])
    assert "pp-gpipe-2b: 1 of 2 processes ran" in left and "pp-1f1b-0.5b-r2.json: " in left
    assert "pp-gpipe-0.8b-r1.json: ran " in left and len(out["procs"]) == 9
    assert out["verdicts"]["H"].startswith("NO DATA: ") and "\n" not in out["verdicts"]["H"]
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())
    del reg["rows"][0]["predicted"]["candidate"]
    (bundle / "registered.yaml").write_text(yaml.safe_dump(reg))
    with pytest.raises(SimclusterError, match="registered.yaml: missing or bad key"):
        s.read_out(bundle)


def test_the_registered_shapes_are_new_to_calibration_per_micro_batch_and_per_step():
    from conftest import measured_llm_tokens, registered_tokens

    rows = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]
    earlier = measured_llm_tokens(BUNDLE)
    assert registered_tokens(rows) & earlier == set()
    steps = registered_tokens([r | {"micro_batch": r["micro_batch"] * r["microbatches"]} for r in rows])
    assert steps & earlier == set()


def test_the_development_study_prints_what_the_readme_and_findings_state():
    """studies/pp_host_noise.py on the processes before this set (its own runs, once unpacked, and the later ppcouple
    set's and session 45's ppblock and ppfree sets are left out here)."""
    import statistics

    study = load_script("studies/pp_host_noise.py")
    later = (BUNDLE.name, "h200x2-ppcouple-2026-11-30", "h200x2-ppblock-2026-11-30", "h200x2-ppfree-2026-11-30",
             "h200x2-ppboth-2026-11-30")   # run after it (ppboth: session 46)
    rows = [r for r in study.processes() if not r["call"].startswith(later)]
    assert len(rows) == 11 and {r["call"] for r in rows} == {"h200x2-eager-hostbound-noise-2026-11-29",
                                                             "h200x2-eager-pphost-2026-11-29", "h200x2-llm-eager-post-2026-11-29"}
    from simcluster.llm.eager import leases_unread

    # today's model at the registration (no leases.yaml read: a pipeline stage's single host term is the 2026-11-23
    # lease's alone, 21.0 us): the 8.3% the README, llm.md and llm-findings state
    with leases_unread():
        study.predict.cache_clear(), study.candidate_fits.cache_clear()
        at_registration = [r for r in study.processes() if not r["call"].startswith(later)]
    study.predict.cache_clear(), study.candidate_fits.cache_clear()
    assert len(at_registration) == 11
    assert statistics.mean(abs(r["err"]) for r in at_registration) == pytest.approx(0.083, abs=0.0005)
    # the candidate (the single host term pooled over four leases): 10.4%, the same under both readings ...
    assert statistics.mean(abs(r["cand"]) for r in at_registration) == pytest.approx(0.104, abs=0.0005)
    assert statistics.mean(abs(r["cand"]) for r in rows) == pytest.approx(0.104, abs=0.0005)
    # ... and since session 44's pooled single host term (helper hostsingle, e005011e) today's model is the candidate
    assert statistics.mean(abs(r["err"]) for r in rows) == pytest.approx(0.104, abs=0.0005)
    own = [r["own"] for r in rows if r["own"] is not None]
    assert len(own) == 9 and min(own) > 0 and statistics.mean(own) == pytest.approx(0.141, abs=0.0005)
    n = study.scripts()[0].numbers(rows, ())
    assert (round(n["process_sd"], 3), round(n["lease_sd"], 3)) == (0.047, 0.043)
    assert (round(n["floor_empirical"], 3), round(n["floor_normal"], 3)) == (0.041, 0.051)


def test_the_set_enters_the_error_bands_as_pp_host_bound_rows_once_it_has_run(tmp_path):
    from collections import Counter

    from simcluster.heldout import eager_pphost, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_pphost.PP_HOST_S44_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_pphost.PP_HOST_S44_BUNDLE
    assert eager_pphost.s44_rows(tmp_path / "not-run") == []   # registered, not run: no row in the table
    bundle = synthetic(tmp_path, 0.1, [0.02, -0.02])
    (bundle / "runs" / "pp-gpipe-2b-r2.json").unlink()
    rows = eager_pphost.s44_rows(bundle)
    assert len(rows) == 6 and all(r["host_bound"] and r["host_flag"] == "registered" and r["pp"] == 2 for r in rows)
    reg = {r["name"]: r for r in yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]}
    for r in rows:
        x = next(x for x in reg.values() if r["label"] == f"{x['preset']} {x['mode']} seq {x['seq']} mb 1 x4 micro-batches")
        assert r["predicted_s"] == x["predicted"]["product"]["step_ms"] / 1e3
        assert r["measured_s"] == pytest.approx(r["predicted_s"] * math.exp(0.1), rel=0.03)
        # today's product: since session 44 (hostsingle) its single host term is the four leases' mean, which is this
        # set's registered candidate
        assert r["today_s"] == pytest.approx(x["predicted"]["candidate"]["step_ms"] / 1e3, rel=2e-3)
    assert Counter(res.regime for res in eager_residuals(rows)) == {"llm | PyTorch eager | PP+host-bound | bf16": 6}
    text = (bundle / "registered.yaml").read_text().replace("host_share: 0.9381", "host_share: null", 1)
    (bundle / "registered.yaml").write_text(text)
    with pytest.raises(SimclusterError, match=r"registered.yaml: rows\[0\]: no predicted.product.host_share"):
        eager_pphost.s44_rows(bundle)


def test_the_committed_run_enters_the_error_bands_as_six_rows_against_the_registered_product():
    """The set as it ran (runs/ unpacked, cold review B item 7): 6 rows, pp-gpipe-2b from its one process (the budget guard
    dropped r2), each against its registered product step; today's step the registered candidate (the product's single
    host term pooled since e005011e); the measured step the mean of the processes' rank-0 medians (readout.txt)."""
    import statistics

    from simcluster.heldout import eager_pphost

    rows = {r["label"]: r for r in eager_pphost.s44_rows()}
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]
    readout = {}
    for line in (BUNDLE / "readout.txt").read_text().splitlines():
        m = re.match(r"(pp-\S+)\s+\S+ x4\s+measured\s+([\d.]+) ms", line)
        if m:
            readout.setdefault(m.group(1), []).append(float(m.group(2)))
    assert len(rows) == 6 == len(reg) and [len(readout[x["name"]]) for x in reg] == [2, 2, 2, 2, 2, 1]
    for x in reg:
        r = rows[f"{x['preset']} {x['mode']} seq {x['seq']} mb 1 x4 micro-batches"]
        assert r["predicted_s"] == x["predicted"]["product"]["step_ms"] / 1e3
        assert r["today_s"] == pytest.approx(x["predicted"]["candidate"]["step_ms"] / 1e3, rel=2e-3)
        assert r["measured_s"] * 1e3 == pytest.approx(statistics.mean(readout[x["name"]]), abs=0.06)
        assert r["host_bound"] and r["host_flag"] == "registered" and r["pp"] == 2
