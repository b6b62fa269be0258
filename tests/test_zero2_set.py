"""Session 46's ZeRO-2 set (calibration/h200x2-zero2-2026-11-30, validation/zero2.py): the registration against a fresh
--register at its commit, the device script against the registered rows, the shapes new to calibration/, synthetic
runs through the rules (the wait's ADOPT rule both ways), and the rows the error bands read once it has run."""

from __future__ import annotations

import json
import math
import re
import shutil

import test_nosync_set
from conftest import ROOT, load_script, registered_before_adopt2g

BUNDLE = ROOT / "calibration" / "h200x2-zero2-2026-11-30"


def script():
    return load_script("validation/zero2.py")


def registered() -> dict:
    return test_nosync_set.registered(BUNDLE)


def synthetic(tmp_path, scale: dict[str, float] | None = None, jitter=(0.01, -0.01, 0.0), drop=(), source=BUNDLE):
    """A bundle whose processes measure each row's registered step x scale[row name] x exp(jitter[k]) (the 0.5b rows
    two shapes of one process document), peak inside the registered range, the runner's reshard flag as the row's;
    `drop`: process stems not written; `source`: the registered set copied (tests/test_zero2b_set.py's its own)."""
    bundle = tmp_path / "set"
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(source / "registered.yaml", bundle / "registered.yaml")
    docs = {}
    for row in test_nosync_set.registered(source)["rows"]:
        for k in range(1, row["processes"] + 1):
            stem = f"{row['process']}-r{k}"
            p = row["predicted"]
            t = p["step_ms"] / 1e3 * (scale or {}).get(row["name"], 1.0) * math.exp(jitter[(k - 1) % len(jitter)])
            doc = docs.setdefault(stem, {"tool": "llm-step", "format": 1, "mode": "fsdp", "world_size": 2,
                                         "model": {"preset": row["preset"]},
                                         "grad_accum": {"micro_batches": 4, "grad_sync": "micro_batch"}, "shapes": []}
                                  | ({} if row["reshard_after_forward"] else {"fsdp_reshard_after_forward": False}))
            doc["shapes"].append({"seq": row["seq"], "micro_batch": row["micro_batch"], "status": "ok", "median_step_s": t,
                                  "max_memory_allocated_bytes": p["peak_mem_GiB"] * 2**30 * 1.2,   # the first steps'
                                  "max_memory_allocated_timed_bytes": p["peak_mem_GiB"] * 2**30})      # P reads this one
    for stem, doc in docs.items():
        if stem not in drop:
            (bundle / "runs" / f"{stem}.json").write_text("W1130 torchrun noise\n" + json.dumps(doc))
    return bundle


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = registered_before_adopt2g(script(), BUNDLE, tmp_path, monkeypatch)
    wait = {r["name"]: r["predicted"]["step_ms"] / r["predicted"]["step_ms_nowait"] - 1 for r in reg["rows"]
            if r["variant"] == "zero2"}
    assert wait["8b-704x1-zero2"] > 0.05 and max(wait["0.5b-2496x1-zero2"], wait["0.5b-3456x4-zero2"]) < 0.02, wait
    shares = {r["name"]: r["predicted"]["host_share"] for r in reg["rows"]}
    assert shares["0.5b-2496x1-zero2"] > 0.5 > shares["0.5b-3456x4-zero2"]


def test_the_device_script_runs_the_registered_rows():
    """Every registered row's processes, and no other, with the runner's flags per variant and the shapes per process."""
    s, text = script(), (BUNDLE / "device_run.sh").read_text()
    assert '--warmup 2 --steps 5 --profile 0 --mode fsdp --grad-accum 4"' in text and s.nosync.MICROBATCHES == 4
    assert '[ "$1" = zero2 ] && flag="--reshard-after-forward false"' in text
    calls = re.findall(r"one \"\$v\" \$r (\S+) (\S+) ([^\s;]+)", text)
    assert calls == [("8b", "704:1", "8b-704x1"), ("0.5b", "2496:1,3456:4", "0.5b-2496x1+3456x4")]
    assert re.search(r"^for r in 1 2; do$", text, re.M) and re.search(r"^one zero2 3 8b 704:1 8b-704x1$", text, re.M)
    ran = {f"{stem}-{v}-r{k}" for _, _, stem in calls for v in s.VARIANTS for k in (1, 2)} | {"8b-704x1-zero2-r3"}
    rows = registered()["rows"]
    assert ran == {f"{r['process']}-r{k}" for r in rows for k in range(1, r["processes"] + 1)}
    shapes = {stem.split("-")[0]: shp for preset, shp, stem in calls}
    for r in rows:
        assert f"{r['seq']}:{r['micro_batch']}" in shapes[r["preset"]].split(",")
        assert r["reshard_after_forward"] == (r["variant"] == "control")


