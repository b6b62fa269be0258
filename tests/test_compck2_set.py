"""Session 48's compck2 set (calibration/h200x2-compck2-2026-11-30, validation/compck2.py): compck's design on two new
shapes plus this lease's own hidden-128 host runs, the third column (the candidate with this lease's host fit) computed
at the read-out by a mapping committed before the run. The registration against a fresh --register at its commit, the
columns against the model today, the device script (host runs, ABBA, the budget), the shapes new to calibration/, rules
ML and H on synthetic runs each way, the rows into the error bands."""

from __future__ import annotations

import json

import test_compck_set
import test_repeats47_set
import yaml
from conftest import ROOT, load_script

BUNDLE = ROOT / "calibration" / "h200x2-compck2-2026-11-30"
SEQS = {320, 608, 928, 1120, 1824, 2080, 2528, 3104}   # this helper's own list (session 48)
# an earlier lease's host runs, for a synthetic runs/host: single from hostsingle's lease, fsdp from fsdphost-lease3's
HOSTS = (("h200x2-hostsingle-2026-11-30", "single"), ("h200x2-eager-fsdphost-lease3-2026-11-30", "fsdp"))


def script():
    return load_script("validation/compck2.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def synthetic(tmp_path, scale=None, host=True, host_scale=1.0):
    """compck's synthetic bundle over this registration (shipped steps x scale), with a runs/host of earlier leases'
    (their host steps x host_scale: a faster or slower lease)."""
    from test_compilefsdp_set import as_run
    from test_nosync_set import synthetic as base

    out = base(tmp_path, scale, (0.01, -0.01, 0.0), (), BUNDLE, extra_doc=as_run())
    if host:
        (out / "runs" / "host").mkdir()
        for folder, mode in HOSTS:
            for f in (ROOT / "calibration" / folder / "runs" / "host").glob(f"{mode}-L*.json"):
                doc = json.loads(f.read_text())
                for shape in doc["shapes"]:
                    shape["median_step_s"] *= host_scale
                (out / "runs" / "host" / f.name).write_text(json.dumps(doc))
    return out


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = test_repeats47_set.registered_before_adopt48(script(), BUNDLE, tmp_path, monkeypatch)
    assert {"ML", "H", "LH", "R", "MC", "MF", "RF"} <= reg["rules"].keys()


def test_the_free_phase_column_is_the_product_today_and_the_shipped_column_the_model_before_adopt48():
    """Rule RF read ADOPT: the product (llm/eager_compiled.ADOPTED_FSDP2 on torch-compile+fsdp2) prices each row at its
    registered free-phase column, the registered shipped and candidate columns with before_adopt48; the dataclass
    defaults stay off (every other framework)."""
    from dataclasses import replace

    from simcluster.heldout.eager_compilefsdp import before_adopt48, predict
    from simcluster.llm import eager
    from simcluster.llm.framework import FrameworkSpec

    assert FrameworkSpec.__dataclass_fields__["fsdp_free_phases"].default is False
    for r in registered()["rows"]:
        assert predict(r["preset"], r["seq"], r["micro_batch"], "fsdp") == r["predicted_free"], r["name"]
        assert script().free_phases(r["preset"], r["seq"], r["micro_batch"]) == r["predicted_free"], r["name"]
        with eager.torch_framework_as(before_adopt48):
            assert predict(r["preset"], r["seq"], r["micro_batch"], "fsdp") == r["predicted"], r["name"]
            with eager.torch_framework_as(lambda fw: replace(fw, whole_model_graph=True)):
                assert predict(r["preset"], r["seq"], r["micro_batch"], "fsdp") == r["predicted_candidate"], r["name"]
        assert r["predicted_free"]["step_ms"] < r["predicted_candidate"]["step_ms"] < r["predicted"]["step_ms"]


def test_fsdp_free_phases_frees_only_a_one_stage_fsdp2_step():
    from types import SimpleNamespace

    from simcluster.llm.launch_backlog import fsdp_step

    def par(**kw):   # the fields fsdp_step reads (a ParallelSpec's), unvalidated
        return SimpleNamespace(**({"pp": 1, "dp": 1, "zero": 0, "tp": 1, "cp": 1} | kw))

    assert fsdp_step(par(dp=2, zero=3))
    assert not any(fsdp_step(p) for p in (par(), par(dp=2), par(dp=2, zero=2), par(tp=2, dp=2, zero=3),
                                          par(pp=2, dp=2, zero=3), par(cp=2, dp=2, zero=3), par(zero=3)))


def test_the_device_script_runs_the_host_runs_then_the_registered_rows_abba_within_the_budget():
    text = (BUNDLE / "device_run.sh").read_text()
    test_repeats47_set.check_abba_script(script(), BUNDLE, registered()["rows"], worst_s=280, cap_s=60, host_runs=True)
    assert text.index("host/single-L") < text.index("for r in 1 2 3")   # the host runs lead
    assert "for layers in 2 32; do" in text and "--mode single" in text and "--mode fsdp\n" in text
    assert script().LEASE_HOST == "runs/host" and 'mkdir -p "$B/host"' in text


def test_the_registered_shapes_are_new_to_calibration():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = registered()["rows"]
    assert {r["seq"] for r in rows} <= SEQS
    assert seqs_named_elsewhere(BUNDLE, {r["seq"] for r in rows}) == []
    assert registered_tokens(rows) & measured_llm_tokens(BUNDLE) == set()


def test_the_lease_column_is_the_candidate_with_the_lease_host_and_moves_with_it(tmp_path):
    from simcluster.heldout.eager_compilefsdp import fits

    b = synthetic(tmp_path / "a")
    reg = registered()["rows"][1]
    got = script().lease_column(reg, b / "runs" / "host")
    assert got != reg["predicted_candidate"] and got["peak_mem_GiB"] == reg["predicted_candidate"]["peak_mem_GiB"]
    own, product = fits(b / "runs" / "host"), fits()
    assert own["single"] != product["single"] and own["fsdp"] != product["fsdp"]
    assert own["compile"][0] / product["compile"][0] == own["single"][0] / product["single"][0]   # fits()' own rule
    assert (got["step_ms"] > reg["predicted_candidate"]["step_ms"]) == (own["fsdp"][0] > product["fsdp"][0])


def test_rule_rf_reads_adopt_reject_and_undecided(tmp_path):
    rows = {r["name"]: r for r in registered()["rows"]}
    s = script()
    at_free = {n: r["predicted_free"]["step_ms"] / r["predicted"]["step_ms"] for n, r in rows.items()}
    v = s.read_out(synthetic(tmp_path / "a", at_free))["verdicts"]   # the free-phase column within, the others not
    assert v["MF"].startswith("within") and v["RF"].startswith("ADOPT"), v
    shipped = s.read_out(synthetic(tmp_path / "b"))["verdicts"]   # at the shipped steps
    assert shipped["RF"].startswith("REJECT"), shipped
    far = s.read_out(synthetic(tmp_path / "c", {n: 0.7 for n in rows}))["verdicts"]
    assert far["RF"] == "UNDECIDED: free phases not within, shipped not within, candidate not within", far


def test_rule_h_reads_a_b_and_no_data(tmp_path):
    rows = {r["name"]: r for r in registered()["rows"]}
    s = script()
    # a lease whose host runs twice as fast, measured at its lease column's steps: ML within, MC not -> A
    host = synthetic(tmp_path / "h", host_scale=0.5)
    at_lease = {n: s.lease_column(r, host / "runs" / "host")["step_ms"] / r["predicted"]["step_ms"] for n, r in rows.items()}
    v = s.read_out(synthetic(tmp_path / "a", at_lease, host_scale=0.5))["verdicts"]
    assert v["ML"].startswith("within") and v["MC"].startswith("not within") and v["H"].startswith("A (HOST)"), v
    # measured at the candidate's steps: both within -> CANDIDATE (the lease column a few % off the candidate here)
    at_cand = {n: r["predicted_candidate"]["step_ms"] / r["predicted"]["step_ms"] for n, r in rows.items()}
    c = s.read_out(synthetic(tmp_path / "d", at_cand))["verdicts"]
    assert c["MC"].startswith("within") and c["H"].startswith(("CANDIDATE", "UNDECIDED: the candidate within")), c
    far = s.read_out(synthetic(tmp_path / "b", {n: 0.7 for n in rows}))["verdicts"]   # every column far off -> B
    assert far["ML"].startswith("not within") and far["H"].startswith("B (COMPILED STEP)"), far
    none = s.read_out(synthetic(tmp_path / "c", host=False))["verdicts"]   # no host runs: no third column
    assert none["ML"].startswith("NO DATA") and none["H"] == "UNDECIDED: no lease column", none


def test_the_set_enters_the_error_bands_in_the_compile_ckpt_regime(tmp_path):
    from simcluster.heldout import eager_compilefsdp

    test_compck_set.check_bands(eager_compilefsdp.COMPCK2_BUNDLE, BUNDLE, synthetic(tmp_path / "a"), registered()["rows"])


def test_compcks_own_rules_are_imported_unchanged():
    assert all(script().RULES[k] == test_compck_set.script().RULES[k] for k in test_compck_set.script().RULES)


def test_the_adopted_terms_are_on_for_torch_compile_fsdp2_alone():
    """adopt48 (rule RF ADOPT): whole_model_graph and fsdp_free_phases on the runner's FSDP2 whole-model compile only:
    not eager FSDP2, not the one-GPU compiled step, not the published compiled FSDP trainers (unmeasured there)."""
    from simcluster.heldout.eager_compilefsdp import fits
    from simcluster.llm import eager
    from simcluster.llm.eager_compiled import ADOPTED_FSDP2
    from simcluster.llm.framework import FRAMEWORKS
    from simcluster.llm.spec import ParallelSpec

    fsdp, single = ParallelSpec(dp=2, zero=3, recompute="full"), ParallelSpec(recompute="full")
    for hosts in ({}, fits()):   # with and without a compile host fit
        on = eager.torch_framework(fsdp, hosts, compiled=True)
        assert on.name == "torch-compile+fsdp2" and all(getattr(on, k) for k in ADOPTED_FSDP2)
        for off in (eager.torch_framework(fsdp, hosts), eager.torch_framework(single, hosts, compiled=True)):
            assert not any(getattr(off, k) for k in ADOPTED_FSDP2), off.name
    assert not any(getattr(fw, k) for fw in FRAMEWORKS.values() for k in ADOPTED_FSDP2)
