"""Session 50's fsdpc50 set (calibration/h200x2-fsdpc50-2026-12-01, validation/fsdpc50.py): compiled FSDP2 without
checkpointing, framework.compiled_nock_loss (OFF) decided by rule L. The registration against a fresh --register at its
commit, the device script against the registered rows and its budget, the seqs new to calibration/, synthetic runs
through rules MC and L."""

from __future__ import annotations

import test_mem49_set
import test_nosync_set
import test_x2set49_set
from conftest import ROOT, fresh_register_equals, load_script, one_line_refusal

BUNDLE = ROOT / "calibration" / "h200x2-fsdpc50-2026-12-01"


def script():
    return load_script("validation/fsdpc50.py")


def regs() -> dict:
    return {r["name"]: r for r in test_nosync_set.registered(BUNDLE)["rows"]}


def synthetic(tmp_path, scale: dict[str, float] | None = None, drop=(), ac_mode="none", jitter=(0.002, -0.002),
              peak: str = "predicted", peak_scale: float = 1.0, form: str = ""):
    """Processes at the registered shipped step x scale[row], each peak (the timed steps') the registered `peak` column's
    x peak_scale (plus the row's registered peak_forms_GiB[form] where a form is named)."""
    def as_run(row: dict, doc: dict) -> None:
        test_x2set49_set.as_run(row | {"part": "C"}, doc)
        doc["ac_mode"] = ac_mode
        moved = row["peak_forms_GiB"][form] if form else 0.0
        doc["shapes"][0]["max_memory_allocated_timed_bytes"] = (row[peak]["peak_mem_GiB"] * peak_scale + moved) * 2**30

    return test_nosync_set.synthetic(tmp_path, scale, jitter, drop, BUNDLE, extra_doc=as_run)


def at_candidate(extra: dict[str, float] | None = None) -> dict[str, float]:
    """Scales putting each row's processes at its candidate step (x extra[row])."""
    return {n: float(r["predicted_candidate"]["step_ms"]) / float(r["predicted"]["step_ms"]) * (extra or {}).get(n, 1.0)
            for n, r in regs().items()}


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    assert [(r["name"], r["processes"], r["ac_mode"]) for r in reg["rows"]] == [
        ("1b-576x24-fsdpnock", 2, "none"), ("3b-480x16-fsdpnock", 2, "none"), ("1b-416x32-fsdpnock", 1, "none")]
    for r in reg["rows"]:   # GPU-bound; the step candidate below the shipped step, its peak the same; the peak candidate
        p, c, m = r["predicted"], r["predicted_candidate"], r["predicted_memory"]   # moves the peak alone, down
        assert p["host_share"] < 0.1 and c["step_ms"] < p["step_ms"] and c["peak_mem_GiB"] == p["peak_mem_GiB"], r
        assert m["step_ms"] == p["step_ms"] and m["peak_mem_GiB"] < p["peak_mem_GiB"], r
    peak = {r["name"]: r["predicted_memory"]["peak_mem_GiB"] / r["predicted"]["peak_mem_GiB"] - 1 for r in reg["rows"]}
    assert peak["1b-576x24-fsdpnock"] < -0.07 and peak["1b-416x32-fsdpnock"] < -0.07 and -0.02 < peak["3b-480x16-fsdpnock"] < 0
    move = {r["name"]: 1 - r["predicted_candidate"]["step_ms"] / r["predicted"]["step_ms"] for r in reg["rows"]}
    assert move["1b-576x24-fsdpnock"] > 0.08 and move["1b-416x32-fsdpnock"] > 0.08 and 0.03 < move["3b-480x16-fsdpnock"] < 0.04
    assert reg["judge"] == script().JUDGE and reg["rules"] == script().RULES


def test_the_device_script_runs_the_registered_rows_within_budget():
    test_mem49_set.nock_script_runs(BUNDLE, regs(), 180, 90)   # worst case 180 + 90 = 270 s


def test_the_registered_shapes_are_new_to_calibration():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = list(regs().values())
    assert registered_tokens(rows) & measured_llm_tokens(BUNDLE) == set()
    assert seqs_named_elsewhere(BUNDLE, set(script().SEQS)) == []
    assert {r["seq"] for r in rows} == set(script().SEQS)


def test_runs_at_the_candidate_turn_it_on_at_the_shipped_step_off(tmp_path):
    out = script().read_out(synthetic(tmp_path, at_candidate()))
    v = out["verdicts"]
    assert len(out["procs"]) == 5 and not out["left"], out["left"]
    assert list(v) == ["N", "M", "B", "P", "MC", "L", "PM", "PF"]
    assert v["L"].startswith("ON: mean |error| shipped") and "candidate 0.2%" in v["L"], v["L"]
    assert v["MC"].startswith("within the target: candidate mean |error| 0.2%"), v["MC"]
    v = script().read_out(synthetic(tmp_path / "ship"))["verdicts"]
    assert v["L"].startswith("OFF: mean |error| shipped 0.2%"), v["L"]


