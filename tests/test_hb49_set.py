"""Session 49's registered one-GPU host-bound set (calibration/h200x1-hb49-2026-12-01, validation/hb49.py): the
registration against a fresh --register at this commit, the device script against the read-out's rows, the re-run
shapes exactly their earlier bundles' and the new shapes' seqs new to every bundle, and synthetic runs through the
rules N, M, B, L, S, P, R and D (the re-run shapes read against their earlier bundles' real processes)."""

from __future__ import annotations

import json
import math
import re
import shutil

import yaml
from conftest import ROOT, load_script, measured_llm_tokens, refuses_paths_a_keyless_row_and_a_foreign_registration, seqs_named_elsewhere
from test_hostsingle_set import doc

BUNDLE = ROOT / "calibration" / "h200x1-hb49-2026-12-01"
NEW_SEQS = {1248, 1696, 2336, 3168, 864, 1120}   # hb49's seqs (the session's task file)


def script():
    return load_script("validation/hb49.py")


def earlier_mean_s(row: dict) -> float:
    return math.exp(sum(script().earlier_logs(row)) / len(script().earlier_logs(row)))


def synthetic(tmp_path, jitter: list[float], lease: dict | None = None, offset: float = 0.0, mem: float = 1.0):
    """A copy of the registration whose processes measure, per row: a re-run row its earlier bundle's mean times
    exp(lease[name]) (default 0), a new row its registered product step times exp(-offset); each times exp(jitter[i])."""
    bundle = tmp_path / "set"
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    i = 0
    for row in yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]:
        p = row["predicted"]["product"]
        base = (earlier_mean_s(row) * math.exp((lease or {}).get(row["name"], 0.0)) if row["earlier"]
                else p["step_ms"] / 1e3 * math.exp(-offset))
        for k in range(1, row["processes"] + 1):
            t = base * math.exp(jitter[i % len(jitter)])
            i += 1
            d = doc(row["preset"], row["seq"], row["micro_batch"], row["ac_mode"], t, p["peak_mem_GiB"] * mem)
            (bundle / "runs" / f"{row['name']}-r{k}.json").write_text("log line\n" + json.dumps(d))
    return bundle


def test_the_registration_is_a_fresh_register_at_this_commit(tmp_path):
    s = script()
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    fresh_path = tmp_path / "registered.yaml"
    assert s.main(["--register", str(fresh_path)]) == 0
    fresh = yaml.safe_load(fresh_path.read_text())
    for key in ("script", "calibration", "product_host", "judge", "rules", "rows"):
        assert reg[key] == fresh[key], key
    assert [(r["name"], r["preset"], r["seq"], r["micro_batch"], r["ac_mode"], r["earlier"]) for r in reg["rows"]] == list(s.SHAPES)
    assert [r["group"] for r in reg["rows"]] == ["op+host-bound"] * 4 + ["single+host-bound"]
    assert s.main(["--register", str(fresh_path)]) == 2   # never over an existing registration
    assert "/work/" not in (BUNDLE / "registered.yaml").read_text()   # no absolute paths


def test_the_device_script_runs_the_registered_processes_with_the_earlier_sets_arguments():
    text = (BUNDLE / "device_run.sh").read_text()
    runs = re.findall(r"^  guarded (\S+)-r\$r 60 \$one \$step --preset (\S+) --shapes (\d+):(\d+)(?: --ac-mode (\w+))?$", text, re.M)
    assert [(n, p, int(q), int(m), a or "none") for n, p, q, m, a in runs] == [x[:5] for x in script().SHAPES]
    assert "for r in 1 2 3; do" in text and script().PROCESSES == 3
    assert 'one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single"' in text
    assert 'step="--warmup 5 --steps 20 --profile 0"' in text
    for earlier in {x[5] for x in script().SHAPES if x[5]}:   # the earlier sets ran these very arguments
        old = (ROOT / earlier / "device_run.sh").read_text()
        assert 'step="--warmup 5 --steps 20 --profile 0"' in old and "--mode single" in old, earlier
    budget = int(re.search(r"BUDGET_S=\$\{BUDGET_S:-(\d+)\}", text).group(1))
    assert budget + 60 <= 330   # the worst case: a run may start at BUDGET_S - 1 s and take its 60 s limit


def test_the_reruns_are_their_earlier_sets_shapes_and_the_new_shapes_are_new():
    from simcluster.runner.llm_decoder import PRESETS

    s = script()
    earlier_tokens = measured_llm_tokens(BUNDLE)
    for name, preset, seq, mb, ac, earlier in s.SHAPES:
        if earlier:   # a shape on two leases: its earlier bundle registered and ran it (>= 2 processes)
            rows = yaml.safe_load((ROOT / earlier / "registered.yaml").read_text())["rows"]
            assert any((r["preset"], r["seq"], r["micro_batch"], r["ac_mode"]) == (preset, seq, mb, ac) for r in rows), name
            assert len(s.earlier_logs({"preset": preset, "seq": seq, "micro_batch": mb, "ac_mode": ac, "earlier": earlier})) == 3
        else:
            assert seq in NEW_SEQS and (preset, PRESETS[preset]["layers"], seq * mb) not in earlier_tokens, name
    exempt = {ROOT / e: {x[2] for x in s.SHAPES if x[5] == e} for e in {x[5] for x in s.SHAPES if x[5]}}
    seqs = {x[2] for x in s.SHAPES}
    assert seqs_named_elsewhere(BUNDLE, seqs, exempt) == []


