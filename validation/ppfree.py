"""Issue 44, session 45: the eager pipeline's stage hosts, free, in the steady state of consecutive steps (PP+host-bound
at 2 GPUs), judged on a registered 2 x H200 set (calibration/h200x2-ppfree-2026-11-30): two host-bound shapes new to
calibration/, each under torch.distributed.pipelining's 1F1B and GPipe (2 stages, 4 micro-batches), each in two
separate processes on one lease (the first round's processes recording their host timeline, the second's not), after
the lease's hidden-128 single-mode host probe (runs/host: 2 and 32 layers).

    python validation/ppfree.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/ppfree.py [calibration/BUNDLE]                            # after: read-out and verdicts

Why. The ppblock set (calibration/h200x2-ppblock-2026-11-30, read once: development for everything here) refuted the
product's coupling (the hosts in series: 17.2%, SLOW +15.2%, no host waiting on a receive) and read the hosts free
(session 44's candidate, simulate.free_host) 9.9% with bias -2.0%; its timeline put the blocking where the free model
has none. Read as development (docs/models/llm-findings.md, session 45 ppfree): every chunk's GPU span is the free
model's max(input arrival, the host's issue) on all 16 rank-processes, so the blocking word was (1) the busier host's
chain falling behind its input (its chunk calls 0.68-1.73x the model's issue time, process to process), (2) the
launch queue filling across chunks (6 chunk calls over twice the shortest of their kind in their step, 15.9-41.0 ms)
because (3) stage 1 starts its next step 1.0-39.1 ms (median 6.3) before stage 0 (no barrier between steps), and (4)
0.45 ms of the schedule's own host time before each chunk call (studies/pp_free_timeline.txt; these figures corrected
after the run to the print's, review B45 7). The term (framework.launch_backlog, llm/launch_backlog.py, off in the product) adds (2),
(3) and (4) to the hosts free. Registered per row: `product` (hosts in series), `free` (the candidate) and `term` steps,
and the timeline features of validation/ppblock.py (model_timeline) for its rules K, W, V, reported.
PROCESSES: `simcluster.runner.llm_step --mode pp` (torchrun, 2 ranks, 3 warm-up, 12 timed steps; round 1 with
--timeline: every other call recorded), one row per process, the four rows in turn, two rounds.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import ppblock  # noqa: E402  (validation/ppblock.py: the timeline features and rules K, W, V)
import ppcouple  # noqa: E402  (validation/ppcouple.py: rules F, H, O, S; the rows' product and free predictions)
import pphost  # noqa: E402  (validation/pphost.py: rules N, B, M, P, the pooled single host term)

from simcluster.heldout.registration import print_verdicts, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-ppfree-2026-11-30"
SHAPES = (("0.3b", 3136, 1), ("1.1b", 640, 1))   # (preset, seq, micro_batch): new to calibration/, host share >= 0.94
SCHEDULES = pphost.SCHEDULES
MICROBATCHES, PROCESSES, WARMUP, STEPS = 4, 2, 3, 12
TIMELINE_ROUNDS = (1,)   # device_run.sh's rounds whose processes record their timeline (the recorder costs ~2.5%)
MARGIN = 0.01            # rule A: a challenger beats the incumbent by more than this over all, never worse by more per schedule
JUDGE = pphost.JUDGE
MODELS = (("product", "the hosts in series (the product)"), ("free", "the hosts free (session 44's candidate)"),
          ("term", "the hosts free in the steady state with the shared launch queue and the schedule's host (ppfree)"))
RULES = {
    "measured": ppblock.RULES["measured"],
    **{k: ppcouple.RULES[k] for k in ("N", "B", "M", "F", "P", "H", "O", "S")},
    "T": "the term (registered per row: predicted.term): mean |error| over all processes and per schedule, its lease "
         "bias (band as B)",
    "A": "which model the product ships after the read: the incumbent starts as the product (the hosts in series); a "
         "challenger, the candidate (free) and then the term, replaces it where its mean |error| over all processes is "
         "below the incumbent's by more than 1 point, no schedule's mean |error| above the incumbent's by more than 1 "
         "point, and its mean |error| within the 8% target: ADOPT TERM, ADOPT FREE or KEEP SERIES; NOISE (no switch) "
         "where N's process noise alone exceeds the target",
    **{k: ppblock.RULES[k] for k in ("K", "W", "V")},
    "R": "reported, not judged: stage 1's step start less stage 0's (ms, the median over each recording process's "
         "recorded timed steps; the term starts stage 1 early by its end's lead on stage 0's, the other models at 0)",
}
FOLLOWS = {
    "ADOPT TERM": "the lead switches the product to the term (framework.free_stage_hosts and launch_backlog on for torch "
                  "pipelines; the pins in docs/models/llm.md's PP section move)",
    "ADOPT FREE": "the lead switches the product to the hosts free (free_stage_hosts on for torch pipelines); the term "
                  "stays off and is development",
    "KEEP SERIES": "the product stays; the PP+host-bound miss is carried with these numbers and the next term is the "
                   "per-chunk host cost (the chunk calls' spread the ppblock timeline showed)",
    "NOISE": "no switch on this set; the lease's process noise is said beside the errors",
}


def rows_plan() -> list[dict]:
    """Each registered row (device_run.sh's stem NAME-rK.json)."""
    return [{"name": f"{mode}-{p}", "mode": mode, "preset": p, "seq": s, "micro_batch": mb, "microbatches": MICROBATCHES,
             "processes": PROCESSES, "warmup": WARMUP, "steps": STEPS} for p, s, mb in SHAPES for mode in SCHEDULES]


def term_step(row: dict) -> dict:
    from simcluster.heldout.eager_regimes import regime_predict

    t = regime_predict(row["preset"], row["micro_batch"], row["mode"], "h200", microbatches=row["microbatches"],
                       seq=row["seq"], backlog=True)
    return {"step_ms": t["step_ms"], "host_share": t["host_share"]}


def predicted() -> list[dict]:
    return [row | {"predicted": ppcouple.row_predicted(row) | {"term": term_step(row)},
                   "timeline": ppblock.model_timeline(row["preset"], row["seq"], row["mode"])} for row in rows_plan()]


def register(path: Path) -> None:
    judge = JUDGE | {"ahead_s": ppblock.AHEAD_S, "candidate_s": ppblock.CANDIDATE_S, "overhead": ppblock.OVERHEAD,
                     "margin": MARGIN}
    write_set(path, "validation/ppfree.py --register", 45, judge, RULES, FOLLOWS, predicted())


def write_set(path: Path, script: str, session: int, judge: dict, rules: dict, follows: dict, rows: list[dict],
              tail=lambda row: "") -> None:
    """A product / free / term set's registered.yaml (validation/ppboth.py too) and one printed line per row, `tail`'s
    text at its end."""
    commit = registering_commit(ROOT)
    doc = {"registered_at_commit": commit, "script": script,
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml",
                           "collective_card": "models/collective/h200x2-primitives.yaml",
                           "host": {"h200": "calibration/h200x2-llm-host-2026-11-23 (leases.yaml: the pooled term)"}},
           "judge": judge, "models": dict(MODELS), "rules": rules, "follows": follows,
           "pooled_single_host": pphost.pooled_single(), "rows": rows}
    write_registration(path, f"# Predictions registered before the runs (issue 44, session {session}); never edited after "
                       "them.\n" + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in rows:
        p = r["predicted"]
        print(f"{r['name']:14} {r['seq']}:{r['micro_batch']} x{r['microbatches']}  product {p['product']['step_ms']:7.2f} "
              f"(host share {p['product']['host_share']})  free {p['free']['step_ms']:7.2f}  term {p['term']['step_ms']:7.2f} ms"
              f"  memory {p['product']['steady_mem_GiB']:.2f}..{p['product']['peak_mem_GiB']:.2f} GiB" + tail(r))
    print(f"registered {len(rows)} rows in {path} (model at {commit[:10]})")


def errors(procs: list[dict], key: str) -> dict:
    """{"all": mean |error|, schedule: mean |error|} of the model whose step is procs' `key`."""
    out = {"all": pphost._mean_abs(procs, key)}
    for mode in SCHEDULES:
        out[mode] = pphost._mean_abs([q for q in procs if q["row"]["mode"] == mode], key)
    return out


def beats(x: dict, y: dict, target: float) -> bool:
    """Rule A's test: challenger errors `x` replace incumbent `y`."""
    return (x["all"] < y["all"] - MARGIN and x["all"] <= target
            and all(x[m] is None or y[m] is None or x[m] <= y[m] + MARGIN for m in SCHEDULES))


def rule_a(procs: list[dict], above: bool | None, target: float, v: dict, follows: dict = FOLLOWS) -> str:
    """Rule A's word, its line in v["A"] ending with `follows`' line for the word (validation/ppboth.py: its own)."""
    if not procs:
        v["A"] = "NO DATA: no process ran"
        return "NO DATA"
    errs = {k: errors(procs, f"{k}_s") for k, _ in MODELS}
    line = "; ".join(f"{k} {e['all']:.1%} (" + ", ".join(f"{m} {e[m]:.1%}" for m in SCHEDULES if e[m] is not None) + ")"
                     for k, e in errs.items())
    if above:
        word = "NOISE"
    else:
        ship = "product"
        for k in ("free", "term"):
            if beats(errs[k], errs[ship], target):
                ship = k
        word = {"product": "KEEP SERIES", "free": "ADOPT FREE", "term": "ADOPT TERM"}[ship]
    v["A"] = f"{word}: mean |error| {line}; follows: {follows[word]}"
    return word


def rule_t(procs: list[dict], band: float, v: dict) -> None:
    e = errors(procs, "term_s")
    if e["all"] is None:
        v["T"] = "NO DATA: no process ran"
        return
    word = pphost._bias(v, "T", [q["term_s"] / q["measured_s"] for q in procs], band)
    # bias_line's text starts with its word, so T prints it twice ("UNDECIDED: UNDECIDED: lease bias ..."; review B45, 8);
    # kept: the read-out reproduces the committed readout.txt byte for byte (tests/test_registered_readouts.py)
    v["T"] = (f"the term mean |error| {e['all']:.1%} (" + ", ".join(f"{m} {e[m]:.1%}" for m in SCHEDULES if e[m] is not None)
              + f"); {word}: {v['T']}")


def head_starts(regs: list[dict], docs: dict) -> str:
    """Rule R: each recording process's median stage-1 step start less stage 0's (ms)."""
    from simcluster.runner import pp_timeline

    out = []
    for r in regs:
        for doc in docs.get(r["name"], []):
            tls = [rank.get("timeline") for rank in doc["shapes"][0].get("ranks") or []]
            if len(tls) != 2 or not all(tls):
                continue
            s0, s1 = (pp_timeline.timed_recorded(t, int(r["warmup"])) for t in tls)
            d = [b["t0"] - a["t0"] for a, b in zip(s0, s1, strict=False) if a["call"] == b["call"]]
            if d:
                out.append(f"{r['name']} {statistics.median(d) * 1e3:+.1f}")
    return ("stage 1 starts its step (ms against stage 0): " + ", ".join(out)) if out else "NO DATA: no recorded timeline"


def read_models(bundle: Path, follows: dict = FOLLOWS) -> tuple[dict, list[dict], dict]:
    """A product / free / term set read once (validation/ppboth.py too): its processes and rules N, B, M, F, P, H, O, S,
    T and A (A's line ending with `follows`' line); returns (the result as show prints it, the registered rows, each
    row's accepted documents)."""
    reg, judge, regs = pphost._registered(bundle, "free", "pooled_single_host")
    got = pphost.read_set(bundle, regs, judge, "free")   # the processes, rules N, B, M
    procs, left, v = (got[k] for k in ("procs", "left", "v"))
    for q in procs:
        q["term_s"] = float(q["row"]["predicted"]["term"]["step_ms"]) / 1e3
    ppcouple.rule_f(procs, got["m"], v)
    v["P"] = pphost.rule_p(procs, judge)
    pooled = float(reg["pooled_single_host"]["per_kernel_s"])
    own, series, _ = ppcouple.own_fit_rules(bundle, reg, procs, v, got["target"], got["band"], product_s=pooled)
    rule_t(procs, got["band"], v)
    rule_a(procs, got["above"], got["target"], v, follows)
    return {"procs": procs, "own": own or {}, "series": series or {}, "left": left, "verdicts": v}, regs, got["docs"]


def read_out(bundle: Path) -> dict:
    result, regs, docs = read_models(bundle)
    result["timelines"] = ppblock.read_timelines(bundle, regs, docs, result["verdicts"])
    result["verdicts"]["R"] = head_starts(regs, docs)
    return result


def show(result: dict) -> None:
    ppcouple.show_processes(result)
    for q in result["procs"]:
        print(f"{q['row']['name']:16} term {q['term_s'] / q['measured_s'] - 1:+6.1%}")
    ppblock.show_timelines(result)
    print_verdicts(result["verdicts"], result["left"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
