"""Fit a GPU card's `clock:` block (hardware/gpu_clock.py) from gpu-micro's `duty` section, and check it held out.

    python -m simcluster.fit.gpu_clock DUTY_TRACE [--interleaved GPU_MICRO_TRACE] [--card CARD -o OUT] [--reference-duty C,M]

From the duty sweep (runner/gpu_duty.py), fitted on the FIRST GEMM shape's points only (the others held out):
  idle_power     the idle record's median power (measured)
  memory_power   median power of the copies-alone points (duty 0) minus idle (measured)
  power_cap      median power of the points whose clock is below max (measured)
  compute_power, exponent   least squares: each point's clock (capped points) and power (the others) predicted
                 from its measured duties (copy filler: memory; sleep filler: idle)
  clock_share    least squares: the GEMM time of each point against its measured clock
  max_clock      the highest clock sampled on the first shape's points
Held out: every other shape's clock at each of its points, its GEMM time at every point but its highest-duty one
(predicted from that point's time alone, so the base point itself is no prediction), and with `--interleaved`,
gpu-micro's interleaved GEMM times predicted from the back-to-back ones and vice versa.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from scipy.optimize import least_squares

from simcluster.errors import CalibrationError, SimclusterError, TraceFormatError
from simcluster.hardware.gpu_clock import EXPONENTS, ClockParams
from simcluster.script_args import ArgumentParser
from simcluster.traces.gpu_micro import load_json

POINT_KEYS = ("m", "n", "k", "filler", "duty", "gemm_s", "filler_s", "bytes_per_cycle", "sm_MHz", "power_W")
INTERLEAVED_DUTY = (0.5, 0.5)   # gpu-micro's interleaved condition: copies lasting the GEMM's back-to-back time


@dataclass(frozen=True)
class DutyPoint:
    shape: tuple[int, int, int]
    filler: str          # "copy" (memory-bound) or "sleep" (idle)
    duty: float          # GEMM share of the window, measured
    gemm_s: float
    clock_Hz: float
    power_W: float

    @property
    def memory_duty(self) -> float:
        return 1.0 - self.duty if self.filler == "copy" else 0.0


def duty_points(path) -> tuple[list[DutyPoint], float, str] | None:
    """(points, idle power W, device name) of a gpu-micro trace's duty section; None when it has none (no `duty` key,
    or the empty one gpu-micro writes when the section did not run). A malformed section: TraceFormatError naming the
    file; points without nvidia-smi samples (no clock or power to fit): CalibrationError naming the file."""
    doc = load_json(path, "gpu-micro")
    duty = doc.get("duty")
    if duty is None or duty == {}:
        return None
    if not isinstance(duty, dict) or not isinstance(duty.get("points"), list) or not duty["points"]:
        raise TraceFormatError("the 'duty' section has no list of points", where=str(path))
    out = []
    for i, r in enumerate(duty["points"]):
        if isinstance(r, dict) and r.get("clock_samples") == 0 and "sm_MHz" not in r:
            raise CalibrationError(f"duty.points[{i}]: no nvidia-smi samples in its window (no clock or power measured)",
                                   where=str(path))
        missing = [k for k in POINT_KEYS if not isinstance(r, dict) or k not in r]
        if missing or r["filler"] not in ("copy", "sleep"):
            raise TraceFormatError(f"duty.points[{i}]: missing '{missing[0]}'" if missing else f"duty.points[{i}]: filler "
                                   f"{r['filler']!r} is not copy or sleep", where=str(path))
        try:
            out.append(DutyPoint((int(r["m"]), int(r["n"]), int(r["k"])), r["filler"], float(r["duty"]), float(r["gemm_s"]),
                                 float(r["sm_MHz"]) * 1e6, float(r["power_W"])))
        except (TypeError, ValueError):
            raise TraceFormatError(f"duty.points[{i}]: a value of the wrong type", where=str(path)) from None
    idle = duty.get("idle", {}).get("power_W")
    if not isinstance(idle, (int, float)) or idle <= 0:
        raise TraceFormatError("duty.idle has no power_W", where=str(path))
    return out, float(idle), str(doc.get("device", {}).get("name", "gpu"))


def fit_clock(points: list[DutyPoint], idle_W: float, reference_duty=(1.0, 0.0), source: str = "") -> ClockParams:
    """ClockParams from the first shape's points (module docstring), referenced to the clock of `reference_duty`."""
    fit = [p for p in points if p.shape == points[0].shape]
    f_max = max(p.clock_Hz for p in fit)
    alone = [p.power_W - idle_W for p in fit if p.duty == 0 and p.filler == "copy"]
    capped = [p for p in fit if p.duty > 0 and p.clock_Hz < f_max - 15e6]
    gemm = [p for p in fit if p.duty > 0]
    if not alone or len(capped) < 2 or len(gemm) < 4:
        raise CalibrationError(f"duty sweep: {len(alone)} copies-alone, {len(capped)} capped, {len(gemm)} GEMM points; "
                               "need >= 1, 2, 4")
    memory, cap = statistics.median(alone), statistics.median(p.power_W for p in capped)
    if not 0 <= memory < cap - idle_W:
        raise CalibrationError(f"duty sweep: copies alone draw {memory:.1f} W above idle ({idle_W:.1f} W), not within "
                               f"0 and the cap ({cap:.1f} W) minus idle")

    def params(x, share=1.0):
        return ClockParams(f_max, f_max, cap, idle_W, x[0], memory, x[1], share, (1.0, 0.0), source)

    def resid(x):
        c = params(x)
        out = []
        for p in gemm:
            f = c.clock_Hz(p.duty, p.memory_duty)
            out.append(np.log(f / p.clock_Hz) if p in capped else (c.power_W(p.duty, p.memory_duty, f) - p.power_W) / p.power_W)
        return np.array(out)
    x = least_squares(resid, [600.0, 1.0], bounds=([10.0, EXPONENTS[0]], [5000.0, EXPONENTS[1]])).x
    t, f = np.array([p.gemm_s for p in gemm]), np.array([p.clock_Hz for p in gemm])
    y = least_squares(lambda y: np.log(y[0] * (y[1] * f_max / f + 1 - y[1]) / t), [t.min(), 0.5], bounds=([t.min() / 3, 0.0], [t.max() * 3, 1.0])).x
    c = params(x, float(y[1]))
    ref = c.clock_Hz(*reference_duty)
    return ClockParams(f_max, ref, cap, idle_W, float(x[0]), memory, float(x[1]), float(y[1]), tuple(reference_duty), source)


