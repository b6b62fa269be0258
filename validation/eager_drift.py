"""Issue 44, session 42: do host-bound eager TP steps slow down across a device call? A registered 2 x H200 set
(calibration/h200x2-eager-drift-2026-11-30): one shape in repeated processes from the start of a fresh call, with the
machine's state and a pure-CPU probe between them.

    python validation/eager_drift.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/eager_drift.py [calibration/BUNDLE]                            # after: read-out and verdicts

Two leases of the tpnoise set (calibration/h200x2-eager-tpnoise-2026-11-30 and -lease2-) ran the same 2b TP shapes in
5-6 processes in a row and both slowed across the call (process geometric means 399 -> 538 ms and 344 -> 402 ms), each
after another set had run on the machine; rule N of validation/eager_tpnoise.py counted it as process noise. PROCESSES:
`simcluster.runner.llm_step --mode tp` (torchrun, 2 ranks, 5 warm-up, 10 timed steps) of the 2b preset at 2048:2,
p01, p02, ... while the budget lasts, each start on the call's clock in runs/starts.txt; before each, runs/state-NAME.txt
(CPU MHz, loadavg, free memory, top processes, nvidia-smi) and runs/probe-NAME.json (calibration/BUNDLE/probe.py: a
fixed Python loop and a fixed run of small CPU torch ops, 5 repeats each). Registered: today's model's step for the
shape (heldout/eager_regimes.regime_predict, the product's host fits) and the rules D, P, T, M (read_out). No fitting
of the model after; the rows do not enter the error bands (one shape repeated in one call).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.eager import process_document  # noqa: E402
from simcluster.heldout.registration import print_verdicts, read_run_set, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-eager-drift-2026-11-30"
SHAPE = ("2b", 2048, 2)
JUDGE = {"band_pct": 5.0, "level": 0.90, "min_points": 4, "target_pct": 8.0}
RULES = {
    "D": "fit log(rank 0's median step) = a + b t by least squares over the processes, t their start on the call's "
         "clock (runs/starts.txt, s); change = exp(b (t_last - t_first)) - 1 with its 90% interval (Student t, n - 2 "
         "dof); DRIFT if change > +band_pct and the interval's low end > 0; FASTER if change < -band_pct and its high "
         "end < 0; FLAT if the interval lies inside +-band_pct; else UNDECIDED; fewer than min_points processes: NO DATA",
    "P": "the same fit and words for the median of probe.py's pure-Python loop (5 repeats) over the probes taken before "
         "each process and at the end, t the probe's own clock: does the host's pace drift without the GPU?",
    "T": "the same for the median of probe.py's small CPU torch ops (the dispatcher, without the GPU)",
    "M": "error = predicted / measured - 1 per process; reported: mean |error| (within target_pct or not), and the "
         "error of D's fitted line at the first and the last start (the model against the call's start and end)",
    "measured": "rank 0's median step of each process (5 warm-up, 10 timed steps); the state files (CPU MHz, loadavg, "
                "free memory, GPU SM clock, temperature, power) are reported with D's fit, without a verdict",
}


def predicted() -> dict:
    from simcluster.heldout.eager_regimes import registered_row

    return registered_row(*SHAPE, "tp")


def register(path: Path) -> None:
    commit = registering_commit(ROOT)
    row = predicted()
    doc = {"registered_at_commit": commit, "script": "validation/eager_drift.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml",
                           "collective_card": "models/collective/h200x2-primitives.yaml",
                           "host": {"h200": "calibration/h200x2-llm-host-2026-11-23"}},
           "judge": JUDGE, "rules": RULES, "rows": [row]}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 42); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    print(f"{row['preset']} {row['seq']}:{row['micro_batch']}  {row['predicted']['step_ms']:8.2f} ms  host share "
          f"{row['predicted']['host_share']}")
    print(f"registered in {path} (model at {commit[:10]})")


def trend(points: list[tuple[float, float]], judge: dict) -> dict | None:
    """Least squares of log(value) on t (s): the fitted change first to last start, its interval and the word."""
    from scipy.stats import t as student

    n = len(points)
    if n < max(int(judge["min_points"]), 3):
        return None
    ts, ys = [p[0] for p in points], [math.log(p[1]) for p in points]
    tbar, ybar = statistics.mean(ts), statistics.mean(ys)
    sxx = sum((t - tbar) ** 2 for t in ts)
    if sxx <= 0:
        return None
    b = sum((t - tbar) * (y - ybar) for t, y in zip(ts, ys, strict=True)) / sxx
    a = ybar - b * tbar
    resid = math.sqrt(sum((y - a - b * t) ** 2 for t, y in zip(ts, ys, strict=True)) / (n - 2))
    span = max(ts) - min(ts)
    half = student.ppf((1 + float(judge["level"])) / 2, n - 2) * resid / math.sqrt(sxx) * span
    change, lo, hi = (math.expm1(x) for x in (b * span, b * span - half, b * span + half))
    band = float(judge["band_pct"]) / 100
    word = ("DRIFT" if change > band and lo > 0 else "FASTER" if change < -band and hi < 0
            else "FLAT" if -band <= lo and hi <= band else "UNDECIDED")
    return {"word": word, "change": change, "lo": lo, "hi": hi, "n": n, "span_s": span, "resid_sd": resid,
            "first": math.exp(a + b * min(ts)), "last": math.exp(a + b * max(ts))}


def said(t: dict | None, what: str, judge: dict) -> str:
    if t is None:
        return f"NO DATA: fewer than {int(judge['min_points'])} {what}"
    return (f"{t['word']}: {t['change']:+.1%} over {t['span_s']:.0f} s ({t['n']} {what}; 90% interval {t['lo']:+.1%}.."
            f"{t['hi']:+.1%}; band +-{float(judge['band_pct']):.0f}%; residual sd {t['resid_sd']:.3f})")


def read_starts(bundle: Path) -> dict[str, float]:
    path = bundle / "runs" / "starts.txt"
    try:
        starts = {}
        for line in path.read_text().splitlines():
            if line.strip():
                name, ms = line.split()
                starts[name] = int(ms) / 1e3
        return starts
    except FileNotFoundError:
        raise SimclusterError(f"{path}: missing (the device script writes each process's start there)") from None
    except ValueError:
        raise SimclusterError(f"{path}: not 'NAME MS' lines ({line!r})") from None


def read_state(path: Path) -> dict:
    """The numbers of one runs/state-NAME.txt: cpu_mhz (mean over cores), load1, avail_gib, gpu rows; {} if absent."""
    if not path.is_file():
        return {}
    out, section, gpus, mhz = {}, "", [], []
    for line in path.read_text(errors="replace").splitlines():
        f = line.split()
        if line.startswith("##"):
            section = line
        elif f[:1] == ["loadavg"] and len(f) > 1:
            out["load1"] = float(f[1])
        elif line.lower().startswith("cpu mhz") and ":" in line:
            mhz.append(float(line.split(":")[1]))
        elif f[:1] == ["Mem:"] and len(f) >= 7:
            out["avail_gib"] = int(f[6]) / 2 ** 30
        elif section.startswith("## nvidia-smi index, clocks.sm"):
            try:
                idx, sm, _mem, temp, power = (float(x) for x in line.split(",")[:5])
                gpus.append({"gpu": int(idx), "sm_mhz": sm, "temp_c": temp, "power_w": power})
            except ValueError:
                pass
    if mhz:
        out["cpu_mhz"] = statistics.mean(mhz)
    if gpus:
        out["gpus"] = gpus
    return out


def read_probes(bundle: Path) -> tuple[list[dict], list[str]]:
    probes, left = [], []
    for path in sorted((bundle / "runs").glob("probe-*.json")):
        try:
            doc = json.loads(path.read_text())
            t = float(doc["t_ms"]) / 1e3
            loop = statistics.median(doc["python_loop_s"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, statistics.StatisticsError) as exc:
            left.append(f"{path.name}: not a probe document ({type(exc).__name__})")
            continue
        ops = doc.get("torch_cpu_s")
        probes.append({"name": path.stem[len("probe-"):], "t_s": t, "loop_s": loop,
                       "ops_s": statistics.median(ops) if isinstance(ops, list) and ops else None})
    return sorted(probes, key=lambda p: p["t_s"]), left


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle)
    try:
        judge = {k: float(reg["judge"][k]) for k in JUDGE}
        row = reg["rows"][0]
        key = (row["preset"], int(row["seq"]), int(row["micro_batch"]))
        pred_s = float(row["predicted"]["step_ms"]) / 1e3
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    procs, left = [], []
    for name, t in sorted(read_starts(bundle).items(), key=lambda kv: kv[1]):
        doc, why = process_document(bundle / "runs" / f"{name}.json", "tp", 2, key[0])
        if doc is None:
            left.append(f"{name}: {why}")
            continue
        try:   # a partial document (an ok shape with a null seq / micro_batch): the process is left out, in one line
            med = [s.get("median_step_s") for s in doc.get("shapes", []) if s.get("status") == "ok"
                   and (int(s.get("seq", 0)), int(s.get("micro_batch", 0))) == key[1:]]
        except (TypeError, ValueError) as exc:
            left.append(f"{name}: a shape without a usable seq / micro_batch ({type(exc).__name__}: {exc}; partial document)")
            continue
        if not med or not isinstance(med[0], (int, float)) or med[0] <= 0:
            left.append(f"{name}: no timed {key[1]}:{key[2]}")
            continue
        procs.append({"name": name, "t_s": t, "step_s": float(med[0]), "state": read_state(bundle / "runs" / f"state-{name}.txt")})
    probes, bad = read_probes(bundle)
    left += bad
    d = trend([(p["t_s"], p["step_s"]) for p in procs], judge)
    verdicts = {"D": "step " + said(d, "processes", judge),
                "P": "Python loop " + said(trend([(p["t_s"], p["loop_s"]) for p in probes], judge), "probes", judge),
                "T": "CPU torch ops " + said(trend([(p["t_s"], p["ops_s"]) for p in probes if p["ops_s"]], judge),
                                             "probes", judge)}
    if procs:
        errs = [pred_s / p["step_s"] - 1 for p in procs]
        mean_abs = statistics.mean(abs(e) for e in errs)
        ends = (f"; at the fitted first start {pred_s / d['first'] - 1:+.1%}, last {pred_s / d['last'] - 1:+.1%}"
                if d else "")
        verdicts["M"] = (f"model {pred_s * 1e3:.1f} ms {'within' if mean_abs <= judge['target_pct'] / 100 else 'not within'} "
                         f"the target: mean |error| {mean_abs:.1%} over {len(errs)} processes, target "
                         f"{judge['target_pct']:.0f}%{ends}")
    else:
        verdicts["M"] = "NO DATA: no process ran"
    state = {}
    for what, get in (("cpu_mhz", lambda s: s.get("cpu_mhz")), ("load1", lambda s: s.get("load1")),
                      ("gpu0_sm_mhz", lambda s: (s.get("gpus") or [{}])[0].get("sm_mhz")),
                      ("gpu0_temp_c", lambda s: (s.get("gpus") or [{}])[0].get("temp_c"))):
        pts = [(p["t_s"], get(p["state"])) for p in procs]
        pts = [(t, v) for t, v in pts if isinstance(v, (int, float)) and v > 0]
        state[what] = trend(pts, judge)
    return {"processes": procs, "probes": probes, "left": left, "verdicts": verdicts, "state": state}


def show(result: dict) -> None:
    print("process  start_s  step_ms  cpu_MHz  load1  avail_GiB  gpu0_SM_MHz  gpu0_C  gpu0_W")
    for p in result["processes"]:
        s, g = p["state"], (p["state"].get("gpus") or [{}])[0]
        cells = [s.get("cpu_mhz"), s.get("load1"), s.get("avail_gib"), g.get("sm_mhz"), g.get("temp_c"), g.get("power_w")]
        print(f"{p['name']:8} {p['t_s']:7.1f} {p['step_s'] * 1e3:8.1f} "
              + " ".join("      -" if c is None else f"{c:8.1f}" for c in cells))
    for p in result["probes"]:
        ops = "-" if p["ops_s"] is None else f"{p['ops_s'] * 1e3:.1f}"
        print(f"probe {p['name']:6} {p['t_s']:7.1f} s  Python loop {p['loop_s'] * 1e3:.1f} ms  CPU torch ops {ops} ms")
    print("".join(f"left out: {line}\n" for line in result["left"]), end="")
    for what, t in result["state"].items():
        if t:
            print(f"state {what}: {t['change']:+.1%} over {t['span_s']:.0f} s (90% {t['lo']:+.1%}..{t['hi']:+.1%}; no verdict)")
    print_verdicts(result["verdicts"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
