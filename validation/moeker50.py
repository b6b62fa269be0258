"""Session 50 (issue 44, moeker50): the MoE router chain's and the torch permutations' GPU kernel time apart from the
host's launch gaps, on one H200, and the rule fixed before the run on which figure llm/moe_router_term's table holds
(calibration/h200x1-moeker50-2026-12-01/README.md).

    PYTHONPATH=. python validation/moeker50.py --register calibration/h200x1-moeker50-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/moeker50.py [BUNDLE]     # the read-out, once runs/ is unpacked in the bundle

Decided before the run: the table holds the GPU's kernel time (the `kernels` clock: torch.profiler's device durations),
not CUDA events around eager calls (moerouter's figure, which holds the host's launch gaps between the chain's small
kernels: host time, which llm/moe_sync's c prices where the host is exposed). Rules (one RULE line each):
  G  the kernel figure cross-checked by CUDA-graph replay on the router records captured in both clocks: CONSISTENT if
     their summed graph seconds lie in [GRAPH_LO x kernels, GRAPH_HI x kernels + GRAPH_GAP_S x kernel count];
     INCONSISTENT otherwise; NOT CAPTURED if no router record was captured (R then stands on the kernel figure alone).
  R  the router piece: drop = 1 - (what the term adds from the kernels clock) / (the same from this lease's events
     clock), both through heldout/moerouter.rows_of (net of the card's GEMM price, forward + backward, 7 layers);
     REBUILD the table's router columns from the kernels clock if drop > the lease's repeat noise (heldout/moeker50.
     noise) + MARGIN; else KEEP; UNDECIDED if the profiler saw no kernels or G is INCONSISTENT.
  P  the permutations, the same with the seconds beyond their HBM price ((ratio - 1) x price); no graph gate (the torch
     permutation is not capturable: its masked_select sizes its output on the host).
Printed as consequence, judging nothing (every published MoE row is development for the term): the MoE family's rows
under the shipped table (registered) and the rebuilt one; skills Qwen3 30B row 0's modelled GPU work (c = 0) against
its profile's 22.821 s GPU-active; moe_sync's c re-derived on that row as studies/moe_te_host.py derives it (never
shipped from here: a fit on development data)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

import moe_te_host  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.heldout import moeker50, moerouter  # noqa: E402
from simcluster.heldout.registration import moe_rows_then, moedev51_off, read_run_set, registering_commit, set_main, write_registration  # noqa: E402
from simcluster.llm import moe_router_term, op_price  # noqa: E402
from simcluster.reference.llm import validate_published_llm  # noqa: E402

MARGIN = 0.15                                    # R / P: the drop must exceed the repeat noise by 15 points
GRAPH_LO, GRAPH_HI, GRAPH_GAP_S = 0.9, 1.1, 3e-6   # G: graph replay vs the kernel sum (+ 3 us a kernel between nodes)
C_HI_S = 5e-3                                    # the c search's upper end (studies/moe_te_host.derive stops at 200 us)
RULE = {"G": f"CONSISTENT if the captured router records' graph seconds lie in [{GRAPH_LO} x kernel seconds, {GRAPH_HI} x "
             f"kernel seconds + {1e6 * GRAPH_GAP_S:.0f} us x kernels]; NOT CAPTURED if none; else INCONSISTENT",
        "R": f"REBUILD the router columns from the kernels clock if 1 - kernels / events (what the term adds, this lease) > "
             f"repeat noise + {MARGIN}; KEEP otherwise; UNDECIDED if no kernels seen or G INCONSISTENT",
        "P": f"REBUILD the permute columns from the kernels clock if 1 - kernels / events (seconds beyond the HBM price) > "
             f"repeat noise + {MARGIN}; KEEP otherwise; UNDECIDED if no kernels seen"}


REG_ROW_KEYS = ("moe_rows", "moe_mean_abs_pct", "moe_mean_signed_pct", "moe_within_10pct", "qwen3_row0_gpu_work_s",
                "c_rederived_us", "moe_row_errors_pct")


def card():
    return load_gpu(moerouter.H200_CARD)[0]


def under(table) -> dict:
    """With the term's table `table` (labels and scope as adopted): the MoE family's rows (development for the term),
    skills Qwen3 30B row 0's modelled GPU work (c = 0) and c re-derived on it; the state restored after."""
    saved = moe_router_term.state()
    moe_router_term.enable(table, card().hbm_bandwidth_Bps)
    op_price.forget()
    try:
        with moedev51_off():   # the model as registered and read (session 51's moedev51 facts off)
            rows = moe_rows_then(validate_published_llm().rows)   # the 70 rows of its registration (publ50's 7 left out)
            gpu_work = moe_te_host.row_result(0, 0.0).step_time_s
            c = moe_te_host.derive(hi=C_HI_S)
    finally:
        moe_router_term.set_state(saved)
        op_price.forget()
    errs = {f"{r.source} {r.run}": round(100 * r.error, 2) for r in rows}
    e = list(errs.values())
    return {"moe_rows": len(e), "moe_mean_abs_pct": round(sum(map(abs, e)) / len(e), 2),
            "moe_mean_signed_pct": round(sum(e) / len(e), 2), "moe_within_10pct": sum(abs(x) <= 10 for x in e),
            "qwen3_row0_gpu_work_s": round(gpu_work, 3), "c_rederived_us": round(1e6 * c, 1), "moe_row_errors_pct": errs}


