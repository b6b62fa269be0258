"""The one-GPU op-policy checkpointing regime (single+sac-op): model or noise? (issue 44, session 42, engineer sacop; a
diagnostic, not a test).

Reads every registered one-GPU op row (heldout/eager_registered.held_out_rows, recompute `op`) and every op launch
behind them (runs/*.json of the sets, the sac set's profiled-diagnostic re-runs, eager-today's two op processes), and
prints:
  1. per row: set, shape, measured, registered and today's prediction (the row's own host folder, and FLAG_HOSTS'),
     the flag's host share, and the model's GPU compute / exposed host split;
  2. per launch: its timed steps' min, lower quartile and median against today's model (FLAG_HOSTS), the number of
     "slow" steps (> 10% above the launch's fastest) and the host issue time (the runner's per-step CPU issue) at the
     fastest and the median step;
  3. the spread: each (set, shape)'s launch-to-launch spread, the rows' error by set (the lease), and a noise floor:
     the mean |error| a model exact on every lease's mean would read, from the process term (pooled within-shape
     launch SD, each row's median over its launches) and the lease term (the sets' mean errors, net of the process
     term's share of them).
    python studies/sacop_spread.py
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.heldout import eager_registered as er  # noqa: E402

CAL = ROOT / "calibration"
LAUNCH_GLOBS = ("h200x1-llm-sac-2026-11-29/runs/*-op.json", "h200x1-llm-sac-2026-11-29/profiled-diagnostic/*-op.json",
                "h200x1-llm-compile2-2026-11-29/runs/op-*.json", "h200x1-llm-ophost2-2026-11-29/runs/op-*.json",
                "h200x1-llm-lease3-2026-11-29/runs/op-*.json", "h200x2-eager-today-2026-11-30/runs/op-*.json")
LABEL = re.compile(r"(\S+) single ac op seq (\d+) mb (\d+)")
SLOW = 1.10   # a step this much above its launch's fastest counts as slow


def flag(preset: str, seq: int, mb: int):
    return er.flag_hosts_predict(preset, None, seq, mb, False, ("op", 1))


def rows() -> list[dict]:
    out = []
    for r in er.held_out_rows():
        if r["recompute"] != "op":
            continue
        p, s, mb = LABEL.match(r["label"]).groups()
        out.append(r | {"preset": p, "seq": int(s), "mb": int(mb), "set": r["bundle"].replace("h200x1-llm-", "")[:-11]})
    return out


def launches() -> list[dict]:
    out = []
    for pattern in LAUNCH_GLOBS:
        for path in sorted(CAL.glob(pattern)):
            doc = json.loads(path.read_text())
            if doc.get("ac_mode") != "op":
                continue
            shape = doc["shapes"][0]
            if shape.get("status") != "ok":
                continue
            steps, host = shape["step_times_s"], shape.get("host_issue_s") or []
            order = sorted(range(len(steps)), key=steps.__getitem__)
            out.append({"where": str(path.relative_to(CAL)), "set": pattern.split("/")[0].replace("h200x1-llm-", "")
                        .replace("h200x2-eager-", "")[:-11] + ("-prof" if "profiled" in pattern else ""),
                        "preset": doc["model"]["preset"], "seq": shape["seq"], "mb": shape["micro_batch"],
                        "steps": sorted(steps), "median": statistics.median(steps),
                        "host_fast": host[order[0]] if host else math.nan,
                        "host_median": statistics.median(host) if host else math.nan})
    return out


OTHER_GLOBS = ("h200x1-llm-sac-2026-11-29/runs/*.json", "h200x1-llm-ac6a-2026-11-29/runs/*.json",
               "h200x1-llm-eager7-2026-11-29/runs/*.json", "h200x1-llm-compile2-2026-11-29/runs/compile-*.json",
               "h200x1-llm-lease3-2026-11-29/runs/compile-*.json")


def other_modes() -> dict[str, list[int]]:
    """{checkpointing mode (compile: `compile`): [slow steps, timed steps, launches, launches half or more slow]}."""
    out = defaultdict(lambda: [0, 0, 0, 0])
    for pattern in OTHER_GLOBS:
        for path in sorted(CAL.glob(pattern)):
            doc = json.loads(path.read_text())
            mode = doc.get("ac_mode") or ("compile" if doc.get("compile") else "none")
            for shape in doc.get("shapes", []):
                t = sorted(shape.get("step_times_s") or [])
                if t:
                    slow = sum(x > SLOW * t[0] for x in t)
                    acc = out[mode]
                    acc[0], acc[1], acc[2], acc[3] = acc[0] + slow, acc[1] + len(t), acc[2] + 1, acc[3] + (2 * slow >= len(t))
    return dict(out)


def pct(pred: float, meas: float) -> str:
    return f"{100 * (pred / meas - 1):+6.1f}%"


def main() -> int:
    rs = rows()
    print("1. the registered rows (error = prediction / measured - 1; ms)")
    print(f"{'set':10s} {'shape':14s} {'measured':>8s} {'registered':>17s} {'today (own host)':>17s} "
          f"{'today (FLAG_HOSTS)':>18s} {'share':>5s} {'GPU':>6s} {'host':>6s}")
    for r in rs:
        f = flag(r["preset"], r["seq"], r["mb"])
        m = r["measured_s"]
        print(f"{r['set']:10s} {r['preset'] + ' ' + str(r['seq']) + 'x' + str(r['mb']):14s} {m * 1e3:8.1f} "
              f"{r['predicted_s'] * 1e3:8.1f} {pct(r['predicted_s'], m)} {r['today_s'] * 1e3:8.1f} {pct(r['today_s'], m)} "
              f"{f.step_time_s * 1e3:9.1f} {pct(f.step_time_s, m)} {f.host_share:5.2f} {f.breakdown['compute'] * 1e3:6.1f} "
              f"{f.breakdown['other'] * 1e3:6.1f}")
    for key, name in (("today_s", "today (own host)"), ("predicted_s", "registered")):
        errs = [r[key] / r["measured_s"] - 1 for r in rs]
        print(f"   {name}: {len(errs)} rows, mean |error| {100 * statistics.mean(map(abs, errs)):.2f}%, "
              f"bias {100 * statistics.mean(errs):+.2f}%")

    ls = launches()
    print(f"\n2. every op launch against today's model (FLAG_HOSTS); slow = a step > {SLOW:.2f} x the launch's fastest")
    print(f"{'launch':66s} {'model':>6s} {'min':>6s} {'err':>7s} {'p25':>6s} {'err':>7s} {'median':>6s} {'err':>7s} "
          f"{'slow':>5s} {'host@min':>8s} {'host med':>8s}")
    for x in ls:
        pred, t = flag(x["preset"], x["seq"], x["mb"]).step_time_s, x["steps"]
        p25 = t[len(t) // 4]
        slow = sum(s > SLOW * t[0] for s in t)
        print(f"{x['where']:66s} {pred * 1e3:6.1f} {t[0] * 1e3:6.1f} {pct(pred, t[0])} {p25 * 1e3:6.1f} {pct(pred, p25)} "
              f"{x['median'] * 1e3:6.1f} {pct(pred, x['median'])} {slow:2d}/{len(t):<2d} {x['host_fast'] * 1e3:8.1f} "
              f"{x['host_median'] * 1e3:8.1f}")
    bimodal = sum(sum(s > SLOW * x["steps"][0] for s in x["steps"]) * 2 >= len(x["steps"]) for x in ls)
    print(f"   {bimodal} of {len(ls)} launches have half or more of their timed steps slow")

    print("\n3. the spread")
    by_shape = defaultdict(list)
    for x in ls:
        if not x["set"].endswith("-prof"):
            by_shape[(x["set"], x["preset"], x["seq"], x["mb"])].append(x["median"])
    squares, dof = 0.0, 0
    for key, meds in by_shape.items():
        if len(meds) >= 2:
            mean = statistics.mean(map(math.log, meds))
            squares += sum((math.log(m) - mean) ** 2 for m in meds)
            dof += len(meds) - 1
            print(f"   {key[0]:10s} {key[1]:5s} {key[2]}x{key[3]:<3d} launches {' / '.join(f'{m * 1e3:.1f}' for m in meds)} ms: "
                  f"spread {100 * (max(meds) / min(meds) - 1):.1f}%")
    sd_p = math.sqrt(squares / dof)
    print(f"   process term: pooled within-shape SD of a launch's median step {100 * sd_p:.1f}% ({dof} degrees of freedom)")
    by_set = defaultdict(list)
    for r in rs:
        by_set[r["set"]].append(math.log(r["today_s"] / r["measured_s"]))
    # a row's process noise: one launch (the sac set) sd_p, the median of three 0.67 sd_p (normal approximation)
    row_var = {s: sd_p ** 2 * (1.0 if s == "sac" else 0.67 ** 2) for s in by_set}
    between = statistics.pvariance([statistics.mean(v) for v in by_set.values()])
    net = max(between - statistics.mean(row_var[s] / len(v) for s, v in by_set.items()), 0.0)
    for s, v in by_set.items():
        print(f"   {s:10s} {len(v)} rows, mean error {100 * statistics.mean(v):+6.1f}% (log), "
              f"{' / '.join(f'{100 * e:+.1f}' for e in v)}")
    floor = statistics.mean(math.sqrt(2 / math.pi) * math.sqrt(net + row_var[r["set"]]) for r in rs)
    print(f"   lease term: SD {100 * math.sqrt(net):.1f}% (the sets' mean errors, net of the process term); "
          f"expected mean |error| of these rows from the two terms alone: {100 * floor:.1f}% (issue 44's target 8%)")
    print(f"\n4. slow steps (> {SLOW:.2f} x the launch's fastest) by mode on the same one-GPU leases")
    for mode, (slow, steps, launch_n, half) in sorted(other_modes().items()):
        print(f"   {mode:8s} {slow:3d} of {steps:3d} timed steps slow; {half} of {launch_n} launches half or more slow")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