def test_the_registered_shapes_are_new_to_calibration():
    test_nosync_set.assert_new_to_calibration(BUNDLE)


def test_runs_at_the_registered_steps_adopt_the_wait(tmp_path):
    out = script().read_out(synthetic(tmp_path))
    v = out["verdicts"]
    assert v["D"] == "WAIT ADOPTED; step within; memory met", v
    assert v["A"].startswith("ADOPT | ") and v["A"].count("not deciding") == 2 and "8b 704:1: ADOPT" in v["A"], v
    assert len(out["procs"]) == 13 and not out["left"]   # (row, process): the 0.5b processes time two rows each


def test_a_zero2_measured_as_without_the_wait_rejects_it(tmp_path):
    rows = {r["name"]: r["predicted"] for r in registered()["rows"]}
    nowait = {"8b-704x1-zero2": rows["8b-704x1-zero2"]["step_ms_nowait"] / rows["8b-704x1-zero2"]["step_ms"]}
    v = script().read_out(synthetic(tmp_path, nowait))["verdicts"]
    assert v["A"].startswith("REJECT") and v["D"].startswith("WAIT REJECTED"), v
    half = {"8b-704x1-zero2": math.sqrt(nowait["8b-704x1-zero2"])}   # half-way: within neither's limit of the other
    assert script().read_out(synthetic(tmp_path / "half", half))["verdicts"]["A"].startswith("UNDECIDED")


def test_noise_and_missing_processes(tmp_path):
    loud = script().read_out(synthetic(tmp_path / "loud", jitter=(0.3, -0.3, 0.0)))["verdicts"]
    assert loud["D"].startswith("NOISE") and loud["A"].startswith("UNDECIDED (NOISE)"), loud
    out = script().read_out(synthetic(tmp_path / "cut", drop={"8b-704x1-control-r1", "8b-704x1-control-r2"}))
    assert len(out["left"]) == 2 and "8b 704:1: NO DATA" in out["verdicts"]["A"] and out["verdicts"]["A"].startswith("NO DATA")
    wrong = synthetic(tmp_path / "flag")   # a zero2 process that resharded after forward is no zero2 process
    doc = json.loads((wrong / "runs" / "8b-704x1-zero2-r3.json").read_text().split("\n", 1)[1])
    doc.pop("fsdp_reshard_after_forward")
    (wrong / "runs" / "8b-704x1-zero2-r3.json").write_text(json.dumps(doc))
    left = script().read_out(wrong)["left"]
    assert left == ["8b-704x1-zero2-r3: not reshard_after_forward False (fsdp_reshard_after_forward None)"], left


def test_the_set_enters_the_error_bands_as_fsdp_rows_one_per_shape_and_variant(tmp_path):
    """heldout/eager_nosync (REGISTERED_STEP_SETS): nothing before a run; one row per (shape, variant) against the
    registered product step, the zero2 rows zero 2, the control rows zero 3."""
    from simcluster.heldout import eager_nosync, step_sets

    assert eager_nosync.ZERO2_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_nosync.ZERO2_BUNDLE
    assert eager_nosync.held_out_rows(tmp_path) == []
    got = eager_nosync.held_out_rows(synthetic(tmp_path / "a", {"8b-704x1-zero2": 1.1}))
    reg = {r["name"]: r["predicted"]["step_ms"] / 1e3 for r in registered()["rows"]}
    assert len(got) == 6 and sorted(r["zero"] for r in got) == [2, 2, 2, 3, 3, 3]
    z8 = next(r for r in got if r["label"].startswith("8b fsdp zero2"))
    assert math.isclose(z8["measured_s"], reg["8b-704x1-zero2"] * 1.1, rel_tol=0.01) and z8["predicted_s"] == reg["8b-704x1-zero2"]
    from simcluster.trust.build import eager_residuals  # FSDP2 either way: the FSDP bands, host-bound or not

    assert {res.regime for res in eager_residuals(got)} == {"llm | PyTorch eager | FSDP | bf16",
                                                            "llm | PyTorch eager | FSDP+host-bound | bf16"}
