"""Session 50 adopt50: moeker50's rules read R REBUILD, P KEEP (calibration/h200x1-moeker50-2026-12-01, README's
"Adoption" paragraph, fixed before the run), so llm/moe_router_term.TABLE_FILE is session 49's table with its router
columns from the set's kernels clock (the GPU's own kernel time), the permutation columns kept; the registration handle
heldout/registration.before_adopt50 prices with session 49's table for the sets registered with it (moeker50)."""

from __future__ import annotations

import json

from conftest import ROOT

from simcluster.hardware.gpu import load_gpu
from simcluster.heldout import moeker50, moerouter
from simcluster.heldout.registration import before_adopt49, before_adopt50
from simcluster.llm import moe_router_term, op_price, ops
from simcluster.llm.framework import MEGATRON
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.runner.moerouter_grid import GRID, PRODUCT_M

RUNS = moeker50.BUNDLE / "runs"
H100 = ROOT / "models" / "gpu" / "h100-sxm.yaml"
MOE = TransformerSpec(4, 2048, 1408, 16, 16, 32000, 4096, experts=64, top_k=6, expert_ffn=1408)


def test_the_shipped_table_is_moeker50s_rebuild_of_the_committed_runs():
    """The file is heldout/moeker50.table_document's text byte for byte, and its rows are rebuilt here from the two
    committed runs: session 49's table (moerouter's events) with the router columns of moeker50's kernels clock."""
    assert moe_router_term.TABLE_FILE.read_text() == moerouter.table_text(moeker50.table_document())
    rows, rate = moe_router_term.read_table()
    before, before_rate = moerouter.session49_table()
    gpu = load_gpu(moerouter.H200_CARD)[0]
    kernel = moeker50.rows(moeker50.read_bundle(RUNS), "kernels", gpu, RUNS / moeker50.TRACE)
    # since session 51's moedev51 each row keyed by the tokens GRID measured (T'), not PRODUCT_M; the rest adopt50's
    rekeyed = tuple((float(g[1]), *r[1:]) for g, r in zip(GRID, moeker50.rebuilt(before, kernel, router=True, permute=False), strict=True))
    assert rows == rekeyed and rate == before_rate
    assert [r[1:3] + r[5:] for r in rows] == [r[1:3] + r[5:] for r in before]    # layers and permutations kept (P KEEP)
    assert [r[0] for r in before] == [PRODUCT_M[g[0]] for g in GRID]
    assert all(r[3] < b[3] and r[4] < b[4] for r, b in zip(rows, before, strict=True))


def test_the_router_columns_are_the_kernel_seconds_net_of_the_cards_gemm_price():
    """One layer by hand from the committed trace (not through rows_of): the forward column is the profiler's kernel
    seconds less the H200's price of the router GEMM, the backward one fwd+bwd less fwd less dgrad + wgrad, floors 0."""
    recs = {(r["layer"], r["piece"], r["pass"], r["clock"]): r for r in json.loads((RUNS / moeker50.TRACE).read_text())["records"]}
    gpu = load_gpu(moerouter.H200_CARD)[0]
    rows = moe_router_term.read_table()[0]
    for i, (name, T, E, h, *_) in enumerate(GRID):
        f, fb = (float(recs[(name, "router", p, "kernels")]["time_s"]) for p in ("fwd", "fwdbwd"))
        gf = gpu.gemm_time_s(T, E, h, dtype="bf16")
        gb = gpu.gemm_time_s(T, h, E, dtype="bf16") + gpu.gemm_time_s(h, E, T, dtype="bf16")
        assert rows[i][:3] == (T, E, h)
        assert abs(rows[i][3] - max(0.0, f - gf)) < 1e-12 and abs(rows[i][4] - max(0.0, fb - f - gb)) < 1e-12, name


def test_what_the_router_piece_adds_is_the_read_outs_kernel_figure():
    """The read-out's line: the shipped (session 49) table adds 7912.7 us over the 7 layers, fwd + bwd; the kernels
    clock 928.6 us (x0.12); the permutations' 15452.1 us unchanged."""
    gpu = load_gpu(moerouter.H200_CARD)[0]
    now, before = moe_router_term.read_table()[0], moerouter.session49_table()[0]
    assert round(1e6 * moeker50.added_s(before, gpu, "router"), 1) == 7912.7
    assert round(1e6 * moeker50.added_s(now, gpu, "router"), 1) == 928.6
    assert round(1e6 * moeker50.added_s(now, gpu, "permute"), 1) == round(1e6 * moeker50.added_s(before, gpu, "permute"), 1) == 15452.1


def test_before_adopt50_prices_with_session_49s_table_and_restores_the_adopted_one():
    """Inside the handle: the term on with session 49's table, the adoption's labels and scope; the router ops price
    higher than adopt50's, the permutations the same; outside: the adopted state, op_price's memo cleared both ways."""
    gpu = load_gpu(H100)[0]
    par, batch = ParallelSpec(tp=1, pp=1, dp=8, ep=8), BatchSpec(global_batch=64, micro_batch=1)
    layer = ops.layer_forward(MOE, par, batch, MEGATRON) + ops.layer_backward(MOE, par, batch, MEGATRON)
    moe_router_term.table()                  # the adopted table read (first use)
    saved = moe_router_term.state()
    now = {o.name: op_price.op_time_s(gpu, o, "bf16") for o in layer}
    with before_adopt50():
        assert moe_router_term.table() == moerouter.session49_table()[0] and moe_router_term.state()[2:] == (True, moe_router_term.ADOPTED)
        assert moe_router_term.development_why("megatron", "MoE", "llm-megatron-bridge-skills-moonlight16b-h100-bf16.yaml")
        then = {o.name: op_price.op_time_s(gpu, o, "bf16") for o in layer}
        with before_adopt49():
            assert not moe_router_term.on()
        assert moe_router_term.table() == moerouter.session49_table()[0]
    assert moe_router_term.state() == saved and moe_router_term.table() == moe_router_term.read_table()[0]
    assert {o.name: op_price.op_time_s(gpu, o, "bf16") for o in layer} == now
    for name in ("router", "router.dgrad"):
        assert then[name] > now[name], name
    assert all(then[n] == now[n] for n in now if n not in ("router", "router.dgrad"))


def test_publ50s_model_zoo_predictions_reproduce_inside_the_handle():
    """publ50 predicted the Megatron MoE Model Zoo rows once with session 49's table (validation/publ50-modelzoo-
    predicted-once.txt): inside before_adopt50 every compared row's error is the printed one again (to its 0.1 point)."""
    from simcluster.reference.llm import validate_published_llm

    printed, path = {}, None
    for line in (ROOT / "validation" / "publ50-modelzoo-predicted-once.txt").read_text().splitlines():
        if line.startswith("# command:"):
            path = ROOT / line.split()[-1]
        elif line.startswith("megatron-moe-modelzoo") and "%  yes" in line:
            printed[(path, int(line.split()[1]))] = float(line.split("%  yes")[0].split()[-1])
    assert len(printed) == 7 and len({p for p, _ in printed}) == 3
    with before_adopt50():
        got = {(p, r.run): round(100 * r.error, 1) for p in {p for p, _ in printed}
               for r in validate_published_llm(p).rows if r.error is not None}
    assert {k: got[k] for k in printed} == printed     # rows compared since (cpmoe50's CP rows 8, 10, 12) aside
    assert {r for _, r in set(got) - set(printed)} <= {8, 10, 12}
