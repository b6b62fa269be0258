"""The router / permutation / sync measurement of session 49 (moerouter) and its mapping to llm/moe_router_term's table.

GRID (runner/moerouter_grid.py): every distinct MoE layer of the held-out published MoE rows (tests/test_moerouter.py
checks it against the rows' own shapes). studies/moe_router_device.py times, per layer, the router (forward, forward +
backward), the permute / sort / unpermute (torch, and Transformer Engine's fused kernels where they ran) and a loop of
layers with and without the token counts' device-to-host copy.

table_of(trace, card): per layer (m, e, h, router_f_s, router_b_s, permute_f_ratio, permute_b_ratio, permute_bytes) for
llm/moe_router_term.enable: router seconds less the H200 card's price of the router GEMM at the measured tokens (bf16;
forward; backward = fwd+bwd less fwd, less dgrad + wgrad), at least 0; the permute ratio = measured / the card's price of
the product's permute op bytes (llm/ops.permutation, permute_copies x 2 x rows x h x 2 bytes), at least 1. Registered
permute form (PERMUTE_IMPL): Transformer Engine's fused kernels where they ran on the device (the rows' recipes run
Transformer Engine, moe_permute_fusion), else the torch form. sync_of(trace): seconds per layer of the count's copy.
table_document / table_text: session 49's table (adopt49) from the bundle's runs, as llm/moe_router_term.TABLE_FILE held
it until session 50's adopt50 rebuilt its router columns from moeker50's kernel clock (heldout/moeker50.table_document
writes the file now); heldout/registration.before_adopt50 prices with it, and validation/moeker50.py's registration names
its sha256 (tests/test_adopt50.py checks both)."""

from __future__ import annotations

import json
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.hardware.gpu import load_gpu
from simcluster.runner.moerouter_grid import GRID, PRODUCT_M

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "calibration" / "h200x1-moerouter-2026-12-01"
H200_CARD = ROOT / "models" / "gpu" / "h200-sxm.yaml"
TRACE = "moe-router.json"          # under the bundle's runs/
PERMUTE_IMPL = ("te", "torch")     # registered: the first form measured for a layer


def read_trace(path: Path) -> dict:
    """{(layer, piece, pass, impl): seconds} and the device record of a studies/moe_router_device.py output; one line if bad."""
    try:
        doc = json.loads(Path(path).read_text())
        recs = {(r["layer"], r["piece"], r["pass"], r["impl"]): float(r["time_s"]) for r in doc["records"]}
        device, quick = dict(doc["device"]), bool(doc["quick"])
    except FileNotFoundError:
        raise SimclusterError(f"{path}: missing (the device call's runs/{TRACE})") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SimclusterError(f"{path}: not a studies/moe_router_device.py output ({type(exc).__name__}: {exc})") from None
    return {"records": recs, "device": device, "quick": quick}


def permute_bytes(rows: int, h: int, local: int) -> float:
    """The product's permute op bytes of a layer (llm/ops.layer_forward; the alltoall dispatcher's permute_copies)."""
    return (4 if local > 1 else 2) * 2 * rows * h * 2


def table_of(trace_path: Path, card_path: Path = H200_CARD) -> tuple[list[tuple], dict]:
    """(the term's rows, {layer: permute impl used}); one line if the trace is quick, not an H200's, or lacks a layer."""
    tr = read_trace(trace_path)
    check_h200(tr, trace_path)
    return rows_of(tr["records"], load_gpu(card_path)[0], trace_path)


def check_h200(tr: dict, where: Path) -> None:
    """One line if a read trace is a --quick one or not an H200's (heldout/moeker50's traces too)."""
    if tr["quick"]:
        raise SimclusterError(f"{where}: a --quick trace, expected the full measurement on an H200")
    if "H200" not in str(tr["device"].get("name", "")):
        raise SimclusterError(f"{where}: device {tr['device'].get('name')!r}, expected an H200 (the term's card)")


def rows_of(rec: dict, gpu, trace_path: Path) -> tuple[list[tuple], dict]:
    """table_of's mapping of {(layer, piece, pass, impl): seconds} on the card `gpu` (heldout/moeker50 maps each of its
    clocks through it)."""
    rows, impls = [], {}
    for name, T, E, h, _k, _sf, local, _ep, routed, _groups, _gtop in GRID:
        try:
            rf, rfb = rec[(name, "router", "fwd", "torch")], rec[(name, "router", "fwdbwd", "torch")]
            impl = next(i for i in PERMUTE_IMPL if (name, "permute", "fwd", i) in rec and (name, "permute", "fwdbwd", i) in rec)
        except (KeyError, StopIteration):
            raise SimclusterError(f"{trace_path}: layer {name}: no router / permute record (fwd and fwdbwd)") from None
        pf, pfb = rec[(name, "permute", "fwd", impl)], rec[(name, "permute", "fwdbwd", impl)]
        gf = gpu.gemm_time_s(T, E, h, dtype="bf16")
        gb = gpu.gemm_time_s(T, h, E, dtype="bf16") + gpu.gemm_time_s(h, E, T, dtype="bf16")
        b = permute_bytes(routed, h, local)
        price = gpu.memory_time_s(b)
        rows.append((PRODUCT_M[name], E, h, max(0.0, rf - gf), max(0.0, rfb - rf - gb),
                     max(1.0, pf / price), max(1.0, (pfb - pf) / price), b))
        impls[name] = impl
    return rows, impls


