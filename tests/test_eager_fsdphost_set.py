"""Session 43's FSDP+host-bound set (calibration/h200x2-eager-fsdphost-2026-11-30): the registration against its
script and the shared row builder, the device script against the read-out's processes, and synthetic runs through the
rules N, B, M, P, H, O and D."""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest
import yaml
from conftest import ROOT, load_script

from simcluster.errors import SimclusterError

BUNDLE = ROOT / "calibration" / "h200x2-eager-fsdphost-2026-11-30"
PRODUCT_HOST = ROOT / "calibration" / "h200x2-llm-host-2026-11-23"           # the product's FSDP2 host fit lease
SLOW_HOST = ROOT / "calibration" / "h200x2-eager-hostbound-noise-2026-11-29" / "runs" / "host"   # 61.6 us per kernel


def script():
    return load_script("validation/eager_fsdphost.py")


def doc(preset: str, seq: int, mb: int, t: float, peak_gib: float | None) -> dict:
    shape = {"seq": seq, "micro_batch": mb, "status": "ok", "median_step_s": t, "step_times_s": [t] * 10}
    if peak_gib is not None:
        shape["max_memory_allocated_bytes"] = int(peak_gib * 2**30)
    return {"tool": "llm-step", "format": 1, "mode": "fsdp", "world_size": 2, "model": {"preset": preset}, "shapes": [shape]}


def synthetic(tmp_path, offset: float, jitter: list[float], mem: float = 1.0, host=PRODUCT_HOST, base=None):
    """A bundle whose every process measures `base` (shape -> step s; default the registered steps) times exp(offset)
    (offset > 0: the model fast) times exp(jitter[i]) for process i (in PROCESSES' order), its peak `mem` times the
    registered job peak; runs/host/ holds `host`'s fsdp-L<n>.json (None: no host runs)."""
    bundle = tmp_path / "set"
    (bundle / "runs" / "host").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    reg = {(r["preset"], r["seq"], r["micro_batch"]): r["predicted"] for r in yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]}
    for i, (stem, key) in enumerate(script().PROCESSES.items()):
        p = reg[key]
        t = (base[key] if base else p["step_ms"] / 1e3) * math.exp(offset + jitter[i % len(jitter)])
        (bundle / "runs" / f"{stem}.json").write_text("torchrun noise\n" + json.dumps(doc(*key, t, p["peak_mem_GiB"] * mem)))
    for path in sorted(host.glob("fsdp-L*.json")) if host else ():
        shutil.copy(path, bundle / "runs" / "host" / path.name)
    return bundle


def test_the_registration_records_todays_model_through_the_shared_row_builder():
    from simcluster.llm.eager import leases_unread

    s = script()
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    assert [(r["preset"], r["seq"], r["micro_batch"], r["mode"]) for r in reg["rows"]] == [(*k, "fsdp") for k in s.SHAPES]
    with leases_unread():   # registered before the pooled FSDP2 host term (session 43, fsdphost2): the one lease's fit
        host, rows = s.product_fsdp_host(), s.predicted()
    assert reg["product_fsdp_host"] == host
    for row, want in zip(reg["rows"], rows, strict=True):
        for k in ("step_ms", "steady_mem_GiB", "peak_mem_GiB"):
            assert row["predicted"][k] == pytest.approx(want["predicted"][k], rel=1e-3), (row, k)
        assert row["predicted"]["host_share"] > 0.5, row   # the regime's shapes: host-bound in today's model
    # the TP sets' registration scripts build their rows with the same function (one builder, session 43)
    tp, drift = load_script("validation/eager_tpnoise.py"), load_script("validation/eager_drift.py")
    tp_reg = yaml.safe_load((ROOT / "calibration/h200x2-eager-tpnoise-2026-11-30/registered.yaml").read_text())["rows"]
    assert [r["predicted"]["step_ms"] for r in tp.predicted()] == pytest.approx([r["predicted"]["step_ms"] for r in tp_reg])
    assert drift.predicted() == tp.predicted()[0]


def test_the_device_script_runs_the_registered_processes_and_host_runs():
    text = (BUNDLE / "device_run.sh").read_text()
    runs = re.findall(r"^  guarded (\S+)-r\$r 90 \$fsdp --preset (\S+) --shapes (\d+):(\d+)$", text, re.M)
    stems = [f"{name}-r{r}" for r in (1, 2, 3) for name, *_ in runs]
    assert stems == list(script().PROCESSES)
    for name, preset, seq, mb in runs:
        assert script().PROCESSES[f"{name}-r1"] == (preset, int(seq), int(mb)) and name == f"{preset}-{seq}x{mb}"
    assert re.search(r"^for layers in (.*); do$", text, re.M).group(1).split() == [str(n) for n in script().HOST_LAYERS]
    assert "guarded host/fsdp-L$layers 90 $two -m simcluster.runner.llm_step --layers $layers $arch --mode fsdp" in text
    product = (PRODUCT_HOST / "device_run.sh").read_text()   # the product host folder's hidden-128 shapes and steps
    want = re.search(r'^arch="(.*)"$', product, re.M).group(1)
    assert re.search(r'^arch="(.*)"$', text, re.M).group(1) == want + " --profile 0"


