"""fp8lease61 (issue 44, session 61; registered in validation/fp8lease61-registered.txt): the read of one H200 lease
(calibration/h200x1-fp8lease61-2026-12-02) that timed the GPT-3 175B TP 4 fp8 layer of fp8layer60 at the start (a) and
end (b) of its call and, between them, gpu-micro's fp8 and fp8-layers sections as the card's own fp8 trace ran them.

  Q1 lease spread: the card's fp8 fit-set GEMMs (fit/gpu.gemm_in_fit), back to back, this lease's time over the
     2026-11-23 lease's, shape by shape: median and the 10-90% range (and the held-out layer GEMMs, and interleaved)
  Q2 shape transfer: the h200 card's fp8 efficiency refitted (fit/gpu.fit_gpu on the card's base trace, the fp8 curve
     from this lease's trace) prices the layer's GEMMs; against this lease's measured back-to-back GEMM sum (mean of
     a and b). PASS within +-5%
  Q3 within the call: b against a (sequence, GEMM sum)
and fp8lease61b's read (runs_b, development, after Q2 failed: gpu-micro's gemm-shapes section, records >= 0.5 s long,
after 5 s and after 90 s of preheat):
  B1 thermal history: each fp8 shape's time after 90 s of preheat over its time after 5 s
  B2 the layer's GEMMs steady (a >= 0.5 s record back to back) against the layer study's op-by-op times (~20 ms records
     each timed right after the op before it in the layer: the power cap's controller has not caught up), and the
     card against the steady times
  B3 the layer in sequence against its ops with the GEMMs at their steady times (the duty gain)
  B4 the card trace's records (its fp8-layers sweep) of the shapes timed steady here, against the steady times

    python studies/fp8_lease_read.py [BUNDLE]     # default: calibration/h200x1-fp8lease61-2026-12-02
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-fp8lease61-2026-12-02"
CARD = ROOT / "models" / "gpu" / "h200-sxm.yaml"
BASE_TRACE = ROOT / "calibration" / "h200x1-gpu-2026-11-23" / "gpu-micro" / "gpu-micro" / "stdout.txt"
CARD_FP8_TRACE = ROOT / "calibration" / "h200x1-gpu-fp8-2026-11-23" / "gpu-micro" / "gpu-micro" / "stdout.txt"
PASS_PCT = 5.0


def _key(s) -> tuple:
    return (s.role, s.m, s.n, s.k, s.batch, s.condition)


def lease_ratios(new, old, condition: str, in_fit: bool) -> list[float]:
    """This lease's time over the old lease's for the fp8 layer GEMMs both traces timed in `condition`, the fit set's
    (in_fit) or the held-out ones."""
    from simcluster.fit.gpu import gemm_in_fit

    def layer(trace):
        return {_key(s): s for s in trace.gemm if s.dtype == "fp8" and s.role.startswith("layer-") and s.condition == condition
                and gemm_in_fit(s) == in_fit}
    a, b = layer(new), layer(old)
    return [a[k].time_s / b[k].time_s for k in sorted(a.keys() & b.keys())]


def spread(ratios: list[float]) -> str:
    if not ratios:
        return "no shapes in common"
    q = statistics.quantiles(ratios, n=10) if len(ratios) > 1 else [ratios[0]] * 9
    return f"median {statistics.median(ratios) - 1:+.1%}, 10-90% {q[0] - 1:+.1%} .. {q[-1] - 1:+.1%} ({len(ratios)} shapes)"


def refit_fp8(fp8_trace) -> float:
    """The card's fp8 efficiency refitted on `fp8_trace` (the card's base trace for everything else)."""
    from simcluster.fit.gpu import fit_gpu
    from simcluster.traces import gpu_micro

    return fit_gpu(gpu_micro.parse(BASE_TRACE), fp8_trace=fp8_trace).gemm_efficiency["fp8"]


def gemm_prices(gpu) -> list[tuple[str, float]]:
    from fp8_layer_read import layer_ops

    from simcluster.llm.ops import op_time_s

    ops, precision = layer_ops()
    return [(o.name, op_time_s(gpu, o, precision)) for o in ops if o.kind == "gemm"]


def read(bundle: Path) -> str:
    from simcluster.hardware.gpu import load_gpu
    from simcluster.traces import gpu_micro

    runs = bundle / "runs"
    docs = {r: json.loads((runs / f"fp8-layer-{r}.json").read_text()) for r in ("a", "b")}
    for r, d in docs.items():
        if not isinstance(d, dict) or not isinstance(d.get("ops"), list) or "sequence_s" not in d:
            raise SimclusterError(f"fp8-layer-{r}.json: expected fp8_layer_device.py's document (an 'ops' list and 'sequence_s')")
    new, old = gpu_micro.parse(runs / "gpu-micro-fp8.json"), gpu_micro.parse(CARD_FP8_TRACE)
    lines = [f"fp8lease61: {new.device_name}, torch {new.torch} (this lease) vs {old.torch} (2026-11-23 lease)",
             "Q1 lease spread, this lease / 2026-11-23 lease, fp8 layer GEMM times:"]
    for cond in ("back-to-back", "interleaved"):
        for in_fit in (True, False):
            lines.append(f"  {cond:12s} {'fit set ' if in_fit else 'held out'}: {spread(lease_ratios(new, old, cond, in_fit))}")
    card, _ = load_gpu(CARD)
    eff_card, eff_old, eff_new = card.gemm_efficiency["fp8"], refit_fp8(old), refit_fp8(new)
    lines.append(f"Q2 fp8 efficiency: card {eff_card:.4f}, refitted on the card's trace {eff_old:.4f} (a check: the same), "
                 f"on this lease's {eff_new:.4f} ({eff_new / eff_card - 1:+.1%})")
    refitted = replace(card, gemm_efficiency={**card.gemm_efficiency, "fp8": eff_new})
    gemm = {r: {o["name"]: o["measured_s"] for o in d["ops"] if o["kind"] == "gemm"} for r, d in docs.items()}
    measured = {name: (gemm["a"][name] + gemm["b"][name]) / 2 for name in gemm["a"]}
    priced_card, priced_new = dict(gemm_prices(card)), dict(gemm_prices(refitted))
    lines.append(f"  {'GEMM':16s} {'measured us':>12s} {'card':>8s} {'refitted':>9s}")
    for name, m in measured.items():
        lines.append(f"  {name:16s} {m * 1e6:12.1f} {priced_card[name] / m - 1:+8.1%} {priced_new[name] / m - 1:+9.1%}")
    total = sum(measured.values())
    err_new, err_card = sum(priced_new.values()) / total - 1, sum(priced_card.values()) / total - 1
    verdict = "PASS" if abs(err_new) * 100 <= PASS_PCT else "FAIL"
    lines.append(f"  sum: measured {total * 1e6:.0f} us; card {err_card:+.1%}; refitted on this lease {err_new:+.1%}: "
                 f"{verdict} (+-{PASS_PCT:.0f}%)")
    seq = {r: d["sequence_s"] for r, d in docs.items()}
    gsum = {r: sum(g.values()) for r, g in gemm.items()}
    lines.append(f"Q3 within the call, b / a: sequence {seq['b'] / seq['a'] - 1:+.1%} ({seq['a'] * 1e6:.0f} -> {seq['b'] * 1e6:.0f} us), "
                 f"GEMM sum {gsum['b'] / gsum['a'] - 1:+.1%}; SM clock under the sequence a {docs['a'].get('sequence_clock')}, "
                 f"b {docs['b'].get('sequence_clock')}")
    return "\n".join(lines)


def read_b(bundle: Path) -> str:
    from simcluster.hardware.gpu import load_gpu

    runs, card = bundle / "runs_b", load_gpu(CARD)[0]
    docs = {c: json.loads((runs / f"shapes-{c}.json").read_text()) for c in ("cool", "hot")}
    fp8 = {c: {r["role"]: r for r in d["gemm"] if r["dtype"] == "fp8" and r["condition"] == "back-to-back"} for c, d in docs.items()}
    hot = [fp8["hot"][role]["time_s"] / r["time_s"] for role, r in fp8["cool"].items()]
    lines = [f"B1 thermal history, fp8 back to back after 90 s / after 5 s of preheat: {spread(hot)}; temperature after "
             f"preheat {docs['cool']['clocks_after_preheat'].get('temperature_C')} / {docs['hot']['clocks_after_preheat'].get('temperature_C')} C"]
    layer = {r: {o["name"]: o["measured_s"] for o in json.loads((bundle / "runs" / f"fp8-layer-{r}.json").read_text())["ops"]
                 if o["kind"] == "gemm"} for r in ("a", "b")}
    steady = {role.removeprefix("gpt3-"): r for role, r in fp8["cool"].items() if role.startswith("gpt3-")}
    lines.append(f"B2 {'GEMM':16s} {'steady us':>10s} {'MHz':>7s} {'op-by-op':>9s} {'card':>8s}   (op-by-op and card against steady)")
    for name, r in steady.items():
        m = (layer["a"][name] + layer["b"][name]) / 2
        p = card.gemm_time_s(r["m"], r["n"], r["k"], "fp8")
        lines.append(f"   {name:16s} {r['time_s'] * 1e6:10.1f} {r.get('sm_MHz') or 0:7.0f} {m / r['time_s'] - 1:+9.1%} {p / r['time_s'] - 1:+8.1%}")
    s_sum = sum(r["time_s"] for r in steady.values())
    o_sum = sum((layer["a"][n] + layer["b"][n]) / 2 for n in steady)
    c_sum = sum(card.gemm_time_s(r["m"], r["n"], r["k"], "fp8") for r in steady.values())
    lines.append(f"   sum: steady {s_sum * 1e6:.0f} us; op-by-op {o_sum / s_sum - 1:+.1%}; card {c_sum / s_sum - 1:+.1%}")
    for r in ("a", "b"):   # the layer in sequence against its ops with the GEMMs steady (fp8_layer_read's accounting)
        doc = json.loads((bundle / "runs" / f"fp8-layer-{r}.json").read_text())
        fwd_attn = next(o["measured_s"] for o in doc["ops"] if o["kind"] == "attention" and not o["backward"])
        others = sum(o["measured_s"] for o in doc["ops"] if o["kind"] != "gemm") - fwd_attn
        seq = doc["sequence_s"] - fwd_attn
        lines.append(f"B3 layer {r}: in sequence {seq * 1e6:.0f} us; its ops with the GEMMs steady {(s_sum + others) * 1e6:.0f} us "
                     f"(sequence {seq / (s_sum + others) - 1:+.1%})")
    old = json.loads(CARD_FP8_TRACE.read_text())["gemm"]
    for role, r in fp8["cool"].items():   # B4: the card trace's short records of a shape against its steady record here
        same = [o["time_s"] for o in old if o["dtype"] == "fp8" and o["condition"] == "back-to-back"
                and (o["m"], o["n"], o["k"]) == (r["m"], r["n"], r["k"]) and o["role"].startswith("layer-")]
        if same and not role.startswith("gpt3-"):
            lines.append(f"B4 {role:20s} {r['m']}x{r['n']}x{r['k']}: the card's trace (~10-110 ms records in its sweep) "
                         f"{statistics.median(same) / r['time_s'] - 1:+.1%} against steady")
    return "\n".join(lines)


def main() -> None:
    ap = ArgumentParser(prog="fp8_lease_read.py", description=__doc__.splitlines()[0])
    ap.add_argument("bundle", nargs="?", default=str(BUNDLE))
    args = ap.parse_args()
    try:
        print(read(Path(args.bundle)))
        if (Path(args.bundle) / "runs_b").is_dir():
            print(read_b(Path(args.bundle)))
    except (OSError, ValueError, KeyError, TypeError, SimclusterError) as e:   # one line, never a traceback
        print(f"fp8_lease_read.py: {args.bundle}: {str(e).splitlines()[0]}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
