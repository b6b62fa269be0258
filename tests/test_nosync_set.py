"""Session 45's no-sync set (calibration/h200x2-nosync-2026-11-30, validation/nosync.py): the registration against a
fresh --register at its commit, the device script against the registered rows, the shapes new to calibration/, and
synthetic runs through the rules."""

from __future__ import annotations

import json
import math
import re
import shutil

import yaml
from conftest import ROOT, fresh_register_equals, load_script

BUNDLE = ROOT / "calibration" / "h200x2-nosync-2026-11-30"


def script():
    return load_script("validation/nosync.py")


def registered(bundle=BUNDLE) -> dict:
    return yaml.safe_load((bundle / "registered.yaml").read_text())


def synthetic(tmp_path, scale: dict[str, float] | None = None, jitter=(0.01, -0.01), drop=(), source=BUNDLE, mode="fsdp",
              extra_doc=None):
    """A bundle whose processes (the runner's --mode `mode`) measure each row's registered step (`source`'s
    registration) x scale[row name] x exp(jitter[k]), peak inside the registered range; `drop`: process stems not
    written; extra_doc(row, doc), where given, edits each process's document (another set's runner flags).
    tests/test_ddpaccum_set.py's, test_compilefsdp_set.py's and test_compileac_set.py's too."""
    bundle = tmp_path / "set"
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(source / "registered.yaml", bundle / "registered.yaml")
    for row in registered(source)["rows"]:
        for k in range(1, row["processes"] + 1):
            stem = f"{row['name']}-r{k}"
            if stem in drop:
                continue
            p = row["predicted"]
            t = p["step_ms"] / 1e3 * (scale or {}).get(row["name"], 1.0) * math.exp(jitter[(k - 1) % len(jitter)])
            doc = {"tool": "llm-step", "format": 1, "mode": mode, "world_size": 2, "model": {"preset": row["preset"]},
                   "grad_accum": {"micro_batches": 4, "grad_sync": "step" if row["variant"] == "nosync" else "micro_batch"},
                   "shapes": [{"seq": row["seq"], "micro_batch": row["micro_batch"], "status": "ok", "median_step_s": t,
                               "max_memory_allocated_bytes": p["peak_mem_GiB"] * 2**30}]}
            if extra_doc is not None:
                extra_doc(row, doc)
            (bundle / "runs" / f"{stem}.json").write_text("W1130 torchrun noise\n" + json.dumps(doc))
    return bundle


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    shares = {r["name"]: r["predicted"]["host_share"] for r in reg["rows"]}
    assert shares["1b-2112x4-sync"] < 0.5 and min(shares["1.1b-1088x1-sync"], shares["0.5b-2688x1-sync"]) >= 0.5


def device_script_runs(s, bundle, mode: str) -> None:
    """A sync / no-sync set's device_run.sh (this set's, ddpaccum's) runs its registered rows: the shapes, the
    processes, the runner's mode with 4 micro-batches, the no-sync flag per variant."""
    text = (bundle / "device_run.sh").read_text()
    shapes = re.search(r"^  for shape in (.*); do$", text, re.M).group(1).split()
    assert shapes == [f"{p}:{seq}:{mb}" for p, seq, mb, _ in s.SHAPES]
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == [str(k) for k in range(1, s.PROCESSES + 1)]
    assert f'--warmup 3 --steps 6 --profile 0 --mode {mode} --grad-accum 4"' in text and s.MICROBATCHES == 4
    assert f'guarded "$preset-${{seq}}x$mb-$v-r$r" 60 ${mode} $flag --preset "$preset" --shapes "$seq:$mb"' in text
    assert '[ "$v" = nosync ] && flag="--no-sync"' in text and set(s.VARIANTS) == {"sync", "nosync"}
    names = {f"{p}-{seq}x{mb}-{v}" for p, seq, mb, _ in s.SHAPES for v in s.VARIANTS}
    registered_rows = yaml.safe_load((bundle / "registered.yaml").read_text())["rows"]
    assert names == {r["name"] for r in registered_rows}


def test_the_device_script_runs_the_registered_rows():
    device_script_runs(script(), BUNDLE, "fsdp")


def test_the_registered_shapes_are_new_to_calibration():
    assert_new_to_calibration(BUNDLE)


def assert_new_to_calibration(bundle):
    """The bundle's seqs named nowhere else in calibration/, its tokens per micro-batch and per step measured nowhere
    else (tests/test_ddpaccum_set.py's too)."""
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = registered(bundle)["rows"]
    assert seqs_named_elsewhere(bundle, {r["seq"] for r in rows}) == []
    earlier = measured_llm_tokens(bundle)
    assert registered_tokens(rows) & earlier == set()
    assert registered_tokens([r | {"micro_batch": r["micro_batch"] * r["microbatches"]} for r in rows]) & earlier == set()


