"""Issue 44, session 44: eager pipelines at 2 GPUs when the host issues the step (PP+host-bound), lease noise or a missing
host term? A registered 2 x H200 set (calibration/h200x2-pphost-2026-11-30): three host-bound shapes new to
calibration/, each under torch.distributed.pipelining's 1F1B and GPipe (2 stages, 4 micro-batches), each in two
separate processes on one lease, and the lease's own hidden-128 single-mode host probe (a pipeline stage's host term is
the single mode's: llm/eager.host_mode).

    python validation/pphost.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/pphost.py [calibration/BUNDLE]                            # after: read-out and verdicts

Why. The regime's 4 held-out rows at 2 GPUs (post set 0.8b 2048:1, pphost set 1.1b 1280:1; 1F1B and GPipe) read 9.7%
mean |error|, every one fast (-3.3 / -16.0 / -9.1 / -10.6%). Those 4 rows are development for the candidate below.
The model prices each stage's micro-batch host-issue bound at the single mode's host cost per kernel, fitted on the
product's host folder (calibration/h200x2-llm-host-2026-11-23: 21.0 us per kernel), the fastest of the four 2 x H200
leases with single-mode hidden-128 runs (25.1-26.8 us on the other three); with the pphost lease's own fit its two rows
read +6.0 / +4.2% (that set's README), and session 39 found the model's host issue total per step equal to rank 0's
measured host_issue_s within 1 ms (no per-action term missing at that size).
Registered per row: `product`, today's model (heldout/eager_regimes.registered_row: step, host share, stage-0 memory),
and `candidate`, the same model with the single mode's host term the mean of the four leases' own fits (SINGLE_LEASES;
as the product's FSDP2 term is, calibration/h200x2-llm-host-2026-11-23/leases.yaml). Neither is fitted on this set.
PROCESSES: `simcluster.runner.llm_step --mode pp` (torchrun, 2 ranks, 3 warm-up, 10 timed steps), one row per process,
the six rows in turn, two rounds, and hidden-128 single-mode host runs (runs/host/single-L<n>.json, the product host
folder's shapes 128:1, 512:1): 2 and 32 layers before the rounds, 8 after them.
Printed beside the registered rules (added after the registration, before any run; reported, not judged): I, each rank's
median host issue and CPU time over the step per row (the data a coupling term would be built from).
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
from simcluster.heldout.registration import bias_line, mem_error, pooled_log_sd, print_verdicts, read_run_set, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-pphost-2026-11-30"
SHAPES = (("0.5b", 1536, 1), ("0.8b", 1344, 1), ("2b", 896, 1))   # (preset, seq, micro_batch): host share >= 0.85
SCHEDULES = ("pp-1f1b", "pp-gpipe")
MICROBATCHES, PROCESSES = 4, 2
HOST_LAYERS = (2, 8, 32)   # runs/host/single-L<n>.json
# the candidate's single-mode host term: the mean of these 2 x H200 leases' own hidden-128 single fits (llm/eager.fit_modes)
SINGLE_LEASES = ("calibration/h200x2-llm-host-2026-11-23",                      # the product's fit (2026-11-23)
                 "calibration/h200x2-llm-host-2026-11-27",                      # the sealed6 lease
                 "calibration/h200x2-eager-hostbound-noise-2026-11-29/runs/host",   # session 38's lease
                 "calibration/h200x2-eager-pphost-2026-11-29/runs/host")        # session 39's lease
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05}
RULES = {
    "measured": "rank 0's median step of each process (3 warm-up, 10 timed steps); a row's processes are read one by one",
    "N": "pooled sd of the log of rank 0's median step over the processes of each row (rows with >= 2), its dof, and the "
         "mean |error| process noise alone gives a model exactly on each row's mean, sqrt(2/pi) sd: ABOVE the target or below",
    "B": "per process, error = product / measured - 1; the lease bias b = the mean log error over the processes, se = "
         "their sd / sqrt(n); FAST if b < -bias_band and b + 2 se < 0; SLOW if b > bias_band and b - 2 se > 0; NONE if "
         "|b| + 2 se <= bias_band; else UNDECIDED",
    "M": "the product's mean |error| over the processes <= target_pct -> 'within the target on this lease', else 'not within'",
    "C": "the candidate (single host term pooled over SINGLE_LEASES): its mean |error| over the processes and lease bias; "
         "BETTER if within target_pct and below the product's, else NOT BETTER",
    "P": "rank 0's peak memory (max_memory_allocated_bytes, stage 0) of every process within mem_pct of the registered "
         "range [steady_mem_GiB, peak_mem_GiB] (0 inside it) -> 'memory met', else 'memory not met'",
    "H": "this lease's single-mode host cost per kernel (llm/eager.fit_modes over runs/host, >= 2 layer counts): z = log(it "
         "/ the pooled mean) / lease_sd_log (the sd of the log of SINGLE_LEASES' fits): |z| <= 2 WITHIN the leases' "
         "spread, else OUTSIDE; and its ratio to the product's fit",
    "O": "the model with this lease's own single-mode host fit (heldout/eager_regimes.regime_predict own_host=runs/host): "
         "mean |error| over the processes within target_pct or not, and its lease bias",
    "D": "NOISE if N is ABOVE the target; else by O's lease bias (B's test on the own-fit errors): NONE with O within "
         "the target -> LEASE (the single host fit's lease) if B is FAST or SLOW (the product's fit came from another "
         "lease: the candidate's pooled term, C), MET if B is NONE and M within; O SLOW -> MODEL (the hosts' coupling): "
         "with this lease's own host cost the model prices the pipeline slow (its stages' hosts in series, session 39), "
         "whatever B says (a fast fit lease may hide it); O FAST -> MODEL (a missing pipeline host term): with this "
         "lease's own host cost the model is still fast; else (O UNDECIDED, NO DATA, or NONE but not within) UNDECIDED",
}


def rows_plan() -> list[dict]:
    """Each registered row: name (device_run.sh's stem NAME-rK.json), mode, preset, seq, micro_batch, microbatches,
    processes."""
    return [{"name": f"{mode}-{p}", "mode": mode, "preset": p, "seq": s, "micro_batch": mb, "microbatches": MICROBATCHES,
             "processes": PROCESSES} for p, s, mb in SHAPES for mode in SCHEDULES]


def pooled_single() -> dict:
    """The candidate's single-mode host term: each lease's own fit (seconds per kernel, per step), their mean and the sd
    of the log of the per-kernel costs."""
    from simcluster.llm import eager

    fits = []
    for folder in SINGLE_LEASES:
        with eager.leases_unread():   # each lease's own runs (the product folder's leases.yaml pools them since session 44)
            fit = eager.fit_modes(ROOT / folder).get("single")
        if fit is None:
            raise SimclusterError(f"{folder}: fewer than two layer counts of single-L<n>.json runs (SINGLE_LEASES)")
        fits.append({"folder": folder, "per_kernel_s": round(fit[0], 9), "per_step_s": round(fit[1], 7), "shapes": fit[2]})
    logs = [math.log(f["per_kernel_s"]) for f in fits]
    return {"leases": fits, "per_kernel_s": round(statistics.mean(f["per_kernel_s"] for f in fits), 9),
            "per_step_s": round(statistics.mean(f["per_step_s"] for f in fits), 7),
            "lease_sd_log": round(statistics.stdev(logs), 4)}


def predicted() -> list[dict]:
    """The registered predictions. The set was registered before session 44's pooled single host term (helper
    hostsingle): its `product` is the product of then, whose single term was the host folder's own runs' fit; a
    pipeline's host takes only the single term, so reading no folder's leases.yaml (llm/eager.leases_unread) gives it."""
    from simcluster.llm import eager

    with eager.leases_unread():
        return _predicted()


def _predicted() -> list[dict]:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.heldout.eager_regimes import regime_predict, registered_row
    from simcluster.llm import eager

    pooled = pooled_single()
    fits = eager.fit_modes(MODE_HOST) | {"single": (pooled["per_kernel_s"], pooled["per_step_s"], 0)}
    out = []
    for row in rows_plan():
        reg = registered_row(row["preset"], row["seq"], row["micro_batch"], row["mode"], memory=True,
                             microbatches=row["microbatches"], free_hosts=False)   # the product then: in series
        cand = regime_predict(row["preset"], row["micro_batch"], row["mode"], "h200", microbatches=row["microbatches"],
                              seq=row["seq"], fits=fits, free_hosts=False)
        out.append(row | {"predicted": {"product": reg["predicted"],
                                        "candidate": {"step_ms": cand["step_ms"], "host_share": cand["host_share"]}}})
    return out


def register(path: Path) -> None:
    commit = registering_commit(ROOT)
    rows = predicted()
    doc = {"registered_at_commit": commit, "script": "validation/pphost.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml",
                           "collective_card": "models/collective/h200x2-primitives.yaml",
                           "host": {"h200": "calibration/h200x2-llm-host-2026-11-23"}},
           "judge": JUDGE, "rules": RULES, "candidate_single_host": pooled_single(), "rows": rows}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 44); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in rows:
        p, c = r["predicted"]["product"], r["predicted"]["candidate"]
        print(f"{r['name']:16} {r['seq']}:{r['micro_batch']} x{r['microbatches']}  product {p['step_ms']:8.2f} ms (host "
              f"share {p['host_share']})  candidate {c['step_ms']:8.2f} ms  memory {p['steady_mem_GiB']:.2f}.."
              f"{p['peak_mem_GiB']:.2f} GiB")
    host = doc["candidate_single_host"]
    print(f"registered {len(rows)} rows in {path} (model at {commit[:10]}); candidate single host term "
          f"{host['per_kernel_s'] * 1e6:.2f} us per kernel {host['per_step_s'] * 1e3:+.2f} ms per step (mean of "
          f"{len(host['leases'])} leases, sd {host['lease_sd_log']:.3f} of the log)")


def _registered(bundle: Path, other: str = "candidate", host: str = "candidate_single_host") -> tuple[dict, dict, list[dict]]:
    """registered.yaml's judge and rows, each row's product and `other` prediction and the pooled `host` term checked
    (validation/ppcouple.py: its `free` and pooled_single_host); a missing or bad key: one SimclusterError line."""
    reg = read_run_set(bundle)
    try:
        judge = {k: float(reg["judge"][k]) for k in JUDGE}
        for r in reg["rows"]:
            p = r["predicted"]
            float(p["product"]["step_ms"]), float(p[other]["step_ms"]), float(p["product"]["steady_mem_GiB"])
            float(p["product"]["peak_mem_GiB"]), r["name"], int(r["processes"])
        float(reg[host]["per_kernel_s"]), float(reg[host]["lease_sd_log"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    return reg, judge, reg["rows"]


def read_set(bundle: Path, regs: list[dict], judge: dict, other: str) -> dict:
    """A registered pipeline set's processes read once and its rules N, B and M (validation/ppcouple.py takes them too):
    procs, one per process that ran (row, measured (s), product and `other` step (s) as product_s / OTHER_s, rank 0's
    peak error against the registered range), left (why a run or row is short), docs (each row's accepted documents:
    rule I), v (N, B, M), above (N above the target), bias (B's word), m (the product's mean |error|), target, band."""
    from simcluster.heldout.eager_regimes import process_runs
    from simcluster.heldout.eager_today import read_process  # the document among log lines, its configuration checked

    left: list[str] = []
    procs = []
    docs: dict[str, list[dict]] = {}

    def read(text: str, row: dict) -> tuple[dict | None, str]:
        doc, why = read_process(text, row)
        if not why:
            docs.setdefault(row["name"], []).append(doc)
        return doc, why

    for r in regs:
        for run in process_runs(bundle, r, memory=True, dropped=left, read=read):
            p = r["predicted"]
            procs.append({"row": r, "measured_s": run["step_ms"] / 1e3, "product_s": float(p["product"]["step_ms"]) / 1e3,
                          f"{other}_s": float(p[other]["step_ms"]) / 1e3,
                          "mem_err": mem_error(float(p["product"]["steady_mem_GiB"]), float(p["product"]["peak_mem_GiB"]),
                                               run["mem_GiB"][0])})
        if sum(1 for q in procs if q["row"] is r) < int(r["processes"]):
            left.append(f"{r['name']}: {sum(1 for q in procs if q['row'] is r)} of {r['processes']} processes ran")
    target, band = judge["target_pct"] / 100, judge["bias_band"]
    v: dict[str, str] = {}
    sd, dof = pooled_log_sd([[math.log(q["measured_s"]) for q in procs if q["row"] is r] for r in regs])
    above = None if sd is None else sd * math.sqrt(2 / math.pi) > target
    v["N"] = ("NO DATA: no row ran in two processes" if sd is None else
              f"process sd {sd:.3f} ({dof} dof): process noise alone gives {sd * math.sqrt(2 / math.pi):.1%} mean |error|, "
              f"{'ABOVE' if above else 'below'} the {target:.0%} target")
    bias = _bias(v, "B", [q["product_s"] / q["measured_s"] for q in procs], band)
    m = _mean_abs(procs, "product_s")
    v["M"] = ("NO DATA: no process ran" if m is None else f"PP+host-bound 2 {'within' if m <= target else 'not within'} "
              f"the target on this lease: product mean |error| {m:.1%} over {len(procs)} processes (target {target:.0%})")
    return {"procs": procs, "left": left, "docs": docs, "v": v, "above": above, "bias": bias, "m": m, "target": target,
            "band": band}


def rule_p(procs: list[dict], judge: dict) -> str:
    """Rule P: every process's rank-0 peak within mem_pct of the registered range."""
    mems = [q["mem_err"] for q in procs]
    return ("NO DATA: no peak recorded" if not mems else
            f"memory {'met' if max(map(abs, mems)) <= judge['mem_pct'] / 100 else 'not met'}: max |error| "
            f"{max(map(abs, mems)):.1%} over {len(mems)} processes (within {judge['mem_pct']:.0f}%)")


