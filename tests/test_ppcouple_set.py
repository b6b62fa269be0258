"""Session 44's coupling set (calibration/h200x2-ppcouple-2026-11-30, validation/ppcouple.py): the registration against a
fresh --register at its commit, the device script against the registered rows and probes, the shapes new to
calibration/, and synthetic runs through the rules N, B, M, P, H, O, S, T and D."""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest
import yaml
from conftest import ROOT, load_script
from test_pphost_set import PRODUCT_HOST, doc

BUNDLE = ROOT / "calibration" / "h200x2-ppcouple-2026-11-30"


def script():
    return load_script("validation/ppcouple.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def synthetic(tmp_path, steps, jitter: list[float], probe=None, host=PRODUCT_HOST):
    """A bundle whose i-th process of each row measures steps[row name] (s) x exp(jitter[i]); its probe processes
    probe[name] (s; None: none ran); runs/host/ holds `host`'s single-L<n>.json."""
    bundle = tmp_path / "set"
    (bundle / "runs" / "host").mkdir(parents=True)
    (bundle / "runs" / "probe").mkdir()
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    i = 0
    for row in registered()["rows"]:
        for k in range(1, row["processes"] + 1):
            t = steps[row["name"]] * math.exp(jitter[i % len(jitter)])
            i += 1
            text = "torchrun noise\n" + json.dumps(doc(row, t, row["predicted"]["product"]["peak_mem_GiB"]))
            (bundle / "runs" / f"{row['name']}-r{k}.json").write_text(text)
    for r in registered()["probe"] if probe else ():
        d = {"tool": "llm-step", "format": 1, "mode": "pp", "world_size": 2,
             "model": {"preset": None, "layers": r["layers"], "hidden": 128},
             "pipeline": {"schedule": "Schedule1F1B", "stages": 2, "microbatches": 4},
             "shapes": [{"seq": r["seq"], "micro_batch": 1, "status": "ok", "median_step_s": probe[r["name"]]}]}
        (bundle / "runs" / "probe" / f"{r['name']}.json").write_text(json.dumps(d))
    for path in sorted(host.glob("single-L*.json")):
        shutil.copy(path, bundle / "runs" / "host" / path.name)
    return bundle


def model(free: bool) -> tuple[dict, dict]:
    """Each row's and probe's step (s) with the product host folder's own runs' fit (the synthetic lease's own, as
    synthetic() copies them: its leases.yaml left behind), the hosts in series or free."""
    import tempfile
    from pathlib import Path

    s = script()
    with tempfile.TemporaryDirectory() as tmp:
        for path in PRODUCT_HOST.glob("single-L*.json"):
            shutil.copy(path, Path(tmp) / path.name)
        rows = s.own_steps(Path(tmp), registered()["rows"], free)
        probe = {r["name"]: s.probe_step(r["layers"], Path(tmp), free) / 1e3 for r in registered()["probe"]}
    return rows, probe


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = registered()
    monkeypatch.setenv("REGISTER_COMMIT", reg["registered_at_commit"])
    assert script().main(["--register", str(tmp_path / "again.yaml")]) == 0
    assert (tmp_path / "again.yaml").read_text() == (BUNDLE / "registered.yaml").read_text()
    assert script().main(["--register", str(BUNDLE / "registered.yaml")]) == 2   # never overwritten
    for row in reg["rows"]:   # host-bound rows; the product (hosts in series) 10-20% slower than the candidate
        p = row["predicted"]
        assert p["product"]["host_share"] >= 0.85 and 1.10 < p["product"]["step_ms"] / p["free"]["step_ms"] < 1.20, row
    for r in reg["probe"]:
        assert 1.10 < r["predicted"]["product"]["step_ms"] / r["predicted"]["free"]["step_ms"] < 1.25, r


def test_the_device_script_runs_the_registered_rows_and_probes_host_first():
    text = (BUNDLE / "device_run.sh").read_text()
    specs = re.search(r'^  for spec in (.*); do$', text, re.M).group(1)
    assert [tuple(s.split()) for s in re.findall(r'"([^"]+)"', specs)] == [(p, f"{s}:{mb}") for p, s, mb in script().SHAPES]
    assert "guarded pp-1f1b-$1-r$r 80 $two $step 1f1b --preset $1 --shapes $2" in text
    assert "guarded pp-gpipe-$1-r$r 80 $two $step gpipe --preset $1 --shapes $2" in text
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == ["1", "2"] and script().PROCESSES == 2
    calls = re.findall(r"^(host|probe) (\d+)$", text, re.M)
    assert calls == [("host", "2"), ("host", "32"), ("probe", "4"), ("probe", "32")]   # first: the guard never drops them
    assert text.index("probe 32") < text.index("for r in")
    assert [int(n) for _, n in calls[:2]] == list(script().HOST_LAYERS) and [int(n) for _, n in calls[2:]] == list(script().PROBE_LAYERS)
    assert '--shapes 256:1"' in text and script().PROBE_SEQ == 256
    queue = "guarded queue/launch-queue 60 python3 -m simcluster.runner.launch_queue"   # last: reported only
    assert queue in text and text.index(queue) > text.index("  done\ndone")
    product = (PRODUCT_HOST / "device_run.sh").read_text()   # the product host folder's hidden-128 shapes and steps
    want = re.search(r'^arch="(.*)"$', product, re.M).group(1)
    assert re.search(r'^arch="(.*)"$', text, re.M).group(1) == want + " --profile 0"


def test_the_registered_shapes_are_new_to_calibration_per_micro_batch_and_per_step():
    from conftest import measured_llm_tokens, registered_tokens

    rows = registered()["rows"]
    earlier = measured_llm_tokens(BUNDLE)
    assert registered_tokens(rows) & earlier == set()
    assert registered_tokens([r | {"micro_batch": r["micro_batch"] * r["microbatches"]} for r in rows]) & earlier == set()


def test_a_lease_the_free_hosts_price_reads_holds_and_the_probe_free(tmp_path):
    rows, probe = model(free=True)
    v = script().read_out(synthetic(tmp_path, rows, [0.02, -0.02, 0.01, -0.01], probe))["verdicts"]
    assert "NONE" in v["O"] and "within the target" in v["O"] and "SLOW" in v["S"], v
    assert v["D"].startswith("HOLDS") and v["T"].startswith("FREE"), v
    assert v["H"].startswith("WITHIN") and v["P"].startswith("memory met") and "below the 8% target" in v["N"], v


def test_a_lease_the_series_hosts_price_reads_worse_and_the_probe_series(tmp_path):
    rows, probe = model(free=False)
    v = script().read_out(synthetic(tmp_path, rows, [0.02, -0.02, 0.01, -0.01], probe))["verdicts"]
    assert "FAST" in v["O"] and v["D"].startswith("WORSE") and v["T"].startswith("SERIES"), v


def test_a_residual_between_reads_better_with_its_direction_and_noise_reads_noise(tmp_path):
    rows, probe = model(free=True)
    fast = script().read_out(synthetic(tmp_path / "fast", {k: x * 1.06 for k, x in rows.items()}, [0.01, -0.01], probe))
    assert fast["verdicts"]["D"].startswith("BETTER") and "host cost per kernel above" in fast["verdicts"]["D"], fast["verdicts"]
    loud = script().read_out(synthetic(tmp_path / "loud", rows, [0.3, -0.3, 0.0, 0.25]))["verdicts"]
    assert loud["D"].startswith("NOISE") and loud["T"].startswith("NO DATA"), loud
    assert len(fast["procs"]) == 8 and len(fast["probe"]) == 2 and not fast["left"]


def test_the_queue_probe_is_reported_beside_the_model_constant(tmp_path):
    rows, probe = model(free=True)
    bundle = synthetic(tmp_path, rows, [0.0, 0.01], probe)
    assert script().read_out(bundle)["verdicts"]["Q"].endswith("NO DATA (runs/queue/launch-queue.json missing or not the probe's document)")
    (bundle / "runs" / "queue").mkdir()
    doc = {"tool": "launch-queue", "launches": 4000, "repeats": [{"depth": 1021}, {"depth": None}, {"depth": 1020}]}
    (bundle / "runs" / "queue" / "launch-queue.json").write_text("warning\n" + json.dumps(doc))
    q = script().read_out(bundle)["verdicts"]["Q"]
    assert "per repeat 1021 / >= 4000 / 1020 (the model's LAUNCH_QUEUE_KERNELS 1000)" in q, q


def test_missing_and_wrong_probes_are_left_out_with_one_line(tmp_path):
    rows, probe = model(free=True)
    bundle = synthetic(tmp_path, rows, [0.0, 0.01], probe)
    (bundle / "runs" / "probe" / "pp-1f1b-L32.json").write_text("Traceback ...")
    wrong = json.loads((bundle / "runs" / "probe" / "pp-1f1b-L4.json").read_text())
    wrong["model"]["layers"] = 8
    (bundle / "runs" / "probe" / "pp-1f1b-L4.json").write_text(json.dumps(wrong))
    (bundle / "runs" / "pp-gpipe-1.1b-r2.json").unlink()
    out = script().read_out(bundle)
    left = " ".join(out["left"])
    assert "probe pp-1f1b-L32.json: " in left and "probe pp-1f1b-L4.json: not the registered configuration" in left
    assert "pp-gpipe-1.1b: 1 of 2 processes ran" in left and out["verdicts"]["T"].startswith("NO DATA")


def test_the_set_enters_the_error_bands_as_pp_host_bound_rows_once_it_has_run(tmp_path):
    from collections import Counter

    from simcluster.heldout import eager_pphost, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_pphost.PP_COUPLE_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_pphost.PP_COUPLE_BUNDLE
    if not (BUNDLE / "runs").is_dir():
        assert eager_pphost.s44_rows(BUNDLE) == []   # registered, not run: no row in the table
    rows, probe = model(free=True)
    bundle = synthetic(tmp_path, rows, [0.02, -0.02], probe)
    got = eager_pphost.s44_rows(bundle)
    reg = {f"{r['preset']} {r['mode']} seq {r['seq']} mb 1 x4 micro-batches": r for r in registered()["rows"]}
    assert len(got) == 4 and all(r["host_bound"] and r["host_flag"] == "registered" and r["pp"] == 2 for r in got)
    for r in got:
        assert r["predicted_s"] == reg[r["label"]]["predicted"]["product"]["step_ms"] / 1e3
        assert r["today_s"] == pytest.approx(r["predicted_s"], rel=1e-3)   # the product as registered
    assert Counter(res.regime for res in eager_residuals(got)) == {"llm | PyTorch eager | PP+host-bound | bf16": 4}


def test_rule_h_states_the_product_a_later_set_registered(tmp_path):
    """Cold review C 44, item 10: pphost.own_lease's "x the product's" ratio defaults to pphost's registered product
    (21.0 us; the frozen pphost and ppcouple read-outs print it); a later set passes the product it registered."""
    pphost = load_script("validation/pphost.py")
    reg = registered()
    keys = {"candidate_single_host": reg["pooled_single_host"], "rows": reg["rows"]}
    lines = {}
    for product_s in (None, reg["pooled_single_host"]["per_kernel_s"]):
        v = {}
        assert pphost.own_lease(BUNDLE, keys, [], v, product_s) is not None
        lines[product_s] = v["H"]
    assert lines[None].endswith("x1.35 the product's 21.0 us")   # as readout.txt printed it
    assert lines[reg["pooled_single_host"]["per_kernel_s"]].endswith("x1.15 the product's 24.7 us")
