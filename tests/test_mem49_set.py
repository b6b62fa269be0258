"""Session 49's mem49 set (calibration/h200x2-mem49-2026-12-01, validation/mem49.py): compiled FSDP2 without checkpointing,
framework.compiled_nock_memory's peak held out. The registration against a fresh --register at its commit, the device
script against the registered rows and its budget, the seqs new to calibration/, synthetic runs through rules MM and R."""

from __future__ import annotations

import json
import re

import test_nosync_set
import test_x2set49_set
from conftest import ROOT, fresh_register_equals, load_script, one_line_refusal

BUNDLE = ROOT / "calibration" / "h200x2-mem49-2026-12-01"


def script():
    return load_script("validation/mem49.py")


def regs() -> dict:
    return {r["name"]: r for r in test_nosync_set.registered(BUNDLE)["rows"]}


def synthetic(tmp_path, peak_scale: dict[str, float] | None = None, drop=(), ac_mode="none"):
    """Processes at the registered step, each peak (the timed steps') the registered peak x peak_scale[row]."""
    def as_run(row: dict, doc: dict) -> None:
        test_x2set49_set.as_run(row | {"part": "C"}, doc)
        doc["ac_mode"] = ac_mode
        shape = doc["shapes"][0]
        shape["max_memory_allocated_timed_bytes"] = shape["max_memory_allocated_bytes"] * (peak_scale or {}).get(row["name"], 1.0)

    return test_nosync_set.synthetic(tmp_path, None, (0.002, -0.002), drop, BUNDLE, extra_doc=as_run)


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    assert [(r["name"], r["processes"], r["ac_mode"]) for r in reg["rows"]] == [
        ("1b-3104x4-fsdpnock", 2, "none"), ("2b-3104x2-fsdpnock", 1, "none")]
    for r in reg["rows"]:   # GPU-bound; the term moves each peak down, by more where the logits' share is larger
        p = r["predicted"]
        assert p["host_share"] < 0.25 and p["peak_mem_GiB"] < p["peak_mem_GiB_before"], r
    one, two = (reg["rows"][k]["predicted"] for k in (0, 1))
    assert one["peak_mem_GiB_before"] / one["peak_mem_GiB"] > two["peak_mem_GiB_before"] / two["peak_mem_GiB"]
    assert reg["judge"] == script().JUDGE and reg["rules"] == script().RULES


def nock_script_runs(bundle, rows: dict, budget_s: int, limit_s: int) -> None:
    """A compiled-FSDP2-without-checkpointing set's device_run.sh (this set's, fsdpc50's): the budget guard, each run's
    limit, the runner's flags without --ac-mode, and every registered row's processes (each numbered once)."""
    text = (bundle / "device_run.sh").read_text()
    assert f"BUDGET_S=${{BUDGET_S:-{budget_s}}}" in text and ". calibration/device_lib.sh" in text
    assert f'"$1-${{2/:/x}}-fsdpnock-r$3" {limit_s} $comp' in text and "--ac-mode" not in text.split("comp=", 1)[1]
    assert "--warmup 3 --steps 5 --profile 0 --mode fsdp --compile --compile-scope model" in text
    for name, r in rows.items():
        calls = re.findall(rf'\bnock {r["preset"]} {r["seq"]}:{r["micro_batch"]} (\d)', text)
        assert sorted(calls) == [str(k) for k in range(1, r["processes"] + 1)], name


def test_the_device_script_runs_the_registered_rows_within_budget():
    nock_script_runs(BUNDLE, regs(), 90, 60)   # worst case 90 + 60 = 150 s


def test_the_registered_shapes_are_new_to_calibration():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = list(regs().values())
    assert registered_tokens(rows) & measured_llm_tokens(BUNDLE) == set()
    # x2set49's register-print.txt names 3104 in the lines its shapes were searched from (none of them ran)
    x2set49 = ROOT / "calibration" / "h200x2-x2set49-2026-12-01"
    named = seqs_named_elsewhere(BUNDLE, set(script().SEQS))
    assert {(p, s) for p, s in named if p != x2set49 / "register-print.txt"} == set(), named


def test_runs_at_the_registered_peaks_hold_and_at_the_before_column_do_not(tmp_path):
    out = script().read_out(synthetic(tmp_path))
    v = out["verdicts"]
    assert len(out["procs"]) == 3 and not out["left"], out["left"]
    assert list(v) == ["N", "M", "B", "P", "MM", "R"]
    assert v["MM"].startswith("HELD: max |error| 0.0%") and v["P"].startswith("memory met"), v
    logits = -2 * 3104 * 4 * 128256 / 2**30   # 1b's vocab, 2 B a logit
    assert "residual +0.000 GiB" in v["R"] and f"saved logits reused {logits:+.3f}" in v["R"], v["R"]
    before = {n: r["predicted"]["peak_mem_GiB_before"] / r["predicted"]["peak_mem_GiB"] for n, r in regs().items()}
    v = script().read_out(synthetic(tmp_path / "before", before))["verdicts"]
    assert v["MM"].startswith("NOT HELD") and "(before mem49 +0.0%)" in v["MM"], v["MM"]
    edge = {n: 1 / 1.049 for n in regs()}   # the model 4.9% high on both rows: within 5%
    assert script().read_out(synthetic(tmp_path / "edge", edge))["verdicts"]["MM"].startswith("HELD")
    v = script().read_out(synthetic(tmp_path / "one", {"2b-3104x2-fsdpnock": 1 / 1.06}))["verdicts"]
    assert v["MM"].startswith("NOT HELD: max |error| 6.0%"), v["MM"]


def test_missing_processes_checkpointed_runs_and_a_registration_without_its_keys(tmp_path):
    from simcluster.errors import SimclusterError

    cut = script().read_out(synthetic(tmp_path / "cut", drop={"1b-3104x4-fsdpnock-r1", "1b-3104x4-fsdpnock-r2",
                                                              "2b-3104x2-fsdpnock-r1"}))
    assert cut["verdicts"]["MM"] == "NO DATA: no process ran" and len(cut["left"]) == 3, cut
    ckpt = script().read_out(synthetic(tmp_path / "ckpt", ac_mode="full"))
    assert not ckpt["procs"] and all("without checkpointing" in line for line in ckpt["left"]), ckpt["left"]
    bare = synthetic(tmp_path / "bare")
    text = one_line_refusal(lambda path: script().read_out(path.parent), bare / "registered.yaml",
                            lambda doc: doc["rows"][1]["predicted"].pop("peak_mem_GiB_before"), bare, SimclusterError)
    assert "a row without mem49's keys" in text, text
    path = bare / "runs" / "2b-3104x2-fsdpnock-r1.json"
    assert json.loads(path.read_text().split("\n", 1)[1])["shapes"][0]["max_memory_allocated_timed_bytes"] > 0
    assert script().main([str(path)]) == 1   # a file given as the bundle: one line, no traceback
