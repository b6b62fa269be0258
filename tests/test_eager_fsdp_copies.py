"""Session 40 fsdp2copy: the second FSDP2 step candidate (eager.fsdp2_copy_step: bf16_step with FSDP2's own copy
kernels, hsdp.fsdp2_copy_ops, in place of autocast's weight casts; off in the product, not registered: it failed the
development gate, llm-findings.md) and the fsdpstep set's rows in the `llm eager` error bands (heldout/eager_cudnnstep)."""

from __future__ import annotations

import statistics
import sys

import pytest
from conftest import ROOT

from simcluster.llm import eager, host, hsdp, ops
from simcluster.llm.memory import stage_memories
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

FSDP, DDP = ParallelSpec(dp=2, zero=3), ParallelSpec(dp=2)
MODEL = TransformerSpec(16, 1536, 4096, 12, 4, 32000, 4096)
BATCH = BatchSpec(4, 2, "bf16")
FSDPSTEP = ROOT / "calibration" / "h200x2-eager-fsdpstep-2026-11-30"


def test_candidate_2_is_candidate_1_without_autocasts_casts_and_with_fsdp2s_copies_on_fsdp2_only():
    kept = eager.torch_framework(FSDP)
    two = eager.fsdp2_copy_step(kept)
    assert kept.cast_bytes == 12.0 and not kept.fsdp2_copies
    assert (two.residual_bytes, two.bf16_step, two.cast_bytes, two.fsdp2_copies) == (2, True, 0.0, True)
    for par in (DDP, ParallelSpec(), ParallelSpec(tp=2)):
        assert eager.fsdp2_copy_step(eager.torch_framework(par)) == eager.torch_framework(par)
    # the host count: 7 copy kernels a layer group in place of 2 casts a weight matrix
    one = eager.bf16_step(kept)
    assert host.layer_kernels(MODEL, FSDP, BATCH, two) == host.layer_kernels(MODEL, FSDP, BATCH, one) - 2 * host.weight_matrices(MODEL, one) + 7
    mem = [stage_memories(MODEL, FSDP, BATCH, 150e9, fw)[0].allocated for fw in (kept, two)]
    assert mem[0] == mem[1]


def test_fsdp2s_copies_move_the_bytes_of_its_algorithm():
    params, root, layers = 1.0e9, 0.2e9, 20
    fwd, bwd = hsdp.fsdp2_copy_ops(FSDP, params, root, layers)
    gathers = lambda n: (6 / 2 + 4 / 2 + 4) * n   # noqa: E731  cast-in, copy-in (1 / S each), copy-out (whole)
    assert sum(o.total_bytes for o in fwd) == pytest.approx(gathers(params))
    assert sum(o.total_bytes for o in bwd) == pytest.approx(gathers(params - root) + 6 * params)   # root not gathered again
    assert [o.count for o in fwd] == [21] * 3 and [o.count for o in bwd] == [20] * 3 + [21]
    assert {o.name: o.kind for o in fwd + bwd} == {"fsdp2.cast_in": "upcast", "fsdp2.copy_in": "memory",
                                                  "fsdp2.copy_out": "memory", "fsdp2.chunk_cat": "upcast"}
    assert hsdp.fsdp2_copy_ops(ParallelSpec(dp=4, zero=3), params, 0.0, layers)[0][0].total_bytes == pytest.approx(1.5 * params)
    assert isinstance(fwd[1], ops.Op)


def test_candidate_2_prices_the_profiled_steps_copies_below_what_they_measured():
    """Development (llm-findings.md session 40 fsdp2copy): at the card's rates the copies read ~23% under the traces."""
    sys.path.insert(0, str(ROOT / "studies"))
    import eager_mode_classes as classes

    measured = classes.measure(classes.load(FSDPSTEP / "runs" / "traces" / "fsdp-0.8b-4096x3-rank0.json.gz"))["copies"]
    with eager.torch_framework_as(eager.fsdp2_copy_step):
        priced = classes.model_classes("fsdp", "0.8b", 3, 1, 4096, 0)["copies"]
    assert classes.model_classes("fsdp", "0.8b", 3, 1, 4096, 0)["copies"] < 1e-4   # the product prices none
    assert 0.6 * measured < priced < measured