def shipped() -> tuple:
    """The table shipped when the set was registered and ran: session 49's (heldout/moerouter.session49_table; adopt50
    replaced llm/moe_router_table.json with this set's rebuild after the read, so the file is no longer it)."""
    return moerouter.session49_table()[0]


def register(path: Path) -> None:
    import yaml

    table, gpu = shipped(), card()
    doc = {"set": "moeker50", "issue": 44, "commit": registering_commit(ROOT), "card": str(moerouter.H200_CARD.relative_to(ROOT)),
           "trace": f"runs/{moeker50.TRACE}", "permute_graph_trace": f"runs/{moeker50.PERMUTE_GRAPH}",
           "shipped_table": str(moe_router_term.TABLE_FILE.relative_to(ROOT)),
           "shipped_table_sha256": hashlib.sha256(moerouter.table_text().encode()).hexdigest(),   # the file's bytes then
           "margin": MARGIN, "graph_bounds": [GRAPH_LO, GRAPH_HI, GRAPH_GAP_S], "rule": RULE,
           "shipped_added_us": {p: round(1e6 * moeker50.added_s(table, gpu, p), 1) for p in ("router", "permute")},
           "profiled_gpu_active_s": moe_te_host.GPU_ACTIVE_S, "rows": under(table)}
    write_registration(path, "# registered before the run (validation/moeker50.py --register): today's model (the shipped "
                       "router table), the rules\n" + yaml.safe_dump(doc, sort_keys=False, width=140))


def piece_verdict(drop: float, noise: float, seen: bool, gate: str = "") -> str:
    if not seen:
        return "UNDECIDED (the profiler saw no kernels on some record: no kernel figure)"
    if gate == "INCONSISTENT":
        return f"UNDECIDED (G INCONSISTENT; drop {100 * drop:.1f}%)"
    word = "REBUILD" if drop > noise + MARGIN else "KEEP"
    return f"{word} (drop {100 * drop:.1f}% vs repeat noise {100 * noise:.1f}% + margin {100 * MARGIN:.0f}%)"


def graph_verdict(g: dict) -> str:
    if not g["captured"]:
        return "NOT CAPTURED (no router record captured: R stands on the kernel figure alone)"
    lo, hi = GRAPH_LO * g["kernels_s"], GRAPH_HI * g["kernels_s"] + GRAPH_GAP_S * g["n_kernels"]
    word = "CONSISTENT" if lo <= g["graph_s"] <= hi else "INCONSISTENT"
    return (f"{word} ({g['captured']} router records: graph {1e6 * g['graph_s']:.1f} us vs kernels {1e6 * g['kernels_s']:.1f} us "
            f"over {g['n_kernels']:.0f} kernels, bounds [{1e6 * lo:.1f}, {1e6 * hi:.1f}] us)")


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"set": "moeker50"})
    try:
        runs, reg_rows, ship_added = Path(bundle) / "runs", dict(reg["rows"]), dict(reg["shipped_added_us"])
        for key in REG_ROW_KEYS:
            reg_rows[key]
        for p in ("router", "permute"):
            float(ship_added[p])
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: no readable {exc} (expected rows: {', '.join(REG_ROW_KEYS)}; "
                              "shipped_added_us: router, permute)") from None
    tr, gpu = moeker50.read_bundle(runs), card()
    where = runs / moeker50.TRACE
    seen = moeker50.kernels_seen(tr)
    tables = {c: moeker50.rows(tr, c, gpu, where) for c in ("events", "kernels")}
    added = {c: {p: moeker50.added_s(t, gpu, p) for p in ("router", "permute")} for c, t in tables.items()}
    g = moeker50.graph_check(tr)
    gv = graph_verdict(g)
    verdicts, drops = {"G": gv}, {}
    for p, key in (("router", "R"), ("permute", "P")):
        e, k = added["events"][p], added["kernels"][p]
        drops[p] = 1 - k / e if e > 0 else 0.0
        verdicts[key] = piece_verdict(drops[p], moeker50.noise(tr, p), seen, gv.split()[0] if key == "R" else "")
    rb_r, rb_p = verdicts["R"].startswith("REBUILD"), verdicts["P"].startswith("REBUILD")
    table = moeker50.rebuilt(shipped(), tables["kernels"], rb_r, rb_p)
    after = under(table) if (rb_r or rb_p) else None
    return {"tr": tr, "added": added, "ship_added": ship_added, "reg": reg_rows, "after": after, "verdicts": verdicts,
            "graph": g, "permute_graph": moeker50.permute_graph_why(tr), "rebuilt": (rb_r, rb_p)}