def test_a_fast_bias_on_a_lease_like_the_fit_lease_reads_another_model_term(tmp_path):
    out = script().read_out(synthetic(tmp_path, 0.17, [0.02, -0.02, 0.01, -0.01, 0.0, 0.015]))
    v = out["verdicts"]
    assert v["B"].startswith("FAST: lease bias -15.9%"), v["B"]
    assert "below the 8% target" in v["N"] and v["M"].startswith("FSDP+host-bound 2 not within"), v
    assert v["H"].startswith("LIKE the fit lease") and "x1.00 per kernel" in v["H"], v["H"]
    assert v["O"].startswith("with this lease's own host fit not within"), v["O"]
    assert v["D"].startswith("MODEL (another term)") and v["P"].startswith("memory met"), v
    assert len(out["rows"]) == 9 and not out["left"]


def test_a_slow_host_lease_that_its_own_fit_explains_reads_the_host_fits_lease(tmp_path):
    from simcluster.heldout.eager_regimes import regime_predict

    own = {k: regime_predict(k[0], k[2], "fsdp", "h200", SLOW_HOST, seq=k[1])["step_ms"] / 1e3 for k in script().SHAPES}
    v = script().read_out(synthetic(tmp_path, 0.0, [0.02, -0.02, 0.0, 0.01], host=SLOW_HOST, base=own))["verdicts"]
    assert v["H"].startswith("SLOWER than the fit lease") and "x1.38 per kernel" in v["H"], v["H"]
    assert v["O"].startswith("with this lease's own host fit within the target"), v["O"]
    assert v["B"].startswith("FAST") and v["D"].startswith("MODEL (the host fit's lease)"), v


def test_loud_processes_read_noise_and_a_quiet_exact_lease_reads_met(tmp_path):
    loud = script().read_out(synthetic(tmp_path / "loud", 0.0, [0.3, -0.3, 0.0, 0.25]))["verdicts"]
    assert "ABOVE the 8% target" in loud["N"] and loud["D"].startswith("NOISE"), loud
    met = script().read_out(synthetic(tmp_path / "met", 0.0, [0.01, -0.01, 0.0, 0.005]))["verdicts"]
    assert met["B"].startswith("NONE") and met["M"].startswith("FSDP+host-bound 2 within") and met["D"].startswith("MET"), met
    none = script().read_out(synthetic(tmp_path / "nohost", 0.17, [0.0, 0.01], host=None))["verdicts"]
    assert none["H"].startswith("NO DATA: fewer than two layer counts") and none["D"].startswith("MODEL (another term)"), none


def test_memory_outside_the_registered_range_by_more_than_ten_percent_is_not_met(tmp_path):
    v = script().read_out(synthetic(tmp_path, 0.0, [0.0], mem=1.2))["verdicts"]
    assert v["P"].startswith("memory not met: max |error| 16.7%"), v["P"]


def test_missing_runs_bad_documents_and_a_bad_registration_are_one_line(tmp_path):
    s = script()
    bundle = synthetic(tmp_path, 0.17, [0.0, 0.01])
    (bundle / "runs" / "0.3b-4096x1-r3.json").unlink()
    (bundle / "runs" / "host" / "fsdp-L8.json").write_text("Traceback ...")
    (bundle / "runs" / "0.8b-2048x1-r3.json").write_text("Traceback ...")
    (bundle / "runs" / "1.1b-1024x4-r3.json").write_text(json.dumps(doc("0.8b", 1024, 4, 0.1, None)))
    left = " ".join(s.read_out(bundle)["left"])
    assert "0.3b-4096x1-r3: no runs/0.3b-4096x1-r3.json" in left and "0.8b-2048x1-r3: no llm-step document" in left
    assert "1.1b-1024x4-r3: not fsdp / 2 ranks / 1.1b" in left
    assert s.read_out(bundle)["verdicts"]["H"].startswith("NO DATA: ") and "\n" not in s.read_out(bundle)["verdicts"]["H"]
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())
    del reg["rows"][0]["predicted"]["peak_mem_GiB"]
    (bundle / "registered.yaml").write_text(yaml.safe_dump(reg))
    with pytest.raises(SimclusterError, match="registered.yaml: missing or bad key"):
        s.read_out(bundle)