def test_the_fsdpstep_sets_rows_enter_the_bands_against_their_registered_today_steps():
    from collections import Counter

    from simcluster.heldout import eager_cudnnstep
    from simcluster.strict import load_yaml
    from simcluster.trust.build import eager_residuals

    rows = eager_cudnnstep.held_out_rows(FSDPSTEP)
    reg = {f"{r['preset']} {r['mode']} seq {r['seq']} mb {r['micro_batch']}": r for r in load_yaml(FSDPSTEP / "registered.yaml")["rows"]}
    assert len(rows) == 5 and {r["bundle"] for r in rows} == {FSDPSTEP.name}
    got = {r["label"]: r for r in rows}
    assert set(got) == set(reg)
    for label, r in got.items():
        assert r["predicted_s"] == reg[label]["predicted"]["today"]["step_ms"] / 1e3 and r["host_flag"] == "registered"
    # fsdp-0.5b: the mean of its two processes; fsdp-0.8b: its timed process only (the profiled one is no process)
    assert got["0.5b fsdp seq 5120 mb 2"]["measured_s"] == pytest.approx(statistics.mean([0.12134, 0.13776]), rel=2e-3)
    assert got["0.8b fsdp seq 4096 mb 3"]["measured_s"] == pytest.approx(0.1880, rel=2e-3)
    assert Counter(res.regime.split(" | ")[2] for res in eager_residuals(rows)) == {"FSDP": 4, "DDP": 1}


def test_torch_framework_as_wraps_every_caller_and_restores_the_product_on_an_error():
    """Review A 8: one context manager swaps eager.torch_framework (studies, registrations, tests)."""
    kept = eager.torch_framework
    with pytest.raises(RuntimeError), eager.torch_framework_as(eager.fsdp2_copy_step):
        assert eager.torch_framework(FSDP).fsdp2_copies and not eager.torch_framework(DDP).fsdp2_copies
        raise RuntimeError
    assert eager.torch_framework is kept and not eager.torch_framework(FSDP).fsdp2_copies


def test_the_forms_study_skips_profiled_runs_and_marks_registered_sets():
    """Review A 5: fsdpstep's profiled process (fsdp-0.8b-trace-r1) is no step row; registered sets are marked."""
    sys.path.insert(0, str(ROOT / "studies"))
    from conftest import load_script

    forms = load_script(ROOT / "studies" / "fsdp2_step_forms.py")
    got = forms.rows()
    fsdpstep = sorted((r["preset"], round(r["measured"], 1)) for r in got if r["bundle"] == FSDPSTEP.name)
    assert fsdpstep == [("0.5b", 121.3), ("0.5b", 137.8), ("0.8b", 188.0), ("1.1b", 236.5), ("2b", 350.9)]
    assert all(r["registered"] for r in got if r["bundle"] == FSDPSTEP.name)
    assert not any(r["registered"] for r in got if r["bundle"] == "h200x2-llm-eager-noise-2026-11-29")
    # review D 1: fsdpnoise's trace call (trace-call/trace-fsdp-*.json: profiled processes) gives no row either
    noise = sorted((r["preset"], round(r["measured"], 1)) for r in got if r["bundle"] == "h200x2-eager-fsdpnoise-2026-11-30")
    assert noise == [("0.5b", 139.4), ("0.5b", 146.4), ("0.5b", 151.8), ("0.8b", 190.1), ("0.8b", 194.7), ("0.8b", 196.2)]


def test_torch_framework_as_leaves_no_candidate_in_the_caches_that_read_torch_framework():
    """Review C 4: a host fit cached inside the block (host_bound._default_fits) is the candidate's; after the block
    the product's fit is back, and each cache whose values read torch_framework is cleared with it."""
    from simcluster.heldout import eager_regimes, eager_registered
    from simcluster.llm import host_bound

    host_bound._default_fits.cache_clear()
    product = host_bound._default_fits()["fsdp"]
    with eager.torch_framework_as(eager.fsdp2_copy_step):
        candidate = host_bound._default_fits()["fsdp"]
    assert candidate[0] != pytest.approx(product[0], rel=1e-6)   # the candidate's host per kernel is its own
    assert host_bound._default_fits()["fsdp"] == product
    clears = {c.__self__ for c in eager._FRAMEWORK_CACHES}
    assert {host_bound._default_fits, eager_regimes._todays_host_share, eager_registered._flag_hosts,
            eager_registered.host_share} <= clears
