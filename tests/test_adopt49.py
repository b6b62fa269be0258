"""Session 49 adopt49: the MoE router / permutation term (llm/moe_router_term.py) ON in the product for the frameworks its
registered rule judged (calibration/h200x1-moerouter-2026-12-01, RULE: ON), its table the set's runs through
heldout/moerouter's reader, OFF outside that scope, the registration handle (heldout/registration.before_adopt49) and
the labels: every published MoE row of the scope is development for the term, and the families print says so."""

from __future__ import annotations

import hashlib

import pytest
import yaml
from conftest import ROOT

from simcluster.errors import ModelCardError
from simcluster.hardware.gpu import load_gpu
from simcluster.heldout import moerouter
from simcluster.heldout.registration import before_adopt49
from simcluster.llm import moe_router_term, op_price, ops
from simcluster.llm.framework import FRAMEWORKS, MEGATRON
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

H100 = ROOT / "models" / "gpu" / "h100-sxm.yaml"
MOE = TransformerSpec(4, 2048, 1408, 16, 16, 32000, 4096, experts=64, top_k=6, expert_ffn=1408)
PAR = ParallelSpec(tp=1, pp=1, dp=8, ep=8)
BATCH = BatchSpec(global_batch=64, micro_batch=1)

MOONLIGHT = "llm-megatron-bridge-skills-moonlight16b-h100-bf16.yaml"   # one of the files the rule priced


def moe_ops(fw):
    return ops.layer_forward(MOE, PAR, BATCH, fw), ops.layer_backward(MOE, PAR, BATCH, fw)


def test_session_49s_table_is_the_readers_output_of_the_sets_runs():
    """Session 49's table (adopt49's; llm/moe_router_term.TABLE_FILE until adopt50 rebuilt its router columns:
    tests/test_adopt50.py) is heldout/moerouter.table_of of the bundle's runs, exactly, as the file held it (the sha256
    moeker50's registration names); its permutation columns are the shipped table's still."""
    rows, rate = moerouter.session49_table()
    table, _ = moerouter.table_of(moerouter.BUNDLE / "runs" / moerouter.TRACE)
    assert rows == tuple(tuple(float(x) for x in r) for r in table) and rate == load_gpu(moerouter.H200_CARD)[0].hbm_bandwidth_Bps
    assert hashlib.sha256(moerouter.table_text().encode()).hexdigest() == yaml.safe_load(
        (ROOT / "calibration" / "h200x1-moeker50-2026-12-01" / "registered.yaml").read_text())["shipped_table_sha256"]
    assert [r[5:] for r in moe_router_term.read_table()[0]] == [r[5:] for r in rows]


def test_a_bad_table_file_is_one_line_naming_it(tmp_path):
    for text in ("{", '{"rows": [], "h200_hbm_Bps": 1.0}', '{"rows": [[1, 2]], "h200_hbm_Bps": 1.0}'):
        (tmp_path / "t.json").write_text(text)
        with pytest.raises(ModelCardError, match=str(tmp_path / "t.json")) as exc:   # the CLI's one-line error (final read 52)
            moe_router_term.read_table(tmp_path / "t.json")
        assert "\n" not in str(exc.value)


def test_the_term_is_on_by_default_for_the_adopted_frameworks_only():
    """megatron and megatron-te-fa2 (every published MoE row's framework) mark their router and permute ops, whose
    backward and recomputed copies keep the mark, and price them above the card; the local spec and the Megatron
    variants no MoE row runs mark nothing and price as before."""
    assert moe_router_term.on() and moe_router_term.ADOPTED == ("megatron", "megatron-te-fa2")
    gpu = load_gpu(H100)[0]
    for name, fw in FRAMEWORKS.items():
        if fw.eager:   # eager frameworks have no MoE layer (spec_check.check_model_framework)
            continue
        fwd, bwd = moe_ops(fw)
        marked = {o.name for o in fwd + bwd if o.term}
        if name in moe_router_term.ADOPTED:
            assert {"router", "permute", "router.dgrad", "router.wgrad", "permute.bwd"} <= marked, name
            assert marked <= {"router", "permute", "router.dgrad", "router.wgrad", "permute.bwd", "recompute.router",
                              "recompute.permute"}, name
        else:
            assert not marked, name
    fwd, bwd = moe_ops(MEGATRON)
    on = {o.name: op_price.op_time_s(gpu, o, "bf16") for o in fwd + bwd}
    with before_adopt49():
        off = {o.name: op_price.op_time_s(gpu, o, "bf16") for o in fwd + bwd}
    for name in ("router", "router.dgrad", "permute", "permute.bwd"):
        assert on[name] > off[name], name
    assert all(on[n] == off[n] for n in on if n not in ("router", "router.dgrad", "permute", "permute.bwd"))