def test_runs_at_the_registered_steps_read_met(tmp_path):
    out = script().read_out(synthetic(tmp_path))
    v = out["verdicts"]
    assert v["D"] == "MET" and v["M"].startswith("within") and v["P"].startswith("memory met"), v
    assert v["S"].count("MET:") == 3 and "NOT MET" not in v["S"] and len(out["procs"]) == 12 and not out["left"], v


def test_a_no_sync_that_saves_nothing_on_a_host_bound_shape_misses_rule_s(tmp_path):
    rows = {r["name"]: r["predicted"]["step_ms"] for r in registered()["rows"]}
    same = {"1.1b-1088x1-nosync": rows["1.1b-1088x1-sync"] / rows["1.1b-1088x1-nosync"]}   # measured as slow as sync
    v = script().read_out(synthetic(tmp_path, same))["verdicts"]
    assert re.search(r"1\.1b 1088:1: NOT MET: no-sync / sync measured [+-]0\.0%, registered -9\.0%", v["S"]), v
    assert v["D"].startswith("MODEL (no-sync's terms)"), v


def test_noise_a_slow_lease_and_missing_processes(tmp_path):
    loud = script().read_out(synthetic(tmp_path / "loud", jitter=(0.3, -0.3)))["verdicts"]
    assert loud["D"].startswith("NOISE"), loud
    slow = script().read_out(synthetic(tmp_path / "slow", {r["name"]: 1.2 for r in registered()["rows"]}))["verdicts"]
    assert slow["D"].startswith("MODEL (the step)") and slow["B"].startswith("FAST"), slow
    out = script().read_out(synthetic(tmp_path / "cut", drop={"0.5b-2688x1-sync-r2", "0.5b-2688x1-nosync-r2"}))
    assert sorted(x.split(":")[0] for x in out["left"]) == ["0.5b-2688x1-nosync-r2", "0.5b-2688x1-sync-r2"]
    assert len(out["procs"]) == 10 and out["verdicts"]["D"] == "MET"


def test_the_set_enters_the_error_bands_as_fsdp_rows_one_per_shape_and_variant(tmp_path):
    """heldout/eager_nosync (REGISTERED_STEP_SETS): nothing before a run; one row per (shape, variant), its processes'
    mean (read as the read-out reads them) against the registered product step, flagged by the registered share: FSDP
    (the GPU-bound 1b shape) and FSDP+host-bound, sync and no-sync alike; the set one source."""
    from collections import Counter

    import pytest

    from simcluster.errors import SimclusterError
    from simcluster.heldout import eager_nosync, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_nosync.NOSYNC_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_nosync.NOSYNC_BUNDLE
    assert eager_nosync.held_out_rows(tmp_path) == []   # registered, not run: no row
    reg = {r["name"]: r for r in registered()["rows"]}
    got = eager_nosync.held_out_rows(synthetic(tmp_path / "a", {"0.5b-2688x1-nosync": 1.2}, drop={"1b-2112x4-sync-r2"}))
    assert len(got) == 6 and all(r["host_flag"] == "registered" and r["zero"] == 3 and r["gpus"] == 2 for r in got)
    for r, x in zip(got, reg.values(), strict=True):
        assert r["predicted_s"] == x["predicted"]["step_ms"] / 1e3 and x["variant"] in r["label"]
    assert got[0]["measured_s"] == pytest.approx(reg["1b-2112x4-sync"]["predicted"]["step_ms"] / 1e3 * math.exp(0.01))   # r1 alone
    assert got[5]["measured_s"] == pytest.approx(1.2 * reg["0.5b-2688x1-nosync"]["predicted"]["step_ms"] / 1e3, rel=1e-3)
    assert Counter(x.regime.split(" | ")[2] for x in eager_residuals(got)) == {"FSDP": 2, "FSDP+host-bound": 4}
    assert {x.source for x in eager_residuals(got)} == {"set"}
    wrong = synthetic(tmp_path / "b")   # a process that reduced per micro-batch where no-sync was registered: left out
    path = wrong / "runs" / "1b-2112x4-nosync-r1.json"
    path.write_text(path.read_text().replace('"grad_sync": "step"', '"grad_sync": "micro_batch"'))
    assert len(eager_nosync.held_out_rows(wrong)) == 6
    bad = synthetic(tmp_path / "c")
    (bad / "registered.yaml").write_text((bad / "registered.yaml").read_text().replace("host_share: 0.0535", "host_share: null"))
    with pytest.raises(SimclusterError, match=r"registered.yaml: rows\[0\]: no name, variant, processes or predicted"):
        eager_nosync.held_out_rows(bad)
    if (BUNDLE / "runs").is_dir():   # read once: each row the mean of its two processes (readout.txt)
        ran = {r["label"]: r["measured_s"] for r in eager_nosync.held_out_rows(BUNDLE)}
        assert ran["0.5b fsdp sync seq 2688 mb 1 x4 micro-batches"] == pytest.approx((390.9 + 438.4) / 2e3, abs=1e-4)
