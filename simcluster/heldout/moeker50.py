"""The MoE router chain and torch permutations timed three ways on one H200 (session 50, moeker50; issue 44):
studies/moe_kernel_device.py's traces read, each clock mapped to llm/moe_router_term's table rows through
heldout/moerouter.rows_of, and the rules' figures (calibration/h200x1-moeker50-2026-12-01/README.md).

Clocks: `events` (moerouter's CUDA events around eager calls: host launch gaps included), `kernels` (torch.profiler's
device-side durations summed: the GPU's own work, the figure the term's table holds by the rule fixed before the run)
and `graph` (CUDA-graph replays, where capture worked; the cross-check of `kernels`).

added_s(rows, gpu, piece): what the term adds over the 7 layers, one layer pass each, forward + backward: the router's
seconds beyond the card's GEMM price (table columns 3 + 4), or the permutations' seconds beyond their HBM price
((ratio - 1) x price, columns 5 + 6). noise(trace, piece): the lease's repeat noise, the largest (max - min) / median of
the piece's events and kernels samples. rebuilt(shipped, kernel_rows, router, permute): the shipped table with the
router and / or permute columns taken from the kernel rows.

table_document / write_table (session 50, adopt50; the README's "Adoption" paragraph, fixed before the run): R read
REBUILD and P KEEP, so the adopted table (llm/moe_router_term.TABLE_FILE) is rebuilt(session 49's table, this bundle's
kernel rows, router=True, permute=False): the router columns the GPU's kernel time, the permutation columns session 49's.
tests/test_adopt50.py checks that the file is this output."""

from __future__ import annotations

import json
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.hardware.gpu import load_gpu
from simcluster.heldout import moerouter
from simcluster.runner.moerouter_grid import GRID

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "calibration" / "h200x1-moeker50-2026-12-01"
TRACE, PERMUTE_GRAPH = "moe-kernels.json", "moe-graph-permute.json"   # under the bundle's runs/
CLOCKS = ("events", "kernels", "graph")
PASSES = ("fwd", "fwdbwd")


def read_trace(path: Path, script: str = "studies/moe_kernel_device.py", key=None) -> dict:
    """{key(record): record} (default (layer, piece, pass, clock); a key of None leaves the record out) and the device
    record of a `script` output (studies/moe_kernel_device.py; heldout/moonprice52 reads moonrouter52's with its own
    key); one line if it is missing or not such an output."""
    key = key or (lambda r: (r["layer"], r["piece"], r["pass"], r["clock"]))
    try:
        doc = json.loads(Path(path).read_text())
        recs = {k: dict(r) for r in doc["records"] if (k := key(r)) is not None}
        device, quick = dict(doc["device"]), bool(doc["quick"])
    except FileNotFoundError:
        raise SimclusterError(f"{path}: missing (the device call's runs/ from {script})") from None
    except IsADirectoryError:
        raise SimclusterError(f"{path}: a folder, expected a {script} output") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SimclusterError(f"{path}: not a {script} output ({type(exc).__name__}: {exc})") from None
    return {"records": recs, "device": device, "quick": quick}


def check_complete(tr: dict, path: Path) -> None:
    """One line unless the trace (read_trace) is an H200's full measurement (heldout/moerouter.check_h200) of a run not
    stopped short (the device scripts write device.stopped when cut)."""
    moerouter.check_h200(tr, path)
    if tr["device"].get("stopped"):
        raise SimclusterError(f"{path}: the run was stopped ({tr['device']['stopped']}): no complete measurement, no verdict")


def read_bundle(runs: Path, optional_graph: bool = True) -> dict:
    """The main trace (TRACE) checked as an H200's full measurement, with the permutations' graph attempt
    (PERMUTE_GRAPH) merged in where that file is there (its process may have been skipped by the budget)."""
    tr = read_trace(runs / TRACE)
    check_complete(tr, runs / TRACE)
    extra = runs / PERMUTE_GRAPH
    if extra.is_file() and extra.stat().st_size > 0:
        try:
            tr["records"].update(read_trace(extra)["records"])
        except SimclusterError as exc:
            tr["device"]["permute_graph"] = f"unread: {exc}"
    elif not optional_graph:
        raise SimclusterError(f"{extra}: missing")
    return tr


def clock_times(tr: dict, clock: str) -> dict:
    """{(layer, piece, pass, 'torch'): seconds} of one clock, as heldout/moerouter.rows_of reads moerouter's records;
    records without a time (a graph not captured) left out."""
    return {(lay, piece, pas, "torch"): float(r["time_s"]) for (lay, piece, pas, clk), r in tr["records"].items()
            if clk == clock and r.get("time_s") is not None}


def kernels_seen(tr: dict) -> bool:
    """Whether the profiler saw the GPU's kernels on every router / permute record (n_kernels > 0 and time > 0)."""
    ks = [r for (_, piece, _, clk), r in tr["records"].items() if clk == "kernels" and piece in ("router", "permute")]
    return len(ks) == 4 * len(GRID) and all(float(r.get("n_kernels") or 0) > 0 and float(r["time_s"] or 0) > 0 for r in ks)


def rows(tr: dict, clock: str, gpu, where: Path) -> list[tuple]:
    """The term's table rows from one clock (heldout/moerouter.rows_of: router net of the card's GEMM price, permute ratio
    over the card's HBM price, floors 0 and 1)."""
    return moerouter.rows_of(clock_times(tr, clock), gpu, where)[0]


