"""Session 43's second FSDP+host-bound lease (calibration/h200x2-eager-fsdphost-lease2-2026-11-30, engineer fsdphost2):
the pooled FSDP2 host term (llm/eager.fit_modes over calibration/h200x2-llm-host-2026-11-23/leases.yaml) and its
registration, and synthetic runs through rule S and D's readings with it."""

from __future__ import annotations

import json
import math
import shutil
import statistics

import pytest
import yaml
from conftest import ROOT, load_script

BUNDLE = ROOT / "calibration" / "h200x2-eager-fsdphost-lease2-2026-11-30"
FIRST = ROOT / "calibration" / "h200x2-eager-fsdphost-2026-11-30"
PRODUCT_HOST = ROOT / "calibration" / "h200x2-llm-host-2026-11-23"
SLOW_HOST = ROOT / "calibration" / "h200x2-eager-hostbound-noise-2026-11-29" / "runs" / "host"   # 61.6 us per kernel


def script():
    return load_script("validation/eager_fsdphost.py")


def test_the_fsdp_host_term_is_the_mean_of_every_leases_own_fit():
    from simcluster.llm import eager

    fits = eager.lease_fits(PRODUCT_HOST, "fsdp")
    assert len(fits) == 6 and fits[0][0] == PRODUCT_HOST.resolve()
    c, a, n = eager.fit_modes(PRODUCT_HOST)["fsdp"]
    assert c == pytest.approx(statistics.mean(f[0] for _, f in fits)) and a == pytest.approx(statistics.mean(f[1] for _, f in fits))
    assert n == 36 and 50e-6 < c < 60e-6
    with eager.leases_unread():   # the folder's own runs: the term before session 43 (44.65 us + 7.55 ms)
        own = eager.fit_modes(PRODUCT_HOST)
    assert own["fsdp"][0] == pytest.approx(fits[0][1][0]) == pytest.approx(44.653e-6, rel=1e-3)
    # ddp and tp stay the folder's own; single is pooled over its own leases since session 44 (tests/test_hostsingle_set.py)
    assert {m: own[m] for m in ("ddp", "tp")} == {m: eager.fit_modes(PRODUCT_HOST)[m] for m in ("ddp", "tp")}


@pytest.mark.parametrize("text, why", [
    ("fsdp: [., ../nowhere]\n", "'../nowhere' is not a folder"),
    ("fsdp: [.]\n", "a list of two or more host folders"),
    ("fdsp: [., .]\n", "'fdsp' is not a runner mode"),
    ("- fsdp\n", "expected a mapping"),
])
def test_a_bad_leases_file_is_one_line_naming_it(tmp_path, text, why):
    from simcluster.llm import eager

    for path in PRODUCT_HOST.glob("fsdp-L*.json"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "leases.yaml").write_text(text)
    with pytest.raises(ValueError, match=why) as err:
        eager.fit_modes(tmp_path)
    assert "leases.yaml" in str(err.value) and "\n" not in str(err.value)


def test_the_registration_is_the_first_sets_script_with_the_pooled_term():
    s = script()
    assert (BUNDLE / "device_run.sh").read_bytes() == (FIRST / "device_run.sh").read_bytes()
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    assert reg["product_fsdp_host"] == s.product_fsdp_host() and len(reg["product_fsdp_host"]["leases"]) == 6
    assert reg["rules"] == s.RULES and reg["judge"] == s.JUDGE
    for row, want in zip(reg["rows"], s.predicted(), strict=True):
        assert row["predicted"]["step_ms"] == pytest.approx(want["predicted"]["step_ms"], rel=1e-3), row
        assert "mean of 6 leases" in row["predicted"]["host"]
    first = yaml.safe_load((FIRST / "registered.yaml").read_text())["rows"]
    assert all(r["predicted"]["step_ms"] > 1.1 * f["predicted"]["step_ms"] for r, f in zip(reg["rows"], first, strict=True))


