"""Issue 44, session 49 (helper hb49): the one-GPU host-bound regimes that miss the 8% target, registered before the
runs. single+sac-op+host-bound (4 rows / 4 sets, 11.4%) reads 'undecided: test too weak' (trust/noise.FLOOR_VERDICTS):
no shape of it ran on two leases, so its lease term, and with it the row-level floor, is unknown. single+host-bound
(12 rows / 7 sets, 8.9%) reads model-limited. A registered 1-GPU set on one H200 (calibration/h200x1-hb49-2026-12-01,
llm-step --mode single): three op host-bound shapes of earlier sets re-run exactly (a shape on two leases), one op
host-bound and one single host-bound shape new to calibration/, three processes each, the five in turn.

    python validation/hb49.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/hb49.py [calibration/BUNDLE]                            # after: read-out and verdicts

Development read (docs/models/llm-findings.md, "Session 49, hb49"): no host term was found missing or mispriced by a
physical cause; the single+host-bound misses sort by lease and by the host fit each set was priced with (the same
1.1b 1024:2 +14.5 / +28.6% on eager5's two leases; hostsingle's rows -10% at the product's 2 x H200 single term), not
by shape. So no candidate is registered: the product's step (the CLI's default host folder, heldout/eager.MODE_HOST)
is judged; beside it the one-GPU sets' host fits (heldout/eager_registered.FLAG_HOSTS), reported, not judged.
Registered rows have the form of heldout/eager_hostsingle's sets (regime, ac_mode, processes, predicted.product), so
the lead can list this bundle there after the run.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import (  # noqa: E402
    bias_line,
    mem_error,
    memory_verdict,
    noise_verdict,
    pooled_log_sd,
    print_rows,
    read_run_set,
    registering_commit,
    set_main,
    write_registration,
)
from validation.hostsingle import predict, read_processes, registered_host  # noqa: E402
from validation.opcheck import host_terms, mean_abs, trust_regime  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-hb49-2026-12-01"
OPCHECK = "calibration/h200x2-opcheck-2026-11-30"
OPSPLIT = "calibration/h200x2-opsplit-2026-11-30"
HOSTSINGLE = "calibration/h200x2-hostsingle-2026-11-30"
# (name, preset, seq, micro-batch, llm-step --ac-mode, the earlier bundle that ran this exact shape or None: new)
SHAPES = (("ophb-0.5b", "0.5b", 1472, 2, "op", OPCHECK), ("ophb-1b", "1b", 1728, 2, "op", OPSPLIT),
          ("ophb-0.8b", "0.8b", 1216, 2, "op", HOSTSINGLE), ("ophb-0.3b", "0.3b", 2336, 2, "op", None),
          ("hb-0.8b", "0.8b", 1696, 1, "none", None))
PROCESSES = 3
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05}
RULES = {
    "measured": "each process's median step (llm-step --mode single on GPU 0, 5 warm-up and 20 timed steps, --profile 0)",
    "N": "pooled sd of the log of each process's median step over the processes of one shape, its dof, and the mean "
         "|error| that process noise alone gives a model exactly on each shape's mean, sqrt(2/pi) sd: ABOVE the target "
         "(target_pct) or below it",
    "M": "per group (op+host-bound, single+host-bound: the product's registered flag), the product's mean |error| over its "
         "processes (error = predicted / measured - 1) <= target_pct -> 'within', else 'not within'",
    "B": "per group, the product's lease bias b = mean log error, se = sd / sqrt(n): SLOW if b > bias_band and "
         "b - 2 se > 0; FAST if b < -bias_band and b + 2 se < 0; NONE if |b| + 2 se <= bias_band; else UNDECIDED "
         "(fewer than 3 processes: NO DATA)",
    "L": "the lease term of the re-run shapes (each with >= 2 processes here and in its earlier bundle): per shape "
         "d = mean log step here - mean log step there; s2 the pooled within-lease process variance of those shapes' "
         "processes in both bundles; lease variance = max(0, mean over shapes of (d^2 - s2 (1/n_here + 1/n_there)) / 2) "
         "(d is the difference of two lease effects); the row floor = sqrt(2/pi) sqrt(s2 / 3 + lease variance) (a row: "
         "3 processes' mean): REACHES the target if >= target_pct, else UNDER (repeats would reach the target: the "
         "regime's miss beyond it is the model's). Fewer than 2 re-run shapes read: NO DATA. The regime's verdict is "
         "studies/eager_noise_floors.py's once the lead lists these rows; this line says what it should find",
    "S": "per re-run shape: the product's error here and on its earlier lease (each lease's geometric mean); the shapes "
         "whose |error| exceeds target_pct on both leases with the same sign: 'a shape term: NAMES' (the model's miss "
         "repeats on two leases), else 'no shape term shown'",
    "P": "every process's peak memory (max_memory_allocated_bytes) within mem_pct of the registered range "
         "[steady_mem_GiB, peak_mem_GiB] (0 inside it) -> 'memory met', else 'memory not met'",
    "R": "reported, not judged: the one-GPU sets' host fits' step (predicted.one_gpu_fits, FLAG_HOSTS) mean |error| "
         "per group beside the product's",
    "D": "NOISE if N is ABOVE the target; else, for single+sac-op+host-bound, L's word (UNDER: 'model-limited "
         "expected'; REACHES: 'the floor reaches the target: noise-limited possible'); the product stays in every case "
         "(no candidate registered)",
}


def group_of(ac_mode: str, host_bound: bool) -> str:
    """The read-out's group of a row: op or single (no checkpointing), +host-bound by the product's flag."""
    return ("op" if ac_mode == "op" else "single") + ("+host-bound" if host_bound else "")


def registration_rows() -> list[dict]:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm.host_bound import is_host_bound

    rows = []
    for name, preset, seq, mb, ac, earlier in SHAPES:
        p = predict(preset, seq, mb, ac, MODE_HOST, memory=True)
        flag = is_host_bound(p["host_share"])
        rows.append({"name": name, "group": group_of(ac, flag), "regime": trust_regime(ac, flag), "mode": "single",
                     "preset": preset, "seq": seq, "micro_batch": mb, "compile": False, "ac_mode": ac, "microbatches": 1,
                     "processes": PROCESSES, "earlier": earlier,
                     "predicted": {"product": p | {"host_bound": flag},
                                   "one_gpu_fits": predict(preset, seq, mb, ac, registered_host())}})
    return rows


def register(path: Path) -> None:
    from simcluster.heldout.eager import MODE_HOST

    commit = registering_commit(ROOT)
    doc = {"registered_at_commit": commit, "script": "validation/hb49.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml", "host": str(MODE_HOST.relative_to(ROOT)),
                           "one_gpu_fits": str(registered_host().relative_to(ROOT))},
           "product_host": host_terms(MODE_HOST), "judge": JUDGE, "rules": RULES, "rows": registration_rows()}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 49); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in doc["rows"]:
        p, o = r["predicted"]["product"], r["predicted"]["one_gpu_fits"]
        print(f"{r['name']:10} {r['preset']} {r['seq']}:{r['micro_batch']} ac {r['ac_mode']:4}  product {p['step_ms']:8.2f} ms  "
              f"one-GPU fits {o['step_ms']:8.2f} ms  host share {p['host_share']}  memory {p['steady_mem_GiB']:.2f}.."
              f"{p['peak_mem_GiB']:.2f} GiB  {r['group']}  {'re-run of ' + r['earlier'] if r['earlier'] else 'new'}")
    print(f"registered {len(doc['rows'])} shapes x {PROCESSES} processes in {path} (model at {commit[:10]})")


def earlier_logs(row: dict) -> list[float]:
    """The log median steps (s) of the earlier bundle's processes of this row's exact shape ([] if none ran)."""
    bundle = ROOT / row["earlier"]
    procs, _ = read_processes(bundle, read_run_set(bundle), ("product",))
    key = (row["preset"], int(row["seq"]), int(row["micro_batch"]), row["ac_mode"])
    return [math.log(p["measured_s"]) for p in procs if p["key"] == key]


def lease_rules(reg: dict, procs: list[dict], target: float, verdicts: dict) -> str | None:
    """Rules L and S over the re-run rows; L's word (REACHES / UNDER) or None (NO DATA)."""
    pairs, signs = [], []
    for row in reg["rows"]:
        if not row.get("earlier"):
            continue
        key = (row["preset"], int(row["seq"]), int(row["micro_batch"]), row["ac_mode"])
        here, there = [math.log(p["measured_s"]) for p in procs if p["key"] == key], earlier_logs(row)
        if len(here) < 2 or len(there) < 2:
            verdicts[f"L {row['name']}"] = f"NO DATA: {len(here)} processes here, {len(there)} on {row['earlier']}"
            continue
        pred = math.log(float(row["predicted"]["product"]["step_ms"]) / 1e3)
        e_here, e_there = (math.expm1(pred - statistics.mean(x)) for x in (here, there))
        pairs.append((here, there))
        signs.append((row["name"], (e_here, e_there)))
        verdicts[f"L {row['name']}"] = (f"here {math.exp(statistics.mean(here)) * 1e3:.1f} ms ({len(here)}), "
                                        f"{row['earlier']} {math.exp(statistics.mean(there)) * 1e3:.1f} ms ({len(there)}): "
                                        f"d {statistics.mean(here) - statistics.mean(there):+.3f}; product error here "
                                        f"{e_here:+.1%}, there {e_there:+.1%}")
    if len(pairs) < 2:
        verdicts["L"] = f"NO DATA: {len(pairs)} re-run shapes read (2 needed)"
        return None
    sd, dof = pooled_log_sd([g for pair in pairs for g in pair])
    s2 = sd ** 2
    terms = [(statistics.mean(h) - statistics.mean(t)) ** 2 - s2 * (1 / len(h) + 1 / len(t)) for h, t in pairs]
    lease_var = max(0.0, statistics.mean(terms) / 2)
    floor = math.sqrt(2 / math.pi) * math.sqrt(s2 / PROCESSES + lease_var)
    word = "REACHES" if floor >= target else "UNDER"
    verdicts["L"] = (f"{word}: process sd {sd:.3f} ({dof} dof), lease sd {math.sqrt(lease_var):.3f} ({len(pairs)} shapes "
                     f"on two leases): row floor {floor:.1%} against the {target:.0%} target")
    same = [n for n, (a, b) in signs if abs(a) > target and abs(b) > target and (a > 0) == (b > 0)]
    verdicts["S"] = f"a shape term: {', '.join(same)}" if same else "no shape term shown"
    return word


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"script": "validation/hb49.py --register"})
    try:
        judge = {k: float(reg["judge"][k]) for k in JUDGE}
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    procs, left = read_processes(bundle, reg, ("product", "one_gpu_fits"), "group")
    target, verdicts = judge["target_pct"] / 100, {}
    for p in procs:
        pr = p["predicted"]["product"]
        p["error"] = float(pr["step_ms"]) / 1e3 / p["measured_s"] - 1
        p["fits_error"] = float(p["predicted"]["one_gpu_fits"]["step_ms"]) / 1e3 / p["measured_s"] - 1
        p["mem_err"] = mem_error(float(pr["steady_mem_GiB"]), float(pr["peak_mem_GiB"]), p["peak_GiB"])
    above, verdicts["N"] = noise_verdict(procs, target)
    verdicts["P"] = memory_verdict([p["mem_err"] for p in procs], judge["mem_pct"])
    for g in dict.fromkeys(str(r["group"]) for r in reg["rows"]):
        ps = [p for p in procs if p["group"] == g]
        if not ps:
            verdicts[f"M {g}"] = "NO DATA: no process ran"
            continue
        errs = [p["error"] for p in ps]
        verdicts[f"M {g}"] = (f"{'within' if mean_abs(errs) <= target else 'not within'} the target: mean |error| "
                              f"{mean_abs(errs):.1%} over {len(ps)} processes, errors {min(errs):+.1%}..{max(errs):+.1%}")
        verdicts[f"B {g}"] = bias_line([math.log1p(e) for e in errs], judge["bias_band"])[1]
        verdicts[f"R {g}"] = (f"not judged: the one-GPU sets' host fits {mean_abs([p['fits_error'] for p in ps]):.1%} "
                              f"mean |error| against the product's {mean_abs(errs):.1%}")
    word = lease_rules(reg, procs, target, verdicts)
    expect = {None: "NO DATA (L)", "UNDER": "model-limited expected",
              "REACHES": "the floor reaches the target: noise-limited possible"}[word]
    verdicts["D"] = ("NO DATA: no process ran" if not procs else
                     "NOISE: process noise alone exceeds the target; the product stays" if above else
                     f"single+sac-op+host-bound: {expect}; the product stays (no candidate registered)")
    return {"rows": procs, "left": left, "verdicts": verdicts, "own": {}}


def line(p: dict, _own) -> str:
    preset, seq, mb, ac = p["key"]
    return (f"{p['name']:10} {preset} {seq}:{mb} ac {ac:4}  measured {p['measured_s'] * 1e3:8.1f} ms  product "
            f"{float(p['predicted']['product']['step_ms']):8.1f} ms ({p['error']:+.1%})  one-GPU fits "
            f"{float(p['predicted']['one_gpu_fits']['step_ms']):8.1f} ms ({p['fits_error']:+.1%})  peak {p['peak_GiB']:.2f} GiB "
            f"({p['mem_err']:+.1%})")


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, lambda result: print_rows(result, line))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