def held_out_rows(c: ClockParams, points: list[DutyPoint]) -> list[dict]:
    """Every GEMM point of the shapes after the first: clock from its duties; GEMM time from that shape's highest-duty
    (base) point's time, None at the base point itself (its own time: no prediction)."""
    rows = []
    for shape in dict.fromkeys(p.shape for p in points[1:] if p.shape != points[0].shape):
        pts = [p for p in points if p.shape == shape and p.duty > 0]
        base = max(pts, key=lambda p: p.duty)
        f_base = c.clock_Hz(base.duty, base.memory_duty)
        for p in pts:
            f = c.clock_Hz(p.duty, p.memory_duty)
            rows.append({"shape": shape, "filler": p.filler, "duty": p.duty, "clock_MHz": (f / 1e6, p.clock_Hz / 1e6),
                         "gemm_us": None if p is base else (base.gemm_s * c.time_scale(f, f_base) * 1e6, p.gemm_s * 1e6)})
    return rows


def interleaved_rows(c: ClockParams, trace_path, min_s: float = 50e-6) -> list[dict]:
    """gpu-micro's bf16 GEMMs: interleaved time predicted from back to back (duty 1) and back to back from interleaved."""
    from simcluster.traces import gpu_micro

    gemm = [s for s in gpu_micro.parse(trace_path).gemm if s.dtype == "bf16"]
    b2b = {(s.m, s.n, s.k): s.time_s for s in gemm if s.condition == "back-to-back"}
    f1, fi = c.clock_Hz(1.0, 0.0), c.clock_Hz(*INTERLEAVED_DUTY)
    rows = []
    for s in gemm:
        t0 = b2b.get((s.m, s.n, s.k))
        if s.condition == "interleaved" and t0 and min(t0, s.time_s) >= min_s:
            rows.append({"shape": (s.m, s.n, s.k), "b2b_us": t0 * 1e6, "int_us": s.time_s * 1e6,
                         "int_pred_us": t0 * c.time_scale(fi, f1) * 1e6, "b2b_pred_us": s.time_s * c.time_scale(f1, fi) * 1e6})
    return rows


def _mean_abs(pairs) -> tuple[float, float]:
    errs = [abs(p / m - 1) * 100 for p, m in pairs]
    return (statistics.mean(errs), max(errs)) if errs else (float("nan"), float("nan"))


def _pct(pairs) -> str:
    mean, worst = _mean_abs(pairs)
    return f"{mean:.1f} / {worst:.1f}%"