def _host(folder, scale):
    folder.mkdir(parents=True)
    for path in SLOW_HOST.glob("fsdp-L*.json"):
        doc = json.loads(path.read_text())
        for shape in doc["shapes"]:
            shape["median_step_s"] *= scale
        (folder / path.name).write_text(json.dumps(doc))
    return folder


def synthetic(tmp_path, host, jitter=(0.02, -0.02, 0.0, 0.01), offset=0.0, own=True):
    """The lease2 registration; runs/host/ a copy of `host`; every process at the model with that host fit (own) or at
    the registered step, times exp(offset + jitter)."""
    from simcluster.heldout.eager_regimes import regime_predict

    bundle = tmp_path / "set"
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    shutil.copytree(host, bundle / "runs" / "host")
    reg = {(r["preset"], r["seq"], r["micro_batch"]): r["predicted"] for r in yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]}
    for i, (stem, key) in enumerate(script().PROCESSES.items()):
        base = (regime_predict(key[0], key[2], "fsdp", "h200", bundle / "runs" / "host", seq=key[1])["step_ms"] if own
                else reg[key]["step_ms"]) / 1e3
        shape = {"seq": key[1], "micro_batch": key[2], "status": "ok", "median_step_s": base * math.exp(offset + jitter[i % len(jitter)]),
                 "max_memory_allocated_bytes": int(reg[key]["peak_mem_GiB"] * 2**30)}
        doc = {"tool": "llm-step", "format": 1, "mode": "fsdp", "world_size": 2, "model": {"preset": key[0]}, "shapes": [shape]}
        (bundle / "runs" / f"{stem}.json").write_text(json.dumps(doc))
    return bundle


def test_a_lease_the_spread_holds_that_its_own_fit_explains_reads_lease_spread(tmp_path):
    v = script().read_out(synthetic(tmp_path, _host(tmp_path / "h", 1.1)))["verdicts"]   # x1.22 the pooled term: 1.6 sd
    assert v["H"].startswith("SLOWER than the fit lease") and v["S"].startswith("WITHIN the leases' spread"), v
    assert v["B"].startswith("FAST") and v["O"].startswith("with this lease's own host fit within"), v
    assert v["D"].startswith("LEASE SPREAD"), v["D"]


def test_a_lease_beyond_two_lease_sd_reads_the_host_fits_lease_and_a_wrong_term_reads_another(tmp_path):
    s = script()
    far = s.read_out(synthetic(tmp_path / "far", _host(tmp_path / "h", 1.6)))["verdicts"]
    assert far["S"].startswith("OUTSIDE") and far["D"].startswith("MODEL (the host fit's lease)"), far
    other = s.read_out(synthetic(tmp_path / "other", SLOW_HOST, offset=0.2))["verdicts"]   # 22% beyond the own fit
    assert other["O"].startswith("with this lease's own host fit not within") and other["D"].startswith("MODEL (another term)"), other


def test_a_lease_at_the_registered_steps_reads_met(tmp_path):
    v = script().read_out(synthetic(tmp_path, SLOW_HOST, jitter=(0.01, -0.01, 0.0), own=False))["verdicts"]
    assert v["B"].startswith("NONE") and v["D"].startswith("MET"), v


def test_the_studys_printed_leases_are_the_shipped_ones():
    from simcluster.llm import eager

    text = (ROOT / "studies" / "fsdp_lease_host.txt").read_text()
    for path, (c, a, _) in eager.lease_fits(PRODUCT_HOST, "fsdp"):
        assert f"{path.relative_to(ROOT / 'calibration')}" in text and f"{c * 1e6:6.2f} us/kernel {a * 1e3:+6.2f} ms/step" in text
    c = eager.fit_modes(PRODUCT_HOST)["fsdp"][0]
    assert f"mean {c * 1e6:.2f} us/kernel" in text and "The 6 rows FSDP+host-bound x2 held before" in text