def read_out(bundle: Path) -> dict:
    reg, judge, regs = _registered(bundle)
    got = read_set(bundle, regs, judge, "candidate")
    procs, left, docs, v, above, bias, m = (got[k] for k in ("procs", "left", "docs", "v", "above", "bias", "m"))
    target, band = got["target"], got["band"]
    c = _mean_abs(procs, "candidate_s")
    if c is None:
        v["C"] = "NO DATA: no process ran"
    else:
        cb = math.expm1(statistics.mean(math.log(q["candidate_s"] / q["measured_s"]) for q in procs))
        v["C"] = (f"{'BETTER' if c <= target and c < m else 'NOT BETTER'}: candidate mean |error| {c:.1%} (product "
                  f"{m:.1%}), its lease bias {cb:+.1%}")
    v["P"] = rule_p(procs, judge)
    own = own_lease(bundle, reg, procs, v)
    o_word, o_within = None, None
    if own is not None and procs:
        errs = [own[q["row"]["name"]] / q["measured_s"] - 1 for q in procs]
        o_within = statistics.mean(map(abs, errs)) <= target
        o_word = _bias(v, "O", [1 + e for e in errs], band)
        if o_word is not None:
            v["O"] = (f"with this lease's own single host fit {'within' if o_within else 'not within'} the target: mean "
                      f"|error| {statistics.mean(map(abs, errs)):.1%}; {v['O']}")
    if above:
        v["D"] = "NOISE: process noise alone exceeds the target (its floor to be computed as TP's)"
    elif o_word == "NONE" and o_within and bias in ("FAST", "SLOW"):
        v["D"] = ("LEASE (the single host fit's lease): this lease's own single host fit prices the pipelines within the "
                  "target without a bias; the product's fit came from another lease (the candidate's pooled term: C)")
    elif o_word == "NONE" and o_within and bias == "NONE" and m is not None and m <= target:
        v["D"] = "MET: within the target without a lease bias, with the product's fit and with this lease's own"
    elif o_word == "SLOW":
        v["D"] = ("MODEL (the hosts' coupling): with this lease's own host cost the model prices the pipelines slow (the "
                  "stages' hosts in series); a fast fit lease hides part of it in the product")
    elif o_word == "FAST":
        v["D"] = "MODEL (a missing pipeline host term): with this lease's own host cost the model is still fast"
    else:
        v["D"] = "UNDECIDED"
    v["I"] = host_by_rank(docs)
    return {"procs": procs, "own": own or {}, "left": left, "verdicts": v}