def added_s(table, gpu, piece: str) -> float:
    """Seconds the term adds over the table's layers, one layer pass each, forward + backward, for `piece`."""
    if piece == "router":
        return sum(r[3] + r[4] for r in table)
    return sum((r[5] - 1 + r[6] - 1) * gpu.memory_time_s(r[7]) for r in table)


def spread(samples) -> float:
    """(max - min) / median of one record's samples (0 for fewer than 2)."""
    s = sorted(float(x) for x in samples)
    if len(s) < 2 or s[len(s) // 2] <= 0:
        return 0.0
    return (s[-1] - s[0]) / s[len(s) // 2]


def noise(tr: dict, piece: str) -> float:
    """The lease's repeat noise for a piece: the largest spread over its events and kernels records."""
    return max((spread(r.get("samples") or []) for (_, p, _, clk), r in tr["records"].items()
                if p == piece and clk in ("events", "kernels")), default=0.0)


def graph_check(tr: dict) -> dict:
    """The router records captured in a graph and profiled: sums of graph seconds, kernel seconds and kernel counts,
    and which records were not captured (with why)."""
    g = k = n = 0.0
    captured, why = 0, {}
    for name, *_ in GRID:
        for pas in PASSES:
            gr, kr = tr["records"].get((name, "router", pas, "graph")), tr["records"].get((name, "router", pas, "kernels"))
            if gr is None or kr is None:
                continue
            if gr.get("time_s") is None:
                why[f"{name} {pas}"] = str(gr.get("why", "?"))
                continue
            captured += 1
            g, k, n = g + float(gr["time_s"]), k + float(kr["time_s"]), n + float(kr.get("n_kernels") or 0)
    return {"captured": captured, "graph_s": g, "kernels_s": k, "n_kernels": n, "why": why}


def permute_graph_why(tr: dict) -> dict:
    """{layer pass: why} of the permutations' capture attempt (empty where it was not attempted; times where it worked)."""
    out = {}
    for name, *_ in GRID:
        for pas in PASSES:
            r = tr["records"].get((name, "permute", pas, "graph"))
            if r is not None:
                out[f"{name} {pas}"] = str(r.get("why")) if r.get("time_s") is None else f"captured {1e6 * float(r['time_s']):.1f} us"
    return out


def rebuilt(shipped, kernel_rows, router: bool, permute: bool) -> tuple:
    """The shipped table with its router columns (3, 4) and / or permute columns (5, 6) from the kernel clock's rows;
    the layers must match (m, e, h, permute bytes)."""
    if len(shipped) != len(kernel_rows):
        raise SimclusterError(f"moeker50: the shipped table has {len(shipped)} layers, the kernel rows {len(kernel_rows)}")
    out = []
    for s, k in zip(shipped, kernel_rows, strict=True):
        if any(abs(a - b) > 1e-6 * max(1.0, abs(a)) for a, b in zip((s[0], s[1], s[2], s[7]), (k[0], k[1], k[2], k[7]), strict=True)):
            raise SimclusterError(f"moeker50: layer (m, e, h, bytes) {s[:3]} / {s[7]} of the shipped table differs from the kernel row's")
        out.append((s[0], s[1], s[2], k[3] if router else s[3], k[4] if router else s[4],
                    k[5] if permute else s[5], k[6] if permute else s[6], s[7]))
    return tuple(out)


def table_document(bundle: Path = BUNDLE) -> dict:
    """The adopted table (adopt50) as llm/moe_router_term.read_table reads it: session 49's table (heldout/moerouter.
    table_document) with its router columns from `bundle`'s kernels clock, the permutation columns kept (rule P KEEP);
    since session 51's moedev51 each row keyed by the router tokens it was measured at (GRID's T', the rank's sequence
    shard: the product's router M since then), not PRODUCT_M (adopt50's file as it was: heldout/registration.rekeyed_then
    keys back to it)."""
    before = moerouter.table_document()
    runs = bundle / "runs"
    kernel = rows(read_bundle(runs), "kernels", load_gpu(moerouter.H200_CARD)[0], runs / TRACE)
    return {"from": f"heldout/moeker50.rebuilt: session 49's table (heldout/moerouter.table_of of "
                    f"{moerouter.BUNDLE.relative_to(ROOT)}/runs/{moerouter.TRACE}) with its router columns from the kernels "
                    f"clock of {bundle.relative_to(ROOT)}/runs/{TRACE} (session 50, adopt50: rule R REBUILD, P KEEP)",
            "permute_impl": before["permute_impl"], "h200_hbm_Bps": before["h200_hbm_Bps"],
            "rows": [[float(g[1]), *r[1:]] for g, r in
                     zip(GRID, rebuilt(moerouter.session49_table()[0], kernel, router=True, permute=False), strict=True)]}


def write_table(path: Path | None = None) -> None:
    """Write the adopted table (table_document) to llm/moe_router_term.TABLE_FILE (or `path`).

        PYTHONPATH=. python -c "from simcluster.heldout.moeker50 import write_table; write_table()"
    """
    from simcluster.llm import moe_router_term

    Path(path or moe_router_term.TABLE_FILE).write_text(moerouter.table_text(table_document()))
