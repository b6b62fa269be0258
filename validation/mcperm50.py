"""Session 50 (issue 44, mcperm50): do Megatron-Core's own token permutations (moe_utils permute / sort_chunks_by_idxs /
unpermute, megatron-core 0.14.0, non-fused) take the time the adopted permutation column prices?
(calibration/h200x1-mcperm50-2026-12-01/README.md)

    PYTHONPATH=. python validation/mcperm50.py --register calibration/h200x1-mcperm50-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/mcperm50.py [BUNDLE]     # the read-out, once runs/ is unpacked in the bundle

Prediction per layer (registered): what the adopted table (llm/moe_router_table.json, its permutation columns session
49's CUDA-event times of the torch form) prices for the product's permute and permute.bwd ops on the H200 card at the
layer's own bytes (heldout/moerouter.permute_bytes; llm/moe_router_term.permute_factor, the product's nearest-by-bytes
lookup, times the card's HBM price): forward f x price, forward + backward (f + b) x price.
Measured: studies/mcore_perm_device.py's `events` clock of Megatron's chain (impl mcore) on the same 7 layers; its
`kernels` clock printed beside (the ratio only printed: the column is an events-clock figure).
Rules (one RULE line each), fixed before the run:
  P  ratio = the 7 layers' Megatron forward + backward EVENT seconds / the predicted: HOLDS if within 1 +- BAND; UNDER
     below; OVER above; UNDECIDED if Megatron did not run on every layer or the run was stopped.
  S  Megatron's events / the torch form's events timed in the same process (this lease's reference): HOLDS / UNDER /
     OVER on the same band (separates the implementation from the lease).
  L  the torch form's events this lease / moeker50's events records of it (7 layers, forward + backward): REPEATS
     within 1 +- LEASE_BAND, else DRIFTS (then P mixes the lease with the implementation; S is the figure to read).
Consequence (printed, fixed before the run; nothing is adopted this session): P HOLDS: the adopted permutation column
stands as Megatron's non-fused permutations; UNDER / OVER: a later adoption may rebuild the permutation columns from
Megatron's own chain."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout import moeker50, moerouter  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402
from simcluster.llm import moe_router_term  # noqa: E402
from simcluster.runner.moerouter_grid import GRID  # noqa: E402
from simcluster.strict import load_json  # noqa: E402
from validation.mcrouter50 import band_word, card, us  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-mcperm50-2026-12-01"
TRACE = "mcore-perm.json"            # under the bundle's runs/
BAND = 0.30                          # P / S: Megatron within +-30% of the column
LEASE_BAND = 0.15                    # L: the torch form's events repeat moeker50's within +-15%
PASSES = ("fwd", "fwdbwd")
RULE = {"P": f"HOLDS if Megatron's permutation EVENT seconds (7 layers, forward + backward) / the adopted column's price "
             f"(permute + permute.bwd on the H200 at the layer's bytes) lie within 1 +- {BAND}; UNDER below; OVER above; "
             "UNDECIDED if Megatron did not run on every layer or the run stopped; the kernels-clock ratio printed",
        "S": f"Megatron's events / the torch form's events in the same process: HOLDS / UNDER / OVER on 1 +- {BAND}",
        "L": f"the torch form's events this lease / moeker50's events records: REPEATS within 1 +- {LEASE_BAND}, else DRIFTS",
        "consequence": "P HOLDS: the adopted permutation column stands as Megatron's non-fused permutations; UNDER / OVER: "
                       "a later adoption may rebuild the permutation columns from Megatron's own chain (not this session)"}
CONSEQUENCE = {"HOLDS": "the adopted permutation column stands as Megatron's non-fused permutations",
               "UNDER": "a later adoption may rebuild the permutation columns from Megatron's own chain (not this session)",
               "OVER": "a later adoption may rebuild the permutation columns from Megatron's own chain (not this session)"}


def predicted() -> dict:
    """{layer: {pass: seconds}}: the adopted table's permute (+ permute.bwd) factor times the card's HBM price of the
    layer's permute bytes, through the product's own lookup (the adopted table, whatever the term's state now)."""
    gpu, saved = card(), moe_router_term.state()
    try:
        moe_router_term.enable(*moe_router_term.read_table())
        out = {}
        for name, _T, _E, h, _k, _sf, local, _ep, routed, *_ in GRID:
            b = moerouter.permute_bytes(routed, h, local)
            price = gpu.memory_time_s(b)
            f, bw = moe_router_term.permute_factor(b, False), moe_router_term.permute_factor(b, True)
            out[name] = {"fwd": f * price, "fwdbwd": (f + bw) * price}
        return out
    finally:
        moe_router_term.set_state(saved)


def moeker50_clock(clock: str) -> dict:
    """{layer: {pass: seconds}}: moeker50's `clock` records of the torch permutations (its bundle's runs)."""
    tr = moeker50.read_trace(moeker50.BUNDLE / "runs" / moeker50.TRACE)["records"]
    return {name: {p: float(tr[(name, "permute", p, clock)]["time_s"]) for p in PASSES} for name, *_ in GRID}


def register(path: Path) -> None:
    import yaml

    pred, ev, ks = predicted(), moeker50_clock("events"), moeker50_clock("kernels")
    doc = {"set": "mcperm50", "issue": 44, "commit": registering_commit(ROOT), "card": str(moerouter.H200_CARD.relative_to(ROOT)),
           "trace": f"runs/{TRACE}", "table": str(moe_router_term.TABLE_FILE.relative_to(ROOT)),
           "table_sha256": hashlib.sha256(moe_router_term.TABLE_FILE.read_bytes()).hexdigest(),
           "band": BAND, "lease_band": LEASE_BAND, "rule": RULE,
           "rows": {"predicted_us": us(pred), "moeker50_events_us": us(ev), "moeker50_kernels_us": us(ks),
                    "predicted_fwdbwd_sum_us": round(1e6 * sum(v["fwdbwd"] for v in pred.values()), 2),
                    "moeker50_events_fwdbwd_sum_us": round(1e6 * sum(v["fwdbwd"] for v in ev.values()), 2)}}
    write_registration(path, "# registered before the run (validation/mcperm50.py --register): the adopted permutation "
                       "column per layer, moeker50's events and kernels, the rules\n" + yaml.safe_dump(doc, sort_keys=False, width=140))


def read_trace(path: Path) -> dict:
    """{(layer, pass, impl, clock): record}, the device record, quick and the Megatron note; one line if unreadable."""
    doc = load_json(path, what="studies/mcore_perm_device.py output (the device call's runs/)")
    try:
        recs = {(r["layer"], r["pass"], r["impl"], r["clock"]): dict(r) for r in doc["records"] if r["piece"] == "permute"}
        out = {"records": recs, "device": dict(doc["device"]), "quick": bool(doc["quick"]), "mcore": str(doc["mcore"])}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SimclusterError(f"{path}: not a studies/mcore_perm_device.py output ({type(exc).__name__}: {exc})") from None
    moerouter.check_h200(out, path)
    return out


def sums(tr: dict, impl: str, clock: str) -> tuple[float, bool]:
    """(the 7 layers' forward + backward seconds of `impl` on `clock`, whether every layer has it, > 0, with kernels
    seen on the kernels clock)."""
    total, ok = 0.0, True
    for name, *_ in GRID:
        r = tr["records"].get((name, "fwdbwd", impl, clock))
        if r is None or not float(r.get("time_s") or 0) > 0 or (clock == "kernels" and not float(r.get("n_kernels") or 0) > 0):
            ok = False
            continue
        total += float(r["time_s"])
    return total, ok


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"set": "mcperm50"})
    try:
        pred_sum, ref_sum = float(reg["rows"]["predicted_fwdbwd_sum_us"]), float(reg["rows"]["moeker50_events_fwdbwd_sum_us"])
        pred = {k: dict(v) for k, v in reg["rows"]["predicted_us"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: no readable {exc} (expected rows: predicted_us, "
                              "predicted_fwdbwd_sum_us, moeker50_events_fwdbwd_sum_us)") from None
    tr = read_trace(Path(bundle) / "runs" / TRACE)
    (me, me_ok), (te, te_ok) = sums(tr, "mcore", "events"), sums(tr, "torch", "events")
    (mk, mk_ok), (tk, tk_ok) = sums(tr, "mcore", "kernels"), sums(tr, "torch", "kernels")
    v = {}
    why = tr["device"].get("stopped") or ("" if not tr["mcore"].startswith("not run") else tr["mcore"])
    why = why or "; ".join(f"{k}: {e}" for k, e in tr["device"].get("mcore_failed", {}).items())
    if why or not me_ok:
        v["P"] = v["S"] = f"UNDECIDED ({why or 'no events record on some Megatron layer'})"
    else:
        r = 1e6 * me / pred_sum
        v["P"] = f"{band_word(r, BAND)} (Megatron events {1e6 * me:.1f} us / column {pred_sum:.1f} us = {r:.3f}; band 1 +- {BAND})"
        s = me / te if te_ok else None
        v["S"] = (f"{band_word(s, BAND)} (Megatron events {1e6 * me:.1f} us / torch form this lease {1e6 * te:.1f} us = {s:.3f})"
                  if s else "UNDECIDED (the torch form's events missing on some layer)")
    if te_ok:
        q = 1e6 * te / ref_sum
        v["L"] = (f"{'REPEATS' if abs(q - 1) <= LEASE_BAND else 'DRIFTS'} (torch form events this lease {1e6 * te:.1f} us / "
                  f"moeker50 {ref_sum:.1f} us = {q:.3f}; band 1 +- {LEASE_BAND})")
    else:
        v["L"] = "UNDECIDED (the torch form's events missing on some layer)"
    kern = {"mcore": mk if mk_ok else None, "torch": tk if tk_ok else None}
    return {"tr": tr, "pred": pred, "pred_sum": pred_sum, "verdicts": v, "kernels": kern}


def show(res: dict) -> None:
    tr, rec = res["tr"], res["tr"]["records"]
    print(f"# device {tr['device'].get('name')} torch {tr['device'].get('torch')}; megatron-core {tr['mcore']}")
    for name, *_ in GRID:
        parts = []
        for p in PASSES:
            got = {(i, c): float((rec.get((name, p, i, c)) or {}).get("time_s") or 0) * 1e6 for i in ("mcore", "torch") for c in ("events", "kernels")}
            n = {i: float((rec.get((name, p, i, "kernels")) or {}).get("n_kernels") or 0) for i in ("mcore", "torch")}
            parts.append(f"{p} predicted {float(res['pred'].get(name, {}).get(p, 0)):.1f} events mcore {got['mcore', 'events']:.1f} "
                         f"torch {got['torch', 'events']:.1f}; kernels mcore {got['mcore', 'kernels']:.1f} ({n['mcore']:.0f} k) "
                         f"torch {got['torch', 'kernels']:.1f} ({n['torch']:.0f} k)")
        print(f"# {name} permute us: " + "; ".join(parts))
    k = res["kernels"]
    if k["mcore"] is not None:
        line = f"# printed, judging nothing: Megatron kernels {1e6 * k['mcore']:.1f} us (x{1e6 * k['mcore'] / res['pred_sum']:.3f} of the column)"
        if k["torch"]:
            line += f"; / the torch form's kernels this lease {1e6 * k['torch']:.1f} us = {k['mcore'] / k['torch']:.3f}"
        print(line)
    for key in ("P", "S", "L"):
        print(f"RULE {key}: {res['verdicts'][key]}")
    word = res["verdicts"]["P"].split()[0]
    print("consequence: " + CONSEQUENCE.get(word, "no verdict: the adopted permutation column is neither confirmed nor questioned by this run"))


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