def reference_duty(value: str) -> tuple[float, float]:
    """An argparse type: "C,M", the compute and memory duty (each in [0, 1], together at most 1)."""
    parts = value.split(",")
    try:
        duty = tuple(float(x) for x in parts)
    except ValueError:
        duty = ()
    if len(duty) != 2 or not all(0.0 <= d <= 1.0 for d in duty) or sum(duty) > 1.0:
        raise argparse.ArgumentTypeError(f"{value!r}: expected C,M: two numbers from 0 to 1 that sum to at most 1 (e.g. 1,0)")
    return duty


def _card_with_clock(card_path: str, out: str, c: ClockParams) -> None:
    """Write the gpu card `card_path` (read strictly) with `c` as its clock block to `out` (an existing folder)."""
    from simcluster.files import OutputError, write_document
    from simcluster.hardware.gpu import gpu_params, load_gpu
    from simcluster.hardware.gpu_clock import clock_yaml

    card = load_gpu(card_path)[1]
    card["params"]["clock"] = clock_yaml(c)
    gpu_params(card, card_path)
    if not Path(out).resolve().parent.is_dir():
        raise OutputError("cannot write: no such folder", where=str(Path(out).parent))
    from simcluster import output

    write_document(out, yaml.safe_dump(output.check(card, str(out)), sort_keys=False, width=160))


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(prog="python -m simcluster.fit.gpu_clock", description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="a gpu-micro stdout.txt with a duty section")
    ap.add_argument("--interleaved", help="a gpu-micro trace with both GEMM conditions (held-out check (a))")
    ap.add_argument("--card", help="a gpu card to write with this clock block (-o)")
    ap.add_argument("--reference-duty", default=(1.0, 0.0), type=reference_duty,
                    help="C,M: compute,memory duty the card's GEMM curves were fitted in (default 1,0)")
    ap.add_argument("-o", "--out", help="where to write the card")
    args = ap.parse_args(argv)
    if bool(args.card) != bool(args.out):
        ap.error("--card and -o go together (the card to add the clock block to, and where to write it)")
    try:
        if args.card:
            from simcluster.hardware.gpu import load_gpu

            load_gpu(args.card)          # a bad card is refused before the fit
        found = duty_points(args.trace)
        if found is None:
            raise TraceFormatError("no 'duty' section (gpu-micro --sections duty, on a GPU)", where=args.trace)
        points, idle, device = found
        ref = args.reference_duty
        c = fit_clock(points, idle, ref, f"fitted by simcluster.fit.gpu_clock on the first shape of {args.trace} ({device})")
        print(f"{device}: cap {c.power_cap_W:.1f} W, idle {c.idle_W:.1f} W, compute {c.compute_W:.1f} W x (f/{c.max_clock_Hz / 1e6:.0f} MHz)"
              f"^{c.exponent:.3f}, memory {c.memory_W:.1f} W, clock share {c.clock_share:.3f}; clock at duty 1: "
              f"{c.clock_Hz(1, 0) / 1e6:.0f} MHz, at 0.5 + 0.5 copies: {c.clock_Hz(0.5, 0.5) / 1e6:.0f} MHz; reference "
              f"{c.reference_clock_Hz / 1e6:.0f} MHz at duty {ref}")
        rows = held_out_rows(c, points)
        for r in rows:
            gemm = f"{r['gemm_us'][0]:.1f} / {r['gemm_us'][1]:.1f} us" if r["gemm_us"] else "the base of the others"
            print(f"  held out {r['shape']} {r['filler']:>5} duty {r['duty']:.2f}: clock {r['clock_MHz'][0]:.0f} / {r['clock_MHz'][1]:.0f} MHz, "
                  f"GEMM {gemm} (predicted / measured)")
        timed = [r["gemm_us"] for r in rows if r["gemm_us"]]
        print(f"held out: clock {_pct(r['clock_MHz'] for r in rows)} ({len(rows)} points), GEMM time {_pct(timed)} "
              f"({len(timed)} points, the base point left out) (mean / max |error|)")
        if args.interleaved:
            rows = interleaved_rows(c, args.interleaved)
            print(f"gpu-micro bf16 GEMMs >= 50 us ({len(rows)}): interleaved from back to back "
                  f"{_pct((r['int_pred_us'], r['int_us']) for r in rows)} (no clock term: {_pct((r['b2b_us'], r['int_us']) for r in rows)}); "
                  f"back to back from interleaved {_pct((r['b2b_pred_us'], r['b2b_us']) for r in rows)}")
        if args.card:
            _card_with_clock(args.card, args.out, c)
    except SimclusterError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.filename or args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
