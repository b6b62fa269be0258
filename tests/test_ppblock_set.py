"""Session 45's blocking-point set (calibration/h200x2-ppblock-2026-11-30, validation/ppblock.py): the registration
against a fresh --register at its commit, the device script against the registered rows, the shapes new to
calibration/, and synthetic two-rank timelines (the hosts in series, free, free until a chunk) through rules K, W, V."""

from __future__ import annotations

import json
import re
import shutil

import yaml
from conftest import ROOT, fresh_register_equals, load_script
from test_pphost_set import PRODUCT_HOST, doc

BUNDLE = ROOT / "calibration" / "h200x2-ppblock-2026-11-30"


def script():
    return load_script("validation/ppblock.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def rank_timelines(row: dict, how: str) -> list[dict]:
    """Both ranks' timelines of a row's process: 15 calls (3 warm-up), every even one recorded, each recorded step the
    model's simulated step with the hosts in series (`series`: each chunk's host starts at its span's start, a Work.wait
    filling the gap before it) or free (`free`: the hosts back to back, the GPU as the free model's), or free on stage 1
    and in series on stage 0 (`half`), or in series with each wait inside the chunk call after it (`inside`: the call
    starts at the host's previous return and blocks, as a launch or an allocation can, until its series start)."""
    s = script()
    from simcluster.heldout.eager_regimes import regime_predict

    sp = {f: s.spans(regime_predict(row["preset"], 1, row["mode"], "h200", microbatches=4, seq=row["seq"], free_hosts=f,
                                    timeline=True)["timeline"]) for f in (False, True)}
    out = []
    for stage in (0, 1):
        free = how == "free" or (how == "half" and stage == 1)
        gpu = {(k, m): (a, b) for k, m, a, b in sp[free][stage]}
        events, t = [], 0.0
        for kind, k, a, b in sp[False][stage]:
            start = t if free else a
            if start > t and how != "inside":
                events.append(["wait", "recv", t, start])
            events.append([kind, k, t if how == "inside" else start, start + (b - a)])
            t = start + (b - a)
        events += [["schedule", None, t, t], ["end", None, t + 0.002, t + 0.002]]
        steps = []
        for call in range(15):
            if call % 2:
                steps.append({"call": call, "on": False})
            else:
                steps.append({"call": call, "on": True, "t0": 50.0 + call, "events": events,
                              "gpu": [[kind, k, *gpu[kind, k]] for kind, k, _, _ in sp[False][stage]]})
        out.append({"patched": [], "gpu_events": True, "steps": steps})
    return out


def synthetic(tmp_path, how: str | list[str], overhead: float = 0.01):
    """A bundle of the registered rows at the product's steps, every process's timelines `how` (rank_timelines), or
    `how` a list: one per process in the registered order (the rows, then each row's processes)."""
    bundle = tmp_path / (how if isinstance(how, str) else "mixed")
    (bundle / "runs" / "host").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    processes = [(row, k) for row in registered()["rows"] for k in range(1, row["processes"] + 1)]
    for (row, k), each in zip(processes, [how] * len(processes) if isinstance(how, str) else how, strict=True):
        p = row["predicted"]["product"]
        d = doc(row, p["step_ms"] / 1e3, p["peak_mem_GiB"])
        shape = d["shapes"][0]
        shape["step_times_s"] = [shape["median_step_s"] * (1 + (overhead if (3 + i) % 2 == 0 else 0)) for i in range(12)]
        for rank, tl in zip(shape["ranks"], rank_timelines(row, each), strict=True):
            rank["timeline"] = tl
        (bundle / "runs" / f"{row['name']}-r{k}.json").write_text("torchrun noise\n" + json.dumps(d))
    for path in sorted(PRODUCT_HOST.glob("single-L*.json")):
        shutil.copy(path, bundle / "runs" / "host" / path.name)
    return bundle


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    for row in reg["rows"]:   # host-bound rows; every series lead at or below 0, the free model's first lead above 3 ms
        t = row["timeline"]
        assert row["predicted"]["product"]["host_share"] >= 0.90, row
        assert max(t["series_lead_ms"].values()) <= 0 and t["free_ahead"][0] == "r1 fwd 0", row
        assert all(0.05 < x < 0.30 for x in t["series_outside"]), row


def test_the_device_script_runs_the_registered_rows_with_the_timeline_host_probe_first():
    text = (BUNDLE / "device_run.sh").read_text()
    specs = re.search(r'^  for spec in (.*); do$', text, re.M).group(1)
    assert [tuple(s.split()) for s in re.findall(r'"([^"]+)"', specs)] == [(p, f"{s}:{mb}") for p, s, mb in script().SHAPES]
    assert "guarded pp-1f1b-$1-r$r 80 $two $step 1f1b --preset $1 --shapes $2" in text
    assert "guarded pp-gpipe-$1-r$r 80 $two $step gpipe --preset $1 --shapes $2" in text
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == ["1", "2"] and script().PROCESSES == 2
    step = re.search(r'^step="(.*)"$', text, re.M).group(1)
    assert f"--warmup {script().WARMUP} --steps {script().STEPS} " in step and "--timeline" in step and "--microbatches 4" in step
    assert re.findall(r"^host (\d+)$", text, re.M) == ["2", "32"] and text.index("host 32") < text.index("for r in")
    product = (PRODUCT_HOST / "device_run.sh").read_text()   # the product host folder's hidden-128 shapes and steps
    want = re.search(r'^arch="(.*)"$', product, re.M).group(1)
    assert re.search(r'^arch="(.*)"$', text, re.M).group(1) == want + " --profile 0"
    budget = int(re.search(r"BUDGET_S:-(\d+)", text).group(1))
    assert budget + 80 <= 320


def test_the_registered_shapes_are_new_to_calibration_per_micro_batch_and_per_step():
    from conftest import measured_llm_tokens, registered_tokens

    rows = registered()["rows"]
    earlier = measured_llm_tokens(BUNDLE)
    assert registered_tokens(rows) & earlier == set()
    assert registered_tokens([r | {"micro_batch": r["micro_batch"] * r["microbatches"]} for r in rows]) & earlier == set()
    assert {r["seq"] for r in rows} <= {832, 1984, 2496, 2880}   # session 45's seqs for this helper


def test_series_timelines_read_series_with_the_wait_outside_the_chunks(tmp_path):
    v = script().read_out(synthetic(tmp_path, "series"))["verdicts"]
    assert v["K"].startswith("SERIES:") and v["W"].startswith("rank 0 OUTSIDE THE CHUNKS / rank 1 OUTSIDE THE CHUNKS:"), v
    assert v["V"].startswith("WITHIN: the recorded steps +1.0%"), v["V"]
    assert v["M"].startswith("PP+host-bound 2 within"), v


def test_free_timelines_read_free_and_a_costly_recorder_reads_above(tmp_path):
    v = script().read_out(synthetic(tmp_path, "free", overhead=0.05))["verdicts"]
    assert v["K"].startswith("FREE:") and v["W"].startswith("rank 0 NONE / rank 1 NONE:"), v
    assert v["V"].startswith("ABOVE"), v["V"]


def test_a_host_free_on_one_stage_only_reads_blocks_at_the_first_series_chunk(tmp_path):
    v = script().read_out(synthetic(tmp_path, "half"))["verdicts"]
    assert v["K"].startswith("BLOCKS AT r0 bwd 0:"), v["K"]
    assert v["W"].startswith("rank 0 OUTSIDE THE CHUNKS / rank 1 NONE:"), v["W"]   # stage 1 free: no wait to find


def test_a_host_that_blocks_inside_its_chunk_calls_reads_inside(tmp_path):
    """Rule W's INSIDE word (review B45, 4): the hosts in series, each wait inside the chunk call after it; K reads
    SERIES from the calls' issue starts (pp_timeline.issue_starts)."""
    v = script().read_out(synthetic(tmp_path, "inside"))["verdicts"]
    assert v["W"].startswith("rank 0 INSIDE / rank 1 INSIDE: ranks' share of the schedule window outside the chunk calls 0.000 / 0.000"), v["W"]
    assert v["K"].startswith("SERIES:"), v["K"]


def test_rule_k_set_word_is_the_plurality_and_a_top_tie_reads_mixed(tmp_path):
    """review B45, 4: the set word was max over a set of strings, its pick on a 3 / 3 / 2 split the hash seed's."""
    s = script()
    for words in (["FREE"] * 3 + ["SERIES"] * 3 + ["BLOCKS AT r0 bwd 1"] * 2, ["SERIES", "FREE"] * 4,
                  ["BLOCKS AT r0 bwd 1"] * 2 + ["SERIES"] * 3 + ["FREE"] * 3):
        assert s.set_word(words) == "MIXED", words
    assert s.set_word(["FREE"] * 2 + ["BLOCKS AT r0 bwd 1"] * 3 + ["SERIES"] * 2 + ["BLOCKS AT r1 fwd 3"]) == "BLOCKS AT r0 bwd 1"
    assert s.set_word(["SERIES"]) == "SERIES"
    v = s.read_out(synthetic(tmp_path, ["series"] * 3 + ["free"] * 3 + ["half"] * 2))["verdicts"]
    words = [w for w in ("SERIES", "FREE", "BLOCKS AT r0 bwd 0") for _ in range(v["K"].count(f" {w} ("))]
    assert v["K"].startswith("MIXED: ") and words == ["SERIES"] * 3 + ["FREE"] * 3 + ["BLOCKS AT r0 bwd 0"] * 2, v["K"]


def test_processes_without_a_timeline_leave_k_w_v_without_data(tmp_path):
    bundle = synthetic(tmp_path, "series")
    for path in (bundle / "runs").glob("pp-*.json"):
        text = path.read_text()
        d = json.loads(text[text.index("{"):])
        for r in d["shapes"][0]["ranks"]:
            r.pop("timeline")
        path.write_text(json.dumps(d))
    v = script().read_out(bundle)["verdicts"]
    assert all(v[k].startswith("NO DATA") for k in "KWV") and v["M"].startswith("PP+host-bound"), v


def test_the_set_enters_the_error_bands_as_pp_host_bound_rows_once_it_has_run(tmp_path):
    from collections import Counter

    from simcluster.heldout import eager_pphost, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_pphost.PP_BLOCK_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_pphost.PP_BLOCK_BUNDLE
    if not (BUNDLE / "runs").is_dir():
        assert eager_pphost.s44_rows(BUNDLE) == []   # registered, not run: no row in the table
    got = eager_pphost.s44_rows(synthetic(tmp_path, "series"))
    reg = {f"{r['preset']} {r['mode']} seq {r['seq']} mb 1 x4 micro-batches": r for r in registered()["rows"]}
    assert len(got) == 4 and all(r["host_bound"] and r["host_flag"] == "registered" and r["pp"] == 2 for r in got)
    for r in got:
        assert r["predicted_s"] == reg[r["label"]]["predicted"]["product"]["step_ms"] / 1e3
    assert Counter(res.regime for res in eager_residuals(got)) == {"llm | PyTorch eager | PP+host-bound | bf16": 4}