def sync_of(trace_path: Path) -> dict:
    """{layer: (loop wall per layer with the count copy, without, difference)} seconds (printed; judges nothing)."""
    rec = read_trace(trace_path)["records"]
    out = {}
    for name, *_ in GRID:
        s, n = rec.get((name, "sync", "loop_sync", "torch")), rec.get((name, "sync", "loop_nosync", "torch"))
        if s is not None and n is not None:
            out[name] = (s, n, s - n)
    return out


def h200_rate() -> float:
    """The H200 card's HBM rate (hbm_bandwidth_Bps, bytes/s), the rate the term's table was measured at: what
    moe_router_term.enable takes beside a table (the shipped table file's h200_hbm_Bps; validation/moerouter.py,
    validation/moelab49.py)."""
    return load_gpu(H200_CARD)[0].hbm_bandwidth_Bps


def table_document(bundle: Path = BUNDLE) -> dict:
    """Session 49's table (adopt49) as llm/moe_router_term.read_table reads a table: the rows table_of gives from
    `bundle`'s runs, the H200 card's HBM rate, and where they came from."""
    rows, impls = table_of(bundle / "runs" / TRACE, H200_CARD)
    return {"from": f"heldout/moerouter.table_of of {bundle.relative_to(ROOT)}/runs/{TRACE} (session 49, adopt49)",
            "permute_impl": impls, "h200_hbm_Bps": h200_rate(), "rows": [list(r) for r in rows]}


def table_text(doc: dict | None = None) -> str:
    """A table document as its file's text (session 49's by default: the bytes llm/moe_router_table.json held from
    adopt49 to adopt50, whose sha256 moeker50's registration names); heldout/moeker50.write_table writes the same form."""
    return json.dumps(table_document() if doc is None else doc, indent=1) + "\n"


def session49_table() -> tuple[tuple, float]:
    """Session 49's (rows, H200 HBM rate) as llm/moe_router_term.read_table gave them from its file (floats)."""
    doc = json.loads(table_text())
    return tuple(tuple(float(x) for x in r) for r in doc["rows"]), float(doc["h200_hbm_Bps"])


def layer_keys(path: Path, held_out_only: bool = True) -> list[tuple[int, tuple, tuple]]:
    """(row, key, ((m, e, h) of the product's router op, its permute op's bytes)) per MoE row of one published file, the
    key its MoE layer as GRID writes a layer (T', E, h, k, score function, local experts, ep, rows dispatched x local,
    groups, group top-k): a key in GRID is a layer moerouter timed; any other is priced by llm/moe_router_term's
    nearest-layer scaling (tests/test_moerouter.py; review A50, finding 4).
    Rows not compared, or whose spec the reader refuses, are left out; held-out rows only unless told."""
    from simcluster.llm import ops
    from simcluster.published import read_published
    from simcluster.reference.llm import llm_usage
    from simcluster.reference.llm_specs import spec_of
    from simcluster.runner.moerouter_grid import score_function

    ref = read_published(path, "published-llm-run")
    usage, out = llm_usage(ref), []
    for i, run in enumerate(ref.runs):
        if (held_out_only and not ref.held_out(i)) or (ref.usage.get("runs_not_compared") or {}).get(i):
            continue
        try:
            spec = spec_of(run, usage.assumptions, usage.gpus_per_node)
        except SimclusterError:
            continue
        if spec is None or spec[0] is None or not spec[0][0].moe:
            continue
        model, par, batch = spec[0]
        sh = ops.sharding(model, par, batch)
        local = model.experts // par.ep
        routed = sh.tokens * model.top_k * par.ep // (model.experts * (par.tp // par.etp))
        out.append((i, (sh.seq_tokens, model.experts, model.hidden, model.top_k,
                        score_function(str(run["model"].get("name", ""))), local, par.ep, routed * local,
                        model.expert_groups, model.group_topk), priced(ops.layer_forward(model, par, batch))))
    return out


def priced(layer_ops) -> tuple:
    """((m, e, h) of a layer's router op, its permute op's bytes): what llm/moe_router_term looks up."""
    by = {op.name: op for op in layer_ops}
    return tuple(by["router"].shape[:3]), by["permute"].bytes