def test_recompute_keeps_the_mark():
    par = ParallelSpec(tp=1, pp=1, dp=8, ep=8, recompute="full")
    bwd = ops.layer_backward(MOE, par, BATCH, MEGATRON)
    assert {o.name for o in bwd if o.term and o.name.startswith("recompute.")} == {"recompute.router", "recompute.permute"}


def test_the_registration_handle_turns_the_term_and_its_labels_off_and_restores_them():
    saved = moe_router_term.state()
    assert moe_router_term.development_why("megatron", "MoE", MOONLIGHT) == moe_router_term.WHY
    with before_adopt49():
        assert not moe_router_term.on() and moe_router_term.development_why("megatron", "MoE", MOONLIGHT) == ""
        moe_router_term.enable(moe_router_term.read_table()[0], 1.0)   # a read-out's own table inside: labels stay off
        assert moe_router_term.on() and moe_router_term.development_why("megatron", "MoE", MOONLIGHT) == ""
    assert moe_router_term.state() == saved and moe_router_term.on()
    assert moe_router_term.development_why("megatron-local-spec", "MoE", MOONLIGHT) == ""   # outside the scope
    assert moe_router_term.development_why("megatron", "fp8", MOONLIGHT) == ""
    assert moe_router_term.development_why("megatron", "MoE", "llm-megatron-moe-modelzoo-qwen3-235b-h100.yaml") == ""   # recorded after


def test_every_published_moe_row_is_development_for_the_term():
    """A held-out published MoE file's rows are development (development_for says why) while the term is adopted, held
    out as the file says inside the registration handle."""
    from simcluster.reference.llm import validate_published_llm

    path = ROOT / "calibration" / "published" / "llm-megatron-bridge-skills-moonlight16b-h100-bf16.yaml"
    rows = validate_published_llm(path).rows
    assert rows and all(r.family == "MoE" and not r.held_out and r.development_for == moe_router_term.WHY for r in rows)
    with before_adopt49():
        rows = validate_published_llm(path).rows
    assert all(r.held_out and not r.development_for for r in rows)


def test_the_families_print_says_moe_is_not_judged_since_the_router_term():
    from simcluster.reference.families import FamilyValidation
    from simcluster.report.validation import render
    from simcluster.results import ReferenceRow, ReferenceValidation

    def row(i, held, why, family="MoE"):
        return ReferenceRow("llm-x", i, "c", "tokens_per_s", 1.0, 1.1, 0.1, held, family=family, development_for=why)

    v = FamilyValidation(ReferenceValidation("published llm", 0.10, [row(0, False, moe_router_term.WHY),
                                                                       row(1, False, ""), row(2, True, "", "fp8")],
                                             {"llm-x": ""}, []))
    moe = next(f for f in v.families() if f["family"] == "MoE")
    assert moe["held_out"]["rows"] == 0 and not moe["held_out"]["meets_target"] and v.no_held_out_since(moe)
    text = render(v)
    line = next(x for x in text.splitlines() if x.split()[:3] == ["MoE", "held", "out"])
    assert "not judged: no held-out rows since the router term" in line and "development for the MoE router" in line
    fp8 = next(f for f in v.families() if f["family"] == "fp8")
    assert v.no_held_out_since(fp8) == "" and fp8["held_out"]["rows"] == 1


def test_the_per_source_text_says_the_development_reason_first_naming_the_runs_of_a_mixed_file():
    """review A49 finding 4: a source whose rows carry development_for says so before its file's held-out why, naming
    which runs when only some of them do; a source without it keeps its why; --json's summary is unchanged."""
    from simcluster.report.validation import render
    from simcluster.results import ReferenceRow, ReferenceValidation

    def row(source, i, why, family="MoE"):
        return ReferenceRow(source, i, "c", "tokens_per_s", 1.0, 1.1, 0.1, not why, family=family, development_for=why)

    files = {"llm-all": "committed alone before any prediction", "llm-mixed": "recorded before its prediction",
             "llm-none": "held out, nothing fitted"}
    v = ReferenceValidation("published llm", 0.10, [row("llm-all", 0, moe_router_term.WHY), row("llm-all", 1, moe_router_term.WHY),
                                                    row("llm-mixed", 0, ""), row("llm-mixed", 3, moe_router_term.WHY),
                                                    row("llm-none", 0, "", "fp8")], files)
    assert v.why("llm-all") == f"{moe_router_term.WHY}; file: committed alone before any prediction"
    assert v.why("llm-mixed") == f"runs 3: {moe_router_term.WHY}; file: recorded before its prediction"
    assert v.why("llm-none") == "held out, nothing fitted"
    lines = {x.split()[0]: x for x in render(v).split("per source")[1].splitlines()[1:] if x.startswith("  ")}
    assert "held out: no     development for the MoE router" in lines["all"]
    assert "held out: partly runs 3: development for the MoE router" in lines["mixed"]
    assert lines["none"].endswith("held out: yes    held out, nothing fitted")
    assert {k: s["why"] for k, s in v.summary().items()} == files
