"""Session 45's DDP accumulation set (calibration/h200x2-ddpaccum-2026-11-30, validation/ddpaccum.py): the registration
against a fresh --register at its commit, the device script against the registered rows, the shapes new to
calibration/, and synthetic runs through the rules."""

from __future__ import annotations

import json
import math
import re
import shutil

import yaml
from conftest import ROOT, load_script

BUNDLE = ROOT / "calibration" / "h200x2-ddpaccum-2026-11-30"


def script():
    return load_script("validation/ddpaccum.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def synthetic(tmp_path, scale: dict[str, float] | None = None, jitter=(0.005, -0.005), drop=()):
    """A bundle whose processes measure each row's registered step x scale[row name] x exp(jitter[k]), peak inside the
    registered range; `drop`: process stems not written."""
    bundle = tmp_path / "set"
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    for row in registered()["rows"]:
        for k in range(1, row["processes"] + 1):
            stem = f"{row['name']}-r{k}"
            if stem in drop:
                continue
            p = row["predicted"]
            t = p["step_ms"] / 1e3 * (scale or {}).get(row["name"], 1.0) * math.exp(jitter[(k - 1) % len(jitter)])
            doc = {"tool": "llm-step", "format": 1, "mode": "ddp", "world_size": 2, "model": {"preset": row["preset"]},
                   "grad_accum": {"micro_batches": 4, "grad_sync": "step" if row["variant"] == "nosync" else "micro_batch"},
                   "shapes": [{"seq": row["seq"], "micro_batch": row["micro_batch"], "status": "ok", "median_step_s": t,
                               "max_memory_allocated_bytes": p["peak_mem_GiB"] * 2**30}]}
            (bundle / "runs" / f"{stem}.json").write_text("W1130 torchrun noise\n" + json.dumps(doc))
    return bundle


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = registered()
    monkeypatch.setenv("REGISTER_COMMIT", reg["registered_at_commit"])
    assert script().main(["--register", str(tmp_path / "again.yaml")]) == 0
    assert (tmp_path / "again.yaml").read_text() == (BUNDLE / "registered.yaml").read_text()
    assert script().main(["--register", str(BUNDLE / "registered.yaml")]) == 2   # never overwritten
    for r in reg["rows"]:   # GPU-bound shapes; the change moves only the sync rows, up
        assert r["predicted"]["host_share"] < 0.5
        if r["variant"] == "sync":
            assert r["predicted"]["step_ms"] > r["predicted"]["step_ms_before"]


def test_the_device_script_runs_the_registered_rows():
    text = (BUNDLE / "device_run.sh").read_text()
    s = script()
    shapes = re.search(r"^  for shape in (.*); do$", text, re.M).group(1).split()
    assert shapes == [f"{p}:{seq}:{mb}" for p, seq, mb, _ in s.SHAPES]
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == [str(k) for k in range(1, s.PROCESSES + 1)]
    assert '--warmup 3 --steps 6 --profile 0 --mode ddp --grad-accum 4"' in text and s.MICROBATCHES == 4
    assert 'guarded "$preset-${seq}x$mb-$v-r$r" 60 $ddp $flag --preset "$preset" --shapes "$seq:$mb"' in text
    assert '[ "$v" = nosync ] && flag="--no-sync"' in text and set(s.VARIANTS) == {"sync", "nosync"}
    assert {f"{p}-{seq}x{mb}-{v}" for p, seq, mb, _ in s.SHAPES for v in s.VARIANTS} == {r["name"] for r in registered()["rows"]}


def test_the_registered_shapes_are_new_to_calibration():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = registered()["rows"]
    assert seqs_named_elsewhere(BUNDLE, {r["seq"] for r in rows}) == []
    earlier = measured_llm_tokens(BUNDLE)
    assert registered_tokens(rows) & earlier == set()
    assert registered_tokens([r | {"micro_batch": r["micro_batch"] * r["microbatches"]} for r in rows]) & earlier == set()


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
