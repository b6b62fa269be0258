"""Session 48's tp4 set (calibration/h200x4-tp4-2026-11-30, validation/tp4.py): torch TP x DP on 4 x H200, the shipped
step and a candidate (tp+fsdp's own 4-rank host fit, heldout/eager_tp4) per row, three processes a shape. The
registration against a fresh --register at its commit, the device script against the registered rows (ABBA order,
three rounds, 4 ranks), the shapes new to calibration/, synthetic runs through the rules (R's three answers), the rows
into the error bands in the 4-GPU TP x DP+host-bound regime."""

from __future__ import annotations

import re

import test_nosync_set
import yaml
from conftest import ROOT, fresh_register_equals, load_script

BUNDLE = ROOT / "calibration" / "h200x4-tp4-2026-11-30"


def script():
    return load_script("validation/tp4.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def as_run(mesh=None):
    """extra_doc for test_nosync_set.synthetic: each process's document as the runner writes a 4-rank 2-D run."""
    def edit(row: dict, doc: dict) -> None:
        del doc["grad_accum"]
        doc.update(mode=row["mode"], world_size=4, mesh=mesh or {"dp": 2, "tp": 2})
    return edit


def synthetic(tmp_path, scale=None, jitter=(0.01, -0.01, 0.0), drop=(), mesh=None, key="step_ms"):
    """A bundle whose processes measure each row's registered `key` step x scale[name] x exp(jitter[k])."""
    if key != "step_ms":   # measure the candidate's column: a registration copy whose step_ms is the candidate's
        src = tmp_path / "src"
        src.mkdir(parents=True)
        reg = registered()
        for r in reg["rows"]:
            r["predicted"]["step_ms"] = r["predicted"][key]
        (src / "registered.yaml").write_text(yaml.safe_dump(reg, sort_keys=False))
        bundle = test_nosync_set.synthetic(tmp_path, scale, jitter, drop, src, extra_doc=as_run(mesh))
        (bundle / "registered.yaml").write_text((BUNDLE / "registered.yaml").read_text())
        return bundle
    return test_nosync_set.synthetic(tmp_path, scale, jitter, drop, BUNDLE, extra_doc=as_run(mesh))


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    assert [r["mode"] for r in reg["rows"]] == ["tp+fsdp", "tp+fsdp", "tp+ddp"]
    assert all(r["processes"] == 3 and r["predicted"]["host_share"] >= 0.5 for r in reg["rows"])   # all host-bound
    fsdp, ddp = reg["rows"][:2], reg["rows"][2]
    assert all(r["predicted"]["step_ms_candidate"] > r["predicted"]["step_ms"] for r in fsdp)   # the term adds host time
    assert ddp["predicted"]["step_ms_candidate"] == ddp["predicted"]["step_ms"]   # tp+ddp as shipped


def test_the_shipped_column_is_the_product_and_the_candidate_is_off_in_it():
    from simcluster.heldout.eager_regimes import registered_row
    from simcluster.heldout.eager_tp4 import candidate_predict

    for r in registered()["rows"]:
        shipped = registered_row(r["preset"], r["seq"], r["micro_batch"], r["mode"], memory=True)["predicted"]
        assert {k: r["predicted"][k] for k in shipped} == shipped, r["name"]
        assert candidate_predict(r["preset"], r["seq"], r["micro_batch"], r["mode"])["step_ms"] == r["predicted"]["step_ms_candidate"]


def test_the_device_script_runs_the_registered_rows_abba():
    s = script()
    text = (BUNDLE / "device_run.sh").read_text()
    a, b, c = (f"{p}:{seq}:{mb}:{m}" for p, seq, mb, m, _ in s.SHAPES)
    assert re.findall(r'order="([^"]+)"', text) == [f"{a} {b} {c}", f"{c} {b} {a}"]   # round 2 reversed
    assert "[ $r -eq 2 ] && order=" in text
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == [str(k) for k in range(1, s.PROCESSES + 1)]
    assert 'four="python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.llm_step"' in text
    assert 'common="--warmup 3 --steps 8 --profile 0 --group 2"' in text
    assert 'guarded "$preset-${seq}x$mb-$mode-r$r" 90 $four --preset "$preset" --shapes "$seq:$mb" --mode "$mode" $common' in text
    assert {"{}-{}x{}-{}".format(*o.split(":")) for o in (a, b, c)} == {r["name"] for r in registered()["rows"]}
    budget = int(re.search(r"BUDGET_S:-(\d+)", text).group(1))
    assert budget + 90 <= 300   # worst case: no launch after BUDGET_S, each run at most 90 s


def test_the_registered_shapes_are_new_to_calibration():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = registered()["rows"]
    assert {r["seq"] for r in rows} <= {352, 416, 672, 1184, 1632, 2208, 3168, 3808}   # this helper's own list
    assert seqs_named_elsewhere(BUNDLE, {r["seq"] for r in rows}) == []
    assert registered_tokens(rows) & measured_llm_tokens(BUNDLE) == set()


def test_runs_at_the_shipped_steps_read_met_and_reject(tmp_path):
    out = script().read_out(synthetic(tmp_path / "a"))
    v = out["verdicts"]
    assert v["D"] == "MET" and v["M"].startswith("within") and v["P"].startswith("memory met"), v
    assert len(out["procs"]) == 9 and not out["left"] and "(6 dof)" in v["N"] and v["F"].count("(2 dof)") == 3, v
    assert v["R"].startswith("REJECT: tp+fsdp: REJECT") and "tp+ddp: not deciding" in v["R"], v


def test_runs_at_the_candidate_steps_adopt_and_a_miss_and_a_wrong_mesh_are_named(tmp_path):
    v = script().read_out(synthetic(tmp_path / "a", key="step_ms_candidate"))["verdicts"]
    assert v["R"].startswith("ADOPT: tp+fsdp: ADOPT"), v
    assert v["D"] == "MODEL: 0.3b-1184x4-tp+fsdp, 1b-2208x2-tp+fsdp, overall not within", v
    mid = script().read_out(synthetic(tmp_path / "b", {"0.3b-1184x4-tp+fsdp": 1.2, "1b-2208x2-tp+fsdp": 1.2}))["verdicts"]
    assert mid["R"].startswith("UNDECIDED"), mid   # both columns off by more than the target
    loud = script().read_out(synthetic(tmp_path / "c", jitter=(0.3, -0.3, 0.0)))["verdicts"]
    assert loud["D"].startswith("NOISE"), loud
    wrong = script().read_out(synthetic(tmp_path / "d", mesh={"dp": 4, "tp": 1}))
    assert not wrong["procs"] and len(wrong["left"]) == 9 and "not mesh" in wrong["left"][0]


def test_the_set_enters_the_error_bands_in_the_4gpu_tp_x_dp_host_bound_regime(tmp_path):
    from simcluster.heldout import eager_tp4, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_tp4.TP4_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_tp4.TP4_BUNDLE
    assert eager_tp4.held_out_rows(tmp_path) == []   # registered, not run: no row
    got = eager_tp4.held_out_rows(synthetic(tmp_path / "a"))
    assert len(got) == 3 and all(r["host_flag"] == "registered" and r["host_bound"] for r in got)
    for r, x in zip(got, registered()["rows"], strict=True):
        assert r["predicted_s"] == x["predicted"]["step_ms"] / 1e3   # against the shipped column, never the candidate
    assert {x.regime for x in eager_residuals(got)} == {"llm | PyTorch eager | TP x DP+host-bound | bf16"}
    assert {x.scale for x in eager_residuals(got)} == {4}


def test_the_read_out_refuses_another_set_s_registration_in_one_line(capsys):
    """Cold review A48 item 9: tp4b's or compck's bundle is not read as tp4's (it used to print 'left out' lines and NO
    DATA): exit 1, one line naming the file, its `script` and tp4's."""
    for other in ("h200x4-tp4b-2026-11-30", "h200x2-compck-2026-11-30"):
        assert script().main([str(ROOT / "calibration" / other)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{other}/registered.yaml: script '" in err, err
        assert "expected 'validation/tp4.py --register'" in err, err