def host_by_rank(docs: dict[str, list[dict]]) -> str:
    """Rule I (reported, not judged): per row, each rank's median host issue time and issuing threads' CPU time
    (runner/host_issue.py, host_cpu.py) over rank 0's median step, the mean over the row's processes; the data a coupling
    term would be built from."""
    parts = []
    for name, row_docs in docs.items():
        shares = {}
        for key in ("host_issue_median_s_by_rank", "host_cpu_median_s_by_rank"):
            per = [[x / d["shapes"][0]["median_step_s"] if isinstance(x, (int, float)) else None
                    for x in d["shapes"][0].get(key) or []] for d in row_docs]
            ranks = [[p[k] for p in per if k < len(p) and p[k] is not None] for k in range(max(map(len, per), default=0))]
            shares[key] = "/".join(f"{statistics.mean(x):.2f}" if x else "-" for x in ranks) or "-"
        parts.append(f"{name} issue {shares['host_issue_median_s_by_rank']} cpu {shares['host_cpu_median_s_by_rank']}")
    return ("reported, not judged: ranks' median host issue / CPU time over the step (rank 0/1): " + "; ".join(parts)
            if parts else "NO DATA: no process ran")


def _mean_abs(procs: list[dict], key: str) -> float | None:
    return statistics.mean(abs(q[key] / q["measured_s"] - 1) for q in procs) if procs else None


