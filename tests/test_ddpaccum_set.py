"""Session 45's DDP accumulation set (calibration/h200x2-ddpaccum-2026-11-30, validation/ddpaccum.py): the registration
against a fresh --register at its commit, the device script against the registered rows, the shapes new to
calibration/, and synthetic runs through the rules."""

from __future__ import annotations

import test_nosync_set
from conftest import ROOT, fresh_register_equals, load_script

BUNDLE = ROOT / "calibration" / "h200x2-ddpaccum-2026-11-30"


def script():
    return load_script("validation/ddpaccum.py")


def registered() -> dict:
    return test_nosync_set.registered(BUNDLE)


def synthetic(tmp_path, scale: dict[str, float] | None = None, jitter=(0.005, -0.005), drop=()):
    """test_nosync_set.synthetic on this set's registration, the runner's --mode ddp."""
    return test_nosync_set.synthetic(tmp_path, scale, jitter, drop, BUNDLE, "ddp")


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    for r in reg["rows"]:   # GPU-bound shapes; the change moves only the sync rows, up
        assert r["predicted"]["host_share"] < 0.5
        if r["variant"] == "sync":
            assert r["predicted"]["step_ms"] > r["predicted"]["step_ms_before"]


def test_the_device_script_runs_the_registered_rows():
    test_nosync_set.device_script_runs(script(), BUNDLE, "ddp")


def test_the_registered_shapes_are_new_to_calibration():
    test_nosync_set.assert_new_to_calibration(BUNDLE)


def test_runs_at_the_registered_steps_read_met(tmp_path):
    out = script().read_out(synthetic(tmp_path))
    v = out["verdicts"]
    assert v["D"] == "MET" and v["M"].startswith("within") and v["P"].startswith("memory met"), v
    assert v["S"].count("MET:") == 2 and "NOT MET" not in v["S"] and v["S"].count("nearer the change") == 2, v
    assert len(out["procs"]) == 8 and not out["left"]


def test_a_sync_priced_as_before_the_change_misses_rule_s(tmp_path):
    regs = registered()["rows"]
    before = {r["name"]: r["predicted"]["step_ms_before"] / r["predicted"]["step_ms"] for r in regs if r["variant"] == "sync"}
    v = script().read_out(synthetic(tmp_path, before))["verdicts"]
    assert v["S"].count("NOT MET") == 2 and v["S"].count("nearer the model before it") == 2, v
    assert v["D"].startswith("MODEL (DDP's per-micro-batch terms)"), v


def test_the_s_limit_grows_with_the_noise_and_missing_processes(tmp_path):
    loud = script().read_out(synthetic(tmp_path / "loud", jitter=(0.04, -0.04)))["verdicts"]
    assert "from the noise" in loud["S"] and "limit 11." in loud["S"], loud   # 2 x 0.0566 x 1 (sd of +-0.04 pairs)
    out = script().read_out(synthetic(tmp_path / "cut", drop={"2b-2752x1-sync-r2", "2b-2752x1-nosync-r1", "2b-2752x1-nosync-r2"}))
    assert len(out["left"]) == 3 and "2b 2752:1: NO DATA" in out["verdicts"]["S"] and out["verdicts"]["D"] == "MET"


def test_the_set_that_ran_enters_the_error_bands_as_four_ddp_rows_against_its_registered_steps():
    """Once run, each (shape, variant) is one DDP row: its processes' mean against the registered product step."""
    import yaml

    from simcluster.heldout import eager_nosync, step_sets
    from simcluster.trust.build import eager_residuals

    bundle = ROOT / eager_nosync.DDPACCUM_BUNDLE
    assert eager_nosync.DDPACCUM_BUNDLE in step_sets.STEP_SET_BUNDLES
    rows = eager_nosync.held_out_rows(bundle, "ddp")
    if not (bundle / "runs").is_dir():
        assert rows == []
        return
    regs = {f"{r['preset']} ddp {r['variant']} seq {r['seq']}": r["predicted"]["step_ms"] / 1e3
            for r in yaml.safe_load((bundle / "registered.yaml").read_text())["rows"]}
    assert len(rows) == 4 and all(r["predicted_s"] == regs[r["label"].split(" mb ")[0]] for r in rows)
    assert {res.regime for res in eager_residuals(rows)} == {"llm | PyTorch eager | DDP | bf16"}