def test_reruns_on_their_earlier_leases_means_read_under_and_model_limited_expected(tmp_path):
    v = script().read_out(synthetic(tmp_path, [0.02, -0.02, 0.0]))["verdicts"]
    assert v["L"].startswith("UNDER") and "lease sd 0.000 (3 shapes on two leases)" in v["L"], v["L"]
    assert v["D"].startswith("single+sac-op+host-bound: model-limited expected; the product stays"), v["D"]
    assert "below the 8% target" in v["N"] and v["P"].startswith("memory met"), v
    assert v["M single+host-bound"].startswith("within") and v["B single+host-bound"].startswith("NONE"), v
    # the earlier leases' own product errors (ophb-0.8b -12.5% on hostsingle's lease) repeat here: one shape misses
    assert "product error here -12.5%, there -12.5%" in v["L ophb-0.8b"], v["L ophb-0.8b"]
    assert v["S"] == "a shape term: ophb-0.8b" and v["R op+host-bound"].startswith("not judged"), v


def test_reruns_far_from_their_earlier_leases_read_a_lease_term_that_reaches_the_target(tmp_path):
    v = script().read_out(synthetic(tmp_path, [0.01, -0.01, 0.0], {"ophb-0.5b": 0.25, "ophb-1b": -0.25, "ophb-0.8b": 0.2},
                                    offset=0.2))["verdicts"]
    assert v["L"].startswith("REACHES"), v["L"]
    assert "noise-limited possible" in v["D"], v["D"]
    assert v["M single+host-bound"].startswith("not within") and v["B single+host-bound"].startswith("SLOW"), v


def test_a_shape_term_is_a_shape_that_misses_alike_on_both_leases(tmp_path):
    # every re-run shape 15% slower than on its earlier lease: ophb-0.5b +4.2 -> -10.3% (under the target there),
    # ophb-1b -6.2 -> -19.3% (under the target there), ophb-0.8b -12.5 -> -24.7%: one shape term
    v = script().read_out(synthetic(tmp_path, [0.0, 0.01], {n: 0.15 for n in ("ophb-0.5b", "ophb-1b", "ophb-0.8b")}))["verdicts"]
    assert v["S"] == "a shape term: ophb-0.8b", v
    v = script().read_out(synthetic(tmp_path / "b", [0.0, 0.01], {"ophb-0.5b": -0.25, "ophb-1b": 0.15, "ophb-0.8b": -0.2}))["verdicts"]
    assert v["S"] == "no shape term shown", v   # ophb-0.8b +7.3% here: under the target on one lease


def test_loud_processes_read_noise_and_memory_outside_the_range_is_not_met(tmp_path):
    s = script()
    loud = s.read_out(synthetic(tmp_path / "loud", [0.3, -0.3, 0.0, 0.25]))["verdicts"]
    assert "ABOVE the 8% target" in loud["N"] and loud["D"].startswith("NOISE"), loud
    v = s.read_out(synthetic(tmp_path / "mem", [0.0], mem=1.2))["verdicts"]
    assert v["P"].startswith("memory not met: max |error| 16.7%"), v["P"]


def test_missing_runs_bad_documents_and_bad_paths_are_one_line(tmp_path, capsys):
    s = script()
    bundle = synthetic(tmp_path, [0.0, 0.01])
    (bundle / "runs" / "ophb-0.5b-r3.json").unlink()
    (bundle / "runs" / "ophb-1b-r3.json").write_text("Traceback ...")
    (bundle / "runs" / "hb-0.8b-r3.json").write_text(json.dumps(doc("0.8b", 1024, 4, "none", 0.06, 14.0)))
    out = s.read_out(bundle)
    left = " ".join(out["left"])
    assert "ophb-0.5b: 2 of 3 processes read" in left and "ophb-1b-r3.json: no llm-step document" in left, left
    assert "hb-0.8b-r3.json: ran" in left and out["verdicts"]["L"].startswith(("UNDER", "REACHES")), out
    for name in ("ophb-0.5b", "ophb-1b", "ophb-0.8b"):   # every re-run shape leaves its processes out: no L
        for k in (1, 2, 3):
            (bundle / "runs" / f"{name}-r{k}.json").unlink(missing_ok=True)
    assert s.read_out(bundle)["verdicts"]["L"].startswith("NO DATA: 0 re-run shapes"), s.read_out(bundle)["verdicts"]
    refuses_paths_a_keyless_row_and_a_foreign_registration(s, bundle, tmp_path, capsys, ("product", "step_ms"),
                                                           r"registered.yaml: rows\[0\]: missing or bad key", "h200x2-opsplit-2026-11-30")