def layer_lines(tr: dict) -> None:
    rec = tr["records"]
    for name, *_ in moerouter.GRID:
        for piece in ("router", "permute"):
            parts = []
            for pas in moeker50.PASSES:
                e, k, gr = (rec.get((name, piece, pas, c)) or {} for c in moeker50.CLOCKS)
                gs = "not captured" if gr.get("time_s") is None else f"{1e6 * gr['time_s']:.1f}"
                parts.append(f"{pas} events {1e6 * float(e.get('time_s') or 0):.1f} kernels {1e6 * float(k.get('time_s') or 0):.1f} "
                             f"({float(k.get('n_kernels') or 0):.0f} kernels, span {1e6 * float(k.get('span_s') or 0):.1f}, "
                             f"gemm {1e6 * float(k.get('gemm_s') or 0):.1f}) graph {gs}")
            print(f"# {name} {piece} us: " + "; ".join(parts))


def show(res: dict) -> None:
    tr = res["tr"]
    print(f"# device {tr['device'].get('name')} torch {tr['device'].get('torch')}; graph context: "
          f"{tr['device'].get('graph_context', 'ok')}; permute graph: {tr['device'].get('permute_graph', 'read')}")
    layer_lines(tr)
    for p in ("router", "permute"):
        a, s = res["added"], float(res["ship_added"][p])
        print(f"# {p}: the term adds {s:.1f} us (shipped table, 7 layers fwd + bwd); this lease: events {1e6 * a['events'][p]:.1f} us "
              f"(x{1e6 * a['events'][p] / s:.2f} of shipped), kernels {1e6 * a['kernels'][p]:.1f} us (x{1e6 * a['kernels'][p] / s:.2f})")
    for k, why in res["graph"]["why"].items():
        print(f"# router graph not captured: {k}: {why}")
    for k, why in res["permute_graph"].items():
        print(f"# permute graph {k}: {why}")
    for key in ("G", "R", "P"):
        print(f"RULE {key}: {res['verdicts'][key]}")
    reg, after = res["reg"], res["after"] or res["reg"]
    label = "rebuilt table" if res["after"] else "table unchanged (no rebuild)"
    print(f"consequence (development rows, judging nothing): MoE {reg['moe_rows']} rows mean |error| {reg['moe_mean_abs_pct']:.2f}% "
          f"(signed {reg['moe_mean_signed_pct']:+.2f}%, {reg['moe_within_10pct']} within 10%) shipped -> {after['moe_mean_abs_pct']:.2f}% "
          f"(signed {after['moe_mean_signed_pct']:+.2f}%, {after['moe_within_10pct']} within 10%) {label}")
    print(f"consequence: skills Qwen3 30B row 0 modelled GPU work (c = 0) {reg['qwen3_row0_gpu_work_s']:.2f} s shipped -> "
          f"{after['qwen3_row0_gpu_work_s']:.2f} s; profiled GPU-active {moe_te_host.GPU_ACTIVE_S} s")
    print(f"consequence: moe_sync c re-derived on that row (not shipped): {reg['c_rederived_us']:.1f} us shipped table -> "
          f"{after['c_rederived_us']:.1f} us (shipped c {1e6 * moe_te_host.shipped_c():.1f} us; search to {1e6 * C_HI_S:.0f} us)")
    if res["after"]:
        for key, err in reg["moe_row_errors_pct"].items():
            print(f"  MoE {key}: {err:+.2f}% -> {after['moe_row_errors_pct'].get(key, float('nan')):+.2f}%")


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], moeker50.BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
