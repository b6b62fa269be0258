"""Session 50 (issue 44, mcrouter50): does Megatron-Core's own router (TopKRouter, megatron-core 0.14.0) take the GPU
kernel time the adopted router column holds? (calibration/h200x1-mcrouter50-2026-12-01/README.md)

    PYTHONPATH=. python validation/mcrouter50.py --register calibration/h200x1-mcrouter50-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/mcrouter50.py [BUNDLE]     # the read-out, once runs/ is unpacked in the bundle

Prediction per layer (registered): the adopted table's router seconds (llm/moe_router_table.json, adopt50: moeker50's
kernels clock net of the card's GEMM price, floor 0) plus the H200 card's GEMM price of the router's GEMMs, as
heldout/moerouter.rows_of nets them (forward T x E x h; backward the two GEMMs): forward r3 + gf, forward + backward
r3 + r4 + gf + gb. (Where no floor clamped, this is moeker50's kernels clock of the same record; both are printed.)
Measured: studies/mcore_router_device.py's `kernels` clock of Megatron's TopKRouter (impl mcore: its defaults, the GEMM
and routing in bf16 as the torch chain's) on the same 7 layers; impl mcore-fp32 (moe_router_dtype fp32) is printed only.
Rules (one RULE line each), fixed before the run:
  R  ratio = the 7 layers' Megatron forward + backward kernel seconds / the predicted: HOLDS if within 1 +- BAND;
     UNDER if below (Megatron's router takes less GPU time than the column prices); OVER if above; UNDECIDED if
     Megatron did not run on every layer, the profiler saw no kernels, or the run was stopped.
  S  the same ratio against the torch chain timed again in the same process (the lease's own reference): HOLDS / UNDER /
     OVER on the same band: separates the implementation from the lease.
  L  the torch chain on this lease / moeker50's kernels records (7 layers, fwd + bwd): REPEATS if within 1 +- LEASE_BAND,
     DRIFTS otherwise (then R mixes the lease with the implementation, and S is the figure to read).
Consequence (printed, fixed before the run): R HOLDS: the adopted column stands as Megatron's router; UNDER / OVER: a
later adoption may rebuild the router columns from Megatron's own kernels (not this session)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.heldout import moeker50, moerouter  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402
from simcluster.llm import moe_router_term  # noqa: E402
from simcluster.runner.moerouter_grid import GRID  # noqa: E402
from simcluster.strict import load_json  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-mcrouter50-2026-12-01"
TRACE = "mcore-router.json"          # under the bundle's runs/
BAND = 0.30                          # R / S: Megatron within +-30% of the column
LEASE_BAND = 0.10                    # L: the torch chain repeats moeker50's kernels within +-10%
PASSES = ("fwd", "fwdbwd")
RULE = {"R": f"HOLDS if Megatron's router kernel seconds (7 layers, forward + backward) / the adopted column's (router seconds + "
             f"GEMM price) lie within 1 +- {BAND}; UNDER below; OVER above; UNDECIDED if Megatron did not run on every layer, "
             "no kernels were seen or the run stopped",
        "S": f"the same ratio against the torch chain timed in the same process: HOLDS / UNDER / OVER on 1 +- {BAND}",
        "L": f"the torch chain this lease / moeker50's kernels records: REPEATS within 1 +- {LEASE_BAND}, else DRIFTS",
        "consequence": "R HOLDS: the adopted router column stands as Megatron's router; UNDER / OVER: a later adoption may "
                       "rebuild the router columns from Megatron's own kernels (not this session)"}


def card():
    return load_gpu(moerouter.H200_CARD)[0]


def predicted() -> dict:
    """{layer: {pass: seconds}}: the adopted table's router seconds plus the card's GEMM price (rows_of's GEMMs)."""
    table, gpu = moe_router_term.read_table()[0], card()
    if len(table) != len(GRID):
        raise SimclusterError(f"{moe_router_term.TABLE_FILE}: {len(table)} layers, expected the {len(GRID)} of moerouter_grid.GRID")
    out = {}
    for r, (name, T, E, h, *_) in zip(table, GRID, strict=True):
        gf = gpu.gemm_time_s(T, E, h, dtype="bf16")
        gb = gpu.gemm_time_s(T, h, E, dtype="bf16") + gpu.gemm_time_s(h, E, T, dtype="bf16")
        out[name] = {"fwd": r[3] + gf, "fwdbwd": r[3] + r[4] + gf + gb}
    return out


def moeker50_kernels() -> dict:
    """{layer: {pass: seconds}}: moeker50's kernels clock of the torch chain's router records (its bundle's runs)."""
    tr = moeker50.read_trace(moeker50.BUNDLE / "runs" / moeker50.TRACE)["records"]
    return {name: {p: float(tr[(name, "router", p, "kernels")]["time_s"]) for p in PASSES} for name, *_ in GRID}


def us(d: dict) -> dict:
    return {name: {p: round(1e6 * s, 2) for p, s in v.items()} for name, v in d.items()}


def register(path: Path) -> None:
    import yaml

    pred, ref = predicted(), moeker50_kernels()
    doc = {"set": "mcrouter50", "issue": 44, "commit": registering_commit(ROOT), "card": str(moerouter.H200_CARD.relative_to(ROOT)),
           "trace": f"runs/{TRACE}", "table": str(moe_router_term.TABLE_FILE.relative_to(ROOT)),
           "table_sha256": hashlib.sha256(moe_router_term.TABLE_FILE.read_bytes()).hexdigest(),
           "band": BAND, "lease_band": LEASE_BAND, "rule": RULE,
           "rows": {"predicted_us": us(pred), "moeker50_kernels_us": us(ref),
                    "predicted_fwdbwd_sum_us": round(1e6 * sum(v["fwdbwd"] for v in pred.values()), 2),
                    "moeker50_fwdbwd_sum_us": round(1e6 * sum(v["fwdbwd"] for v in ref.values()), 2)}}
    write_registration(path, "# registered before the run (validation/mcrouter50.py --register): the adopted router column "
                       "per layer, moeker50's kernels, the rules\n" + yaml.safe_dump(doc, sort_keys=False, width=140))


def read_trace(path: Path) -> dict:
    """{(layer, pass, impl, clock): record}, the device record, quick and the Megatron note; one line if unreadable."""
    doc = load_json(path, what="studies/mcore_router_device.py output (the device call's runs/)")
    try:
        recs = {(r["layer"], r["pass"], r["impl"], r["clock"]): dict(r) for r in doc["records"]}
        out = {"records": recs, "device": dict(doc["device"]), "quick": bool(doc["quick"]), "mcore": str(doc["mcore"])}
    except (ValueError, KeyError, TypeError) as exc:
        raise SimclusterError(f"{path}: not a studies/mcore_router_device.py output ({type(exc).__name__}: {exc})") from None
    moerouter.check_h200(out, path)
    return out


def sums(tr: dict, impl: str) -> tuple[float, bool]:
    """(the 7 layers' forward + backward kernel seconds of `impl`, whether every layer's record is there with kernels)."""
    total, ok = 0.0, True
    for name, *_ in GRID:
        r = tr["records"].get((name, "fwdbwd", impl, "kernels"))
        if r is None or not float(r.get("n_kernels") or 0) > 0 or not float(r.get("time_s") or 0) > 0:
            ok = False
            continue
        total += float(r["time_s"])
    return total, ok


def band_word(ratio: float, band: float) -> str:
    return "HOLDS" if abs(ratio - 1) <= band else ("UNDER" if ratio < 1 else "OVER")


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"set": "mcrouter50"})
    try:
        pred_sum, ref_sum = float(reg["rows"]["predicted_fwdbwd_sum_us"]), float(reg["rows"]["moeker50_fwdbwd_sum_us"])
        pred = {k: dict(v) for k, v in reg["rows"]["predicted_us"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: no readable {exc} (expected rows: predicted_us, "
                              "predicted_fwdbwd_sum_us, moeker50_fwdbwd_sum_us)") from None
    tr = read_trace(Path(bundle) / "runs" / TRACE)
    mc, mc_ok = sums(tr, "mcore")
    to, to_ok = sums(tr, "torch")
    v = {}
    why = tr["device"].get("stopped") or ("" if not tr["mcore"].startswith("not run") else tr["mcore"])
    why = why or ("; ".join(f"{k}: {e}" for k, e in tr["device"].get("mcore_failed", {}).items()))
    if why or not mc_ok:
        v["R"] = v["S"] = f"UNDECIDED ({why or 'no kernels seen on some Megatron record'})"
    else:
        r = 1e6 * mc / pred_sum
        v["R"] = f"{band_word(r, BAND)} (Megatron {1e6 * mc:.1f} us / column {pred_sum:.1f} us = {r:.3f}; band 1 +- {BAND})"
        if to_ok:
            s = mc / to
            v["S"] = f"{band_word(s, BAND)} (Megatron {1e6 * mc:.1f} us / torch chain this lease {1e6 * to:.1f} us = {s:.3f})"
        else:
            v["S"] = "UNDECIDED (the torch chain's kernels missing on some layer)"
    if to_ok:
        q = 1e6 * to / ref_sum
        v["L"] = (f"{'REPEATS' if abs(q - 1) <= LEASE_BAND else 'DRIFTS'} (torch chain this lease {1e6 * to:.1f} us / "
                  f"moeker50 {ref_sum:.1f} us = {q:.3f}; band 1 +- {LEASE_BAND})")
    else:
        v["L"] = "UNDECIDED (the torch chain's kernels missing on some layer)"
    return {"tr": tr, "pred": pred, "pred_sum": pred_sum, "verdicts": v}


def show(res: dict) -> None:
    tr, rec = res["tr"], res["tr"]["records"]
    print(f"# device {tr['device'].get('name')} torch {tr['device'].get('torch')}; megatron-core {tr['mcore']}")
    for name, *_ in GRID:
        parts = []
        for p in PASSES:
            m, t, f = (rec.get((name, p, i, "kernels")) or {} for i in ("mcore", "torch", "mcore-fp32"))
            me, te = (rec.get((name, p, i, "events")) or {} for i in ("mcore", "torch"))
            parts.append(f"{p} predicted {float(res['pred'].get(name, {}).get(p, 0)):.1f} mcore kernels {1e6 * float(m.get('time_s') or 0):.1f} "
                         f"({float(m.get('n_kernels') or 0):.0f} k, gemm {1e6 * float(m.get('gemm_s') or 0):.1f}) torch kernels "
                         f"{1e6 * float(t.get('time_s') or 0):.1f} ({float(t.get('n_kernels') or 0):.0f} k) mcore-fp32 kernels "
                         f"{1e6 * float(f.get('time_s') or 0):.1f}; events mcore "
                         f"{1e6 * float(me.get('time_s') or 0):.1f} torch {1e6 * float(te.get('time_s') or 0):.1f}")
        print(f"# {name} router us: " + "; ".join(parts))
    fp, fp_ok = sums(tr, "mcore-fp32")
    if fp_ok:
        print(f"# printed, judging nothing: Megatron with moe_router_dtype fp32 {1e6 * fp:.1f} us, forward + backward over the 7 layers "
              f"(x{1e6 * fp / res['pred_sum']:.3f} of the column)")
    for key in ("R", "S", "L"):
        print(f"RULE {key}: {res['verdicts'][key]}")
    word = res["verdicts"]["R"].split()[0]
    print("consequence: " + {"HOLDS": "the adopted router column stands as Megatron's router",
                             "UNDER": "a later adoption may rebuild the router columns from Megatron's own kernels (not this session)",
                             "OVER": "a later adoption may rebuild the router columns from Megatron's own kernels (not this session)"}
          .get(word, "no verdict: the adopted column is neither confirmed nor questioned by this run"))


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
