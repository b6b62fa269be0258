"""Session 48's tp4b set (calibration/h200x4-tp4b-2026-11-30, validation/tp4b.py): 4-GPU torch TP x DP with the lease's
own host runs in the same call, the shipped step registered and a lease-own column (heldout/eager_tp4.lease_own_predict:
each 2-D mode's own host fit from runs/host) computed at read-out. The registration against a fresh --register at its
commit (no absolute path in it), the device script against the registered rows (host runs first, ABBA, 4 ranks), the
shapes new to calibration/, synthetic runs through the rules (R's answers, its NO DATA without host runs), the rows
into the error bands in the 4-GPU TP x DP+host-bound regime."""

from __future__ import annotations

import re
import shutil

import test_nosync_set
import yaml
from conftest import ROOT, fresh_register_equals, load_script
from test_tp4_set import as_run

BUNDLE = ROOT / "calibration" / "h200x4-tp4b-2026-11-30"
TPDP2_HOST = ROOT / "calibration" / "h200x4-llm-eager-tpdp2-2026-11-28" / "host"   # another lease's host runs, as a stand-in


def script():
    return load_script("validation/tp4b.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def synthetic(tmp_path, scale=None, jitter=(0.01, -0.01, 0.0), host=True, mesh=None):
    """A bundle whose processes measure each row's registered shipped step x scale[name] x exp(jitter[k]); `host`: its
    runs/host holds the tpdp2 lease's tp+ddp / tp+fsdp host runs at HOST_LAYERS (the files the device script writes)."""
    bundle = test_nosync_set.synthetic(tmp_path, scale, jitter, (), BUNDLE, extra_doc=as_run(mesh))
    if host:
        (bundle / "runs" / "host").mkdir()
        for mode in ("tp+ddp", "tp+fsdp"):
            for layers in script().HOST_LAYERS:
                shutil.copy(TPDP2_HOST / f"{mode}-L{layers}.json", bundle / "runs" / "host")
    return bundle


def lease_own_steps(bundle) -> dict[str, float]:
    from simcluster.heldout.eager_tp4 import lease_own_predict

    return {r["name"]: lease_own_predict(bundle, r["preset"], r["seq"], r["micro_batch"], r["mode"])[0]["step_ms"]
            for r in registered()["rows"]}


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    assert [r["mode"] for r in reg["rows"]] == ["tp+fsdp", "tp+ddp"]
    assert all(r["processes"] == 3 and r["predicted"]["host_share"] >= 0.5 for r in reg["rows"])   # all host-bound
    assert "/work" not in (BUNDLE / "registered.yaml").read_text() and str(ROOT) not in (BUNDLE / "registered.yaml").read_text()


def test_the_shipped_column_is_the_product():
    from simcluster.heldout.eager_regimes import registered_row

    for r in registered()["rows"]:
        shipped = registered_row(r["preset"], r["seq"], r["micro_batch"], r["mode"], memory=True)["predicted"]
        assert r["predicted"] == shipped, r["name"]


def test_the_device_script_runs_the_host_runs_first_then_the_registered_rows_abba():
    s = script()
    text = (BUNDLE / "device_run.sh").read_text()
    a, b = (f"{p}:{seq}:{mb}:{m}" for p, seq, mb, m, _ in s.SHAPES)
    assert re.findall(r'order="([^"]+)"', text) == [f"{a} {b}", f"{b} {a}"]   # round 2 reversed
    assert "[ $r -eq 2 ] && order=" in text
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == [str(k) for k in range(1, s.PROCESSES + 1)]
    assert re.search(r"^for layers in (.*); do$", text, re.M).group(1).split() == [str(n) for n in s.HOST_LAYERS]
    assert text.index("B=$W/runs/host") < text.index('guarded "$mode-L$layers"') < text.index("B=$W/runs\n") < text.index("for r in")
    assert 'guarded "$mode-L$layers" 60 $four --layers $layers $arch --mode $mode --group 2' in text
    assert "for mode in tp+ddp tp+fsdp; do" in text
    tpdp2 = (TPDP2_HOST.parent / "device_run.sh").read_text()   # the host runs' decoder and shapes are the tpdp2 bundle's
    arch = re.search(r'^arch="(.*)"$', text, re.M).group(1)
    assert arch == re.search(r'^arch="(.*)"$', tpdp2, re.M).group(1).replace("--warmup 5 --steps 20", "--warmup 3 --steps 10")
    assert 'four="python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.llm_step"' in text
    assert 'common="--warmup 3 --steps 8 --profile 0 --group 2"' in text
    assert 'guarded "$preset-${seq}x$mb-$mode-r$r" 40 $four --preset "$preset" --shapes "$seq:$mb" --mode "$mode" $common' in text
    assert {"{}-{}x{}-{}".format(*o.split(":")) for o in (a, b)} == {r["name"] for r in registered()["rows"]}
    budget = int(re.search(r"BUDGET_S:-(\d+)", text).group(1))
    assert re.findall(r'guarded "[^"]+" (\d+) ', text) == ["60", "40"]   # host runs' limit, step processes'
    assert 4 * 60 <= budget and budget + 40 <= 290   # the host runs end before the guard; no launch after BUDGET_S
    assert budget - 204 >= 40   # the last step process (expected launch ~204 s) has room (cold review A48 item 7)


def test_the_registered_shapes_are_new_to_calibration():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = registered()["rows"]
    assert {r["seq"] for r in rows} <= {288, 576, 864, 1056, 1568, 2016, 2464, 3040}   # this helper's own list
    assert seqs_named_elsewhere(BUNDLE, {r["seq"] for r in rows}) == []
    assert registered_tokens(rows) & measured_llm_tokens(BUNDLE) == set()


def test_runs_at_the_shipped_steps_read_met_and_reject_and_without_host_runs_no_data(tmp_path):
    out = script().read_out(synthetic(tmp_path / "a"))
    v = out["verdicts"]
    assert v["D"] == "MET" and v["M"].startswith("within") and v["P"].startswith("memory met"), v
    assert len(out["procs"]) == 6 and not out["left"] and "(4 dof)" in v["N"] and v["F"].count("(2 dof)") == 2, v
    assert v["R"].startswith("REJECT: tp+fsdp: REJECT") and "tp+ddp: REJECT" in v["R"], v   # tpdp2's fits price both slow
    assert "tp+fsdp " in v["H"] and "NO DATA" not in v["H"], v
    bare = script().read_out(synthetic(tmp_path / "b", host=False))["verdicts"]
    assert bare["R"].startswith("NO DATA: tp+fsdp: NO DATA (no tp+fsdp host fit") and bare["D"] == "MET", bare
    assert bare["H"].startswith("lease tp+fsdp NO DATA; tp+ddp NO DATA"), bare


def test_runs_at_the_lease_own_steps_read_lease_host_and_a_split_is_undecided(tmp_path):
    first = synthetic(tmp_path / "x")
    shipped = {r["name"]: r["predicted"]["step_ms"] for r in registered()["rows"]}
    own = {n: s / shipped[n] for n, s in lease_own_steps(first).items()}   # measured = the lease-own step
    v = script().read_out(synthetic(tmp_path / "a", own))["verdicts"]
    assert v["R"].startswith("LEASE-HOST: tp+fsdp: LEASE-HOST") and "tp+ddp: LEASE-HOST" in v["R"], v
    assert v["D"].startswith("MODEL"), v
    split = script().read_out(synthetic(tmp_path / "b", {"1b-2016x2-tp+fsdp": own["1b-2016x2-tp+fsdp"]}))["verdicts"]
    assert split["R"].startswith("UNDECIDED: tp+fsdp: LEASE-HOST") and "tp+ddp: REJECT" in split["R"], split
    wrong = script().read_out(synthetic(tmp_path / "d", mesh={"dp": 4, "tp": 1}))
    assert not wrong["procs"] and len(wrong["left"]) == 6 and "not mesh" in wrong["left"][0]


def test_the_set_enters_the_error_bands_in_the_4gpu_tp_x_dp_host_bound_regime(tmp_path):
    from simcluster.heldout import eager_tp4, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_tp4.TP4B_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_tp4.TP4B_BUNDLE
    assert eager_tp4.held_out_rows(tmp_path) == []   # registered, not run: no row
    got = eager_tp4.held_out_rows(synthetic(tmp_path / "a"))   # the host runs in runs/host are no row
    assert len(got) == 2 and all(r["host_flag"] == "registered" and r["host_bound"] for r in got)
    for r, x in zip(got, registered()["rows"], strict=True):
        assert r["predicted_s"] == x["predicted"]["step_ms"] / 1e3   # against the shipped column, never the lease-own
    assert {x.regime for x in eager_residuals(got)} == {"llm | PyTorch eager | TP x DP+host-bound | bf16"}
    assert {x.scale for x in eager_residuals(got)} == {4}


def test_a_failed_host_run_is_no_data_not_a_traceback(tmp_path):
    bundle = synthetic(tmp_path / "a")
    (bundle / "runs" / "host" / "tp+fsdp-L32.json").write_text("Traceback (most recent call last):\n")
    v = script().read_out(bundle)["verdicts"]
    assert v["H"].startswith("NO DATA: ") and "tp+fsdp-L32.json" in v["H"], v
    assert v["R"].startswith("NO DATA: tp+fsdp: NO DATA (runs/host: ") and v["D"] == "MET", v


def test_the_read_out_names_the_tree_that_ran_and_says_on_stderr_whether_it_is_this_checkout(tmp_path, capsys):
    """Cold review A48 item 5: the lease-own column is computed by the reading code; runs/commit.txt's tree_hash is
    printed, the comparison with this checkout goes to stderr (readout.txt stays reproducible on a later main)."""
    from simcluster.heldout.registration import checkout_tree_hash

    bundle = synthetic(tmp_path / "a")
    (bundle / "runs" / "commit.txt").unlink(missing_ok=True)
    assert script().read_out(bundle)["verdicts"]["tree"].startswith("NOT RECORDED"), "no commit.txt"
    now = checkout_tree_hash(ROOT)
    for ran, word in ((now, "EQUAL"), ("0" * 64, "DIFFER")):
        (bundle / "runs" / "commit.txt").write_text(f"x (main)\n{ran} (tree_hash: simcluster/ and validation/ as they ran)\n")
        capsys.readouterr()
        assert script().read_out(bundle)["verdicts"]["tree"].startswith(f"ran {ran} (runs/commit.txt)")
        assert f"simcluster/ and validation/ {word}" in capsys.readouterr().err


def test_the_read_out_refuses_another_set_s_registration_in_one_line(tmp_path, capsys):
    """Cold review A48 item 9: tp4's bundle (same rules, same reader) is not read as tp4b's: exit 1, one line."""
    assert script().main([str(ROOT / "calibration" / "h200x4-tp4-2026-11-30")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "registered.yaml: script 'validation/tp4.py --register', expected 'validation/tp4b.py " \
        "--register'" in err, err