def test_a_row_the_candidate_misses_by_two_points_more_vetoes_and_a_middle_reading_is_undecided(tmp_path):
    # 3b measured 2% above its shipped step: the candidate 5.4% fast there, the shipped 2.0%: vetoed although the 1b rows
    # would turn it on
    veto = at_candidate() | {"3b-480x16-fsdpnock": 1.02}
    v = script().read_out(synthetic(tmp_path / "veto", veto, jitter=(0.0,)))["verdicts"]["L"]
    assert v.startswith("UNDECIDED (vetoed on 3b-480x16-fsdpnock)"), v
    mid = {n: (1 + float(r["predicted_candidate"]["step_ms"]) / float(r["predicted"]["step_ms"])) / 2 for n, r in regs().items()}
    v = script().read_out(synthetic(tmp_path / "mid", mid, jitter=(0.0,)))["verdicts"]["L"]
    assert v.startswith("UNDECIDED: mean |error|"), v   # halfway: both columns as far off, no veto
    far = at_candidate({n: 0.85 for n in regs()})   # the lease 15% faster than the candidate: c > 8%
    v = script().read_out(synthetic(tmp_path / "far", far, jitter=(0.0,)))["verdicts"]["L"]
    assert v.startswith("UNDECIDED: mean |error| shipped"), v


def test_rule_pm_reads_the_peak_columns(tmp_path):
    v = script().read_out(synthetic(tmp_path / "cand", peak="predicted_memory"))["verdicts"]["PM"]
    assert v.startswith("ON: mean |error| shipped") and "candidate 0.0% over 3 rows" in v, v
    v = script().read_out(synthetic(tmp_path / "ship"))["verdicts"]["PM"]
    assert v.startswith("OFF: mean |error| shipped 0.0%"), v
    # the candidate 1.5% off on every row (over pm_pct, 1%) while still better than the shipped: UNDECIDED; 0.8%: ON
    v = script().read_out(synthetic(tmp_path / "off", peak="predicted_memory", peak_scale=1 / 0.985))["verdicts"]["PM"]
    assert v.startswith("UNDECIDED"), v
    v = script().read_out(synthetic(tmp_path / "near", peak="predicted_memory", peak_scale=1 / 0.992))["verdicts"]["PM"]
    assert v.startswith("ON"), v
    # peaks where mem49's registered -2TV+2R puts them: the candidate 1.7-1.9% low, not ON; rule PF names the form
    out = script().read_out(synthetic(tmp_path / "mem49", form="-2TV+2R"))["verdicts"]
    assert out["PM"].startswith("UNDECIDED"), out["PM"]
    assert out["PF"].startswith("reported, judges nothing: 1b-576x24-fsdpnock r -2.813 GiB, r - (-2TV+2R+2W) -0.489, "
                                "r - (-2TV+2R) +0.000; 3b-480x16-fsdpnock r -1.101 GiB, r - (-2TV+2R+2W) -0.734"), out["PF"]
    out = script().read_out(synthetic(tmp_path / "form", form="-2TV+2R+2W"))["verdicts"]
    assert out["PM"].startswith("ON") and "r - (-2TV+2R+2W) +0.000, r - (-2TV+2R) +0.489" in out["PF"], out
    cut = script().read_out(synthetic(tmp_path / "cut", drop={f"{n}-r{k}" for n in regs() for k in (1, 2)}))
    assert cut["verdicts"]["PM"] == cut["verdicts"]["PF"] == "NO DATA: no peak read", cut["verdicts"]


def test_missing_processes_checkpointed_runs_and_a_registration_without_its_keys(tmp_path):
    from simcluster.errors import SimclusterError

    cut = script().read_out(synthetic(tmp_path / "cut", drop={f"{n}-r{k}" for n in regs() for k in (1, 2)}))
    assert cut["verdicts"]["L"] == "NO DATA: no process ran" and len(cut["left"]) == 5, cut
    ckpt = script().read_out(synthetic(tmp_path / "ckpt", ac_mode="full"))
    assert not ckpt["procs"] and all("without checkpointing" in line for line in ckpt["left"]), ckpt["left"]
    bare = synthetic(tmp_path / "bare")
    text = one_line_refusal(lambda path: script().read_out(path.parent), bare / "registered.yaml",
                            lambda doc: doc["rows"][1].pop("predicted_memory"), bare, SimclusterError)
    assert "a row without fsdpc50's keys" in text, text
    text = one_line_refusal(lambda path: script().read_out(path.parent), bare / "registered.yaml",
                            lambda doc: doc["rows"][0].update(peak_forms_GiB=[1.0]), bare, SimclusterError)
    assert "a row without fsdpc50's keys" in text, text
    assert script().main([str(bare / "runs" / "3b-480x16-fsdpnock-r1.json")]) == 1   # a file as the bundle: one line