def _bias(v: dict, rule: str, ratios: list[float], band: float) -> str | None:
    word, v[rule] = bias_line([math.log(x) for x in ratios], band)
    return word


def own_lease(bundle: Path, reg: dict, procs: list[dict], v: dict, product_s: float | None = None) -> dict | None:
    """Rules H and O's inputs: this lease's single-mode host fit against the registered pooled term, and each row's step
    (s) with it; None (H and O say NO DATA) without two layer counts of runs/host/single-L<n>.json. H's "x the product's"
    ratio: against product_s (seconds per kernel: the product the calling set registered), else the product pphost
    registered (21.0 us, before session 44's pooled single term), which the ppcouple read-out also printed although its
    registered product was the pooled 24.7 us (cold review C 44, item 10: its README's Result says so)."""
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm.eager import fit_modes, leases_unread

    folder = bundle / "runs" / "host"
    try:
        fit = fit_modes(folder).get("single") if folder.is_dir() else None
    except ValueError as exc:
        v["H"] = v["O"] = f"NO DATA: {str(exc).splitlines()[0]}"
        return None
    if fit is None:
        v["H"] = v["O"] = "NO DATA: fewer than two layer counts of runs/host/single-L<n>.json ran"
        return None
    pooled, sd = float(reg["candidate_single_host"]["per_kernel_s"]), float(reg["candidate_single_host"]["lease_sd_log"])
    if product_s is None:
        with leases_unread():   # the product as registered (before session 44's pooled single term: predicted())
            product_s = fit_modes(MODE_HOST)["single"][0]
    product = product_s
    z = math.log(fit[0] / pooled) / sd
    v["H"] = (f"{'WITHIN' if abs(z) <= 2 else 'OUTSIDE'} the leases' spread: single host {fit[0] * 1e6:.1f} us per kernel "
              f"{fit[1] * 1e3:+.2f} ms per step ({fit[2]} shapes), {z:+.1f} lease sd from the pooled {pooled * 1e6:.1f} us "
              f"(sd {sd:.3f} of the log; limit 2); x{fit[0] / product:.2f} the product's {product * 1e6:.1f} us")
    # the hosts in series named (free_hosts False), the product's coupling when every set using this registered: a
    # switch of the product's coupling (session 46 ppboth's rule A) leaves the committed read-outs as they were read
    return {r["name"]: regime_predict(r["preset"], int(r["micro_batch"]), r["mode"], "h200", folder, int(r["microbatches"]),
                                      int(r["seq"]), free_hosts=False)["step_ms"] / 1e3 for r in reg["rows"]}


def show(result: dict) -> None:
    for q in result["procs"]:
        r, meas = q["row"], q["measured_s"]
        own = result["own"].get(r["name"])
        print(f"{r['name']:16} {r['seq']}:{r['micro_batch']} x{r['microbatches']}  measured {meas * 1e3:7.1f} ms  product "
              f"{q['product_s'] / meas - 1:+6.1%}  candidate {q['candidate_s'] / meas - 1:+6.1%}"
              + ("" if own is None else f"  own host fit {own / meas - 1:+6.1%}") + f"  memory {q['mem_err']:+.1%}")
    print_verdicts(result["verdicts"], result["left"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
