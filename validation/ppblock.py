"""Issue 44, session 45: where a host-bound pipeline's two hosts block (PP+host-bound at 2 GPUs), judged on a registered
2 x H200 set (calibration/h200x2-ppblock-2026-11-30): two host-bound shapes new to calibration/, each under
torch.distributed.pipelining's 1F1B and GPipe (2 stages, 4 micro-batches), each in two separate processes on one lease,
every rank recording its host timeline (llm_step --timeline, simcluster/runner/pp_timeline.py), after the lease's
hidden-128 single-mode host probe (runs/host: 2 and 32 layers).

    python validation/ppblock.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/ppblock.py [calibration/BUNDLE]                            # after: read-out and verdicts

Why. Session 44's ppcouple set left the stage hosts' coupling unsettled: with the lease's own single host fit the hosts
free priced its steps better (6.7% against 16.4% in series), while the GPU-idle pipeline probe read the hosts in series
(+4.4% against -14.1%); the product (the hosts in series, the pooled single host term) read 6.5%, PP+host-bound 6.7%
over 10 held-out rows with partly cancelling errors. The step times cannot say where a host waits; the timeline can:
for every chunk whose input comes from the other stage (stage 1's forwards, stage 0's backwards), the lead of the
input's arrival (the producing chunk's end on the other GPU, CUDA events) over the host's start of the chunk
(pp_timeline.leads). The hosts in series (the product, llm/simulate: a task's host starts once its input arrived) put
every lead at or below 0; the hosts free (the candidate, simulate.free_host, off) put the chunks whose host is ahead of
the other stage's GPU at the leads the free model's timeline gives (stage 1's first forward about one forward's issue
time, stage 0's 1F1B backwards about half a backward's issue); a host that runs free up to a point and then waits
("blocks at the receive of micro-batch k") leads on the chunks before k and not from k on.
Registered per row: `product` (the model at the registering commit: heldout/eager_regimes.registered_row) and `free`
(the candidate) steps, and `timeline`: each input-dependent chunk's lead in both models (ms; series from the product's
simulated step, free from the candidate's: `model_timeline`) and each rank's share of its schedule window outside its
chunk calls in series (the gaps between its simulated tasks; free: 0). The read-out takes the product-side rules of
session 44's sets (N, B, M, F, P, H, O, S: validation/pphost.py, ppcouple.py) and the timeline rules K (the blocking
point), W (where the host waits) and V (the recorder's overhead), fixed here before the run.
PROCESSES: `simcluster.runner.llm_step --mode pp --timeline` (torchrun, 2 ranks, 3 warm-up, 12 timed steps: every other
call recorded, so 6 recorded and 6 not), one row per process, the four rows in turn, two rounds.
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import ppcouple  # noqa: E402  (validation/ppcouple.py: rules F, H, O, S; the rows' product and free predictions)
import pphost  # noqa: E402  (validation/pphost.py: rules N, B, M, P, the pooled single host term)

from simcluster.heldout.registration import print_verdicts, registering_commit, set_main, write_registration  # noqa: E402
from simcluster.runner import pp_timeline  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-ppblock-2026-11-30"
SHAPES = (("0.3b", 832, 1), ("0.5b", 1984, 1))   # (preset, seq, micro_batch): new to calibration/, host share >= 0.90
SCHEDULES = pphost.SCHEDULES
MICROBATCHES, PROCESSES, WARMUP, STEPS = 4, 2, 3, 12
AHEAD_S = 1e-3      # a chunk is issued ahead of its input when the input arrives more than this after the host's start
CANDIDATE_S = 3e-3  # the chunks rule K looks at: those the free model puts ahead by more than this
OVERHEAD = 0.02     # rule V's limit on the recorder's overhead (the brief's ~2%)
JUDGE = pphost.JUDGE
RULES = {
    "measured": "rank 0's median step of each process over all its 12 timed steps (recorded and unrecorded: rule V says "
                "what the recorder costs); a row's processes are read one by one",
    **{k: ppcouple.RULES[k] for k in ("N", "B", "M", "F", "P", "H", "O", "S")},
    "K": "the blocking point, per process: each input-dependent chunk's lead (pp_timeline.leads: the input's arrival, the "
         "producing chunk's end on the other GPU by CUDA events, less the host's start of the chunk), the median over "
         "the process's recorded timed steps; a chunk is AHEAD if its lead exceeds 1 ms. Over the chunks the free "
         "model puts ahead by more than 3 ms (registered per row, timeline.free_ahead): FREE if every one is AHEAD, "
         "SERIES if none is, else BLOCKS AT the first (in the free model's order) that is not. The set's word: the "
         "word of most processes (a tie: MIXED), each process's word listed",
    "W": "where the host waits, per rank: the median share of its schedule window (the step's start to schedule.step's "
         "return) spent outside its chunk calls (posts, Work.wait, the schedule's Python), the mean over processes, "
         "against the product's registered share (timeline.series_outside) and the free model's 0, a word per rank: "
         "OUTSIDE THE CHUNKS if its mean is at least half the product's, else NONE if the rank's own chunks of K (r0: "
         "backwards, r1: forwards) are all AHEAD in most processes (it had nothing to wait for), else INSIDE (the wait "
         "sits inside the chunk calls: a launch or an allocation that blocks); Work.wait's share of the window "
         "reported beside, and the chunk calls' time beyond the shortest call of their kind (pp_timeline.inside_excess)",
    "V": "the recorder's overhead: per process, rank 0's median step over the recorded timed steps against the "
         "unrecorded ones (pp_timeline.overhead), the mean over processes: WITHIN if at most 2%, else ABOVE (the "
         "timeline's host times are then read with that perturbation said)",
}


def rows_plan() -> list[dict]:
    """Each registered row (device_run.sh's stem NAME-rK.json)."""
    return [{"name": f"{mode}-{p}", "mode": mode, "preset": p, "seq": s, "micro_batch": mb, "microbatches": MICROBATCHES,
             "processes": PROCESSES, "warmup": WARMUP, "steps": STEPS} for p, s, mb in SHAPES for mode in SCHEDULES]


def spans(trace: dict) -> dict[int, list[tuple[str, int, float, float]]]:
    """{stage: [(fwd | bwd, micro-batch, start s, end s), ...] in its order} of a simulated step's Chrome trace
    (llm/predict's timeline: the compute lane's "F<k> c0" / "B<k> c0" spans; the optimizer left out)."""
    events = trace["traceEvents"]
    stage = {e["pid"]: int(e["args"]["name"].rsplit("stage ", 1)[1]) for e in events
             if e["ph"] == "M" and e["name"] == "process_name" and "stage " in e["args"]["name"]}
    out: dict[int, list] = {s: [] for s in stage.values()}
    for e in events:
        if e["ph"] == "X" and e.get("cat") == "compute" and e["name"][:1] in "FB" and e["name"][1:2].isdigit():
            kind = "fwd" if e["name"][0] == "F" else "bwd"
            out[stage[e["pid"]]].append((kind, int(e["name"][1:].split()[0]), e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6))
    return {s: sorted(v, key=lambda x: x[2]) for s, v in out.items()}


def model_leads(producer: dict, host_start: dict) -> dict[str, float]:
    """{"r1 fwd k" / "r0 bwd k": the producing chunk's end less the consumer's host start} (s), as pp_timeline.leads."""
    out = {}
    for (stage, kind), other in (((1, "fwd"), 0), ((0, "bwd"), 1)):
        for (s, kk, k), start in host_start.items():
            if s == stage and kk == kind and (other, kind, k) in producer:
                out[f"r{stage} {kind} {k}"] = producer[other, kind, k] - start
    return dict(sorted(out.items(), key=lambda kv: host_start[int(kv[0][1]), kv[0].split()[1], int(kv[0].split()[2])]))


def model_timeline(preset: str, seq: int, mode: str) -> dict:
    """The timeline features each model implies (ms, shares): the product (hosts in series: a chunk's host starts at
    its simulated span's start, once its input arrived) and the candidate (hosts free: each stage's host issues its
    chunks back to back, each for its series span's length, the issue time where the host is the bound; the input
    arrives at the producer's span end in the free model's own step)."""
    from simcluster.heldout.eager_regimes import regime_predict

    sp = {free: spans(regime_predict(preset, 1, mode, "h200", microbatches=MICROBATCHES, seq=seq, free_hosts=free,
                                     timeline=True)["timeline"]) for free in (False, True)}
    ends = {free: {(s, kind, k): end for s, v in sp[free].items() for kind, k, _, end in v} for free in (False, True)}
    series_start = {(s, kind, k): start for s, v in sp[False].items() for kind, k, start, _ in v}
    free_start: dict = {}
    for s, v in sp[False].items():
        t = 0.0
        for kind, k, start, end in v:
            free_start[s, kind, k] = t
            t += end - start
    series, free = model_leads(ends[False], series_start), model_leads(ends[True], free_start)
    outside = []
    for s in sorted(sp[False]):
        v = sp[False][s]
        window = v[-1][3]   # the stage's schedule: from the step's start to its last chunk's end
        outside.append(round(1 - sum(e - b for _, _, b, e in v) / window, 4))
    return {"series_lead_ms": {k: round(x * 1e3, 3) for k, x in series.items()},
            "free_lead_ms": {k: round(x * 1e3, 3) for k, x in free.items()},
            "free_ahead": [k for k, x in free.items() if x > CANDIDATE_S],
            "series_outside": outside, "free_outside": [0.0] * len(outside)}


def predicted() -> list[dict]:
    return [row | {"predicted": ppcouple.row_predicted(row), "timeline": model_timeline(row["preset"], row["seq"], row["mode"])}
            for row in rows_plan()]


def register(path: Path) -> None:
    commit = registering_commit(ROOT)
    rows = predicted()
    doc = {"registered_at_commit": commit, "script": "validation/ppblock.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml",
                           "collective_card": "models/collective/h200x2-primitives.yaml",
                           "host": {"h200": "calibration/h200x2-llm-host-2026-11-23 (leases.yaml: the pooled term)"}},
           "judge": JUDGE | {"ahead_s": AHEAD_S, "candidate_s": CANDIDATE_S, "overhead": OVERHEAD}, "rules": RULES,
           "pooled_single_host": pphost.pooled_single(), "rows": rows}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 45); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in rows:
        p, f, t = r["predicted"]["product"], r["predicted"]["free"], r["timeline"]
        print(f"{r['name']:14} {r['seq']}:{r['micro_batch']} x{r['microbatches']}  product {p['step_ms']:7.2f} ms (host share "
              f"{p['host_share']})  free {f['step_ms']:7.2f} ms  memory {p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB")
        print(f"{'':14} free model ahead: " + ", ".join(f"{k} {t['free_lead_ms'][k]:+.1f}" for k in t["free_ahead"])
              + f" ms; series outside share rank 0/1 {t['series_outside'][0]:.3f}/{t['series_outside'][1]:.3f}")
    print(f"registered {len(rows)} rows in {path} (model at {commit[:10]})")


def process_timeline(doc: dict, warmup: int) -> dict | None:
    """A process's timeline features: per recorded timed step the leads (s) and each rank's features; the recorder's
    overhead on rank 0's timed steps. None where the document holds no two-rank timeline."""
    shape = doc["shapes"][0]
    ranks = shape.get("ranks") or []
    tls = [r.get("timeline") for r in ranks]
    if len(tls) != 2 or not all(tls):
        return None
    s0, s1 = (pp_timeline.timed_recorded(t, warmup) for t in tls)
    pairs = [(a, b) for a, b in zip(s0, s1, strict=False) if a["call"] == b["call"]]
    gpu = all(t.get("gpu_events") for t in tls)
    return {"leads": [pp_timeline.leads(a, b, gpu) for a, b in pairs],
            "ranks": [[pp_timeline.rank_features(a) for a, _ in pairs], [pp_timeline.rank_features(b) for _, b in pairs]],
            "overhead": pp_timeline.overhead(shape.get("step_times_s") or [], warmup, tls[0])}


def rule_k(row: dict, tl: dict) -> tuple[str, dict]:
    """A process's blocking-point word (rule K) and its median leads (s)."""
    keys = row["timeline"]["free_ahead"]
    med = {k: statistics.median(x[k] for x in tl["leads"] if k in x) for k in keys if any(k in x for x in tl["leads"])}
    if len(med) < len(keys) or not keys:
        return "NO DATA", med
    ahead = [med[k] > AHEAD_S for k in keys]
    if all(ahead):
        return "FREE", med
    if not any(ahead):
        return "SERIES", med
    return f"BLOCKS AT {keys[ahead.index(False)]}", med


def set_word(words: list[str]) -> str:
    """Rule K's set word: the word most processes read, a plurality (the registered text's "most processes"), MIXED
    where the top two counts tie (4 / 4, 3 / 3 / 2); Counter.most_common, not a set's hash order (review B45, 4)."""
    top = Counter(words).most_common(2)
    return "MIXED" if len(top) > 1 and top[0][1] == top[1][1] else top[0][0]


def read_timelines(bundle: Path, regs: list[dict], docs: dict, v: dict) -> list[dict]:
    """Rules K, W and V over each row's accepted documents (pphost.read_set's docs)."""
    out = []
    for r in regs:
        for doc in docs.get(r["name"], []):
            tl = process_timeline(doc, int(r["warmup"]))
            if tl is None or not tl["leads"]:
                continue
            word, med = rule_k(r, tl)
            share = [statistics.median(f["outside_fraction"] for f in fs if f["outside_fraction"] is not None) for fs in tl["ranks"]]
            wait = [statistics.median(f["wait_s"] / f["window_s"] for f in fs if f["window_s"]) for fs in tl["ranks"]]
            inside = [statistics.median(f["inside_excess_s"] / f["window_s"] for f in fs if f["window_s"]) for fs in tl["ranks"]]
            out.append({"row": r, "word": word, "leads": med, "outside": share, "wait": wait, "inside": inside,
                        "overhead": tl["overhead"]})
    if not out:
        v["K"] = v["W"] = v["V"] = "NO DATA: no process recorded a two-rank timeline"
        return out
    v["K"] = f"{set_word([q['word'] for q in out])}: " + "; ".join(
        f"{q['row']['name']} {q['word']} (" + ", ".join(f"{k} {x * 1e3:+.1f}" for k, x in q["leads"].items()) + " ms)" for q in out)
    meas = [statistics.mean(q["outside"][i] for q in out) for i in (0, 1)]
    pred = [statistics.mean(q["row"]["timeline"]["series_outside"][i] for q in out) for i in (0, 1)]
    waits = [statistics.mean(q["wait"][i] for q in out) for i in (0, 1)]
    inside = [statistics.mean(q["inside"][i] for q in out) for i in (0, 1)]
    free = [sum(all(x > AHEAD_S for k, x in q["leads"].items() if k.startswith(f"r{i} ")) for q in out) * 2 > len(out)
            for i in (0, 1)]   # the rank's own input-dependent chunks AHEAD in most processes: nothing to wait for
    w = " / ".join(f"rank {i} " + ("OUTSIDE THE CHUNKS" if m >= p / 2 else "NONE" if free[i] else "INSIDE")
                   for i, (m, p) in enumerate(zip(meas, pred, strict=True)))
    v["W"] = (f"{w}: ranks' share of the schedule window outside the chunk calls {meas[0]:.3f} / {meas[1]:.3f} (product, "
              f"hosts in series, {pred[0]:.3f} / {pred[1]:.3f}; free 0); Work.wait's share {waits[0]:.3f} / {waits[1]:.3f}; "
              f"inside the chunk calls beyond the shortest of their kind {inside[0]:.3f} / {inside[1]:.3f}")
    over = [q["overhead"] for q in out if q["overhead"] is not None]
    if not over:
        v["V"] = "NO DATA: no process has both recorded and unrecorded timed steps"
    else:
        mo = statistics.mean(over)
        v["V"] = (f"{'WITHIN' if abs(mo) <= OVERHEAD else 'ABOVE'}: the recorded steps {mo:+.1%} against the unrecorded "
                  f"(mean over {len(over)} processes; limit {OVERHEAD:.0%}): " + " / ".join(f"{x:+.1%}" for x in over))
    return out


def read_out(bundle: Path) -> dict:
    reg, judge, regs = pphost._registered(bundle, "free", "pooled_single_host")
    got = pphost.read_set(bundle, regs, judge, "free")   # the processes, rules N, B, M
    procs, left, docs, v = (got[k] for k in ("procs", "left", "docs", "v"))
    ppcouple.rule_f(procs, got["m"], v)
    v["P"] = pphost.rule_p(procs, judge)
    pooled = float(reg["pooled_single_host"]["per_kernel_s"])
    own, series, _ = ppcouple.own_fit_rules(bundle, reg, procs, v, got["target"], got["band"], product_s=pooled)
    timelines = read_timelines(bundle, regs, docs, v)
    return {"procs": procs, "own": own or {}, "series": series or {}, "timelines": timelines, "left": left, "verdicts": v}


def show(result: dict) -> None:
    ppcouple.show_processes(result)
    show_timelines(result)
    print_verdicts(result["verdicts"], result["left"])


def show_timelines(result: dict) -> None:
    """One line per recording process: rule K's word, the ranks' outside and Work.wait shares, the recorder's overhead
    (validation/ppfree.py too)."""
    for q in result["timelines"]:
        print(f"timeline {q['row']['name']:14} K {q['word']:22} outside share {q['outside'][0]:.3f}/{q['outside'][1]:.3f}  "
              f"wait {q['wait'][0]:.3f}/{q['wait'][1]:.3f}  overhead "
              + ("-" if q["overhead"] is None else f"{q['overhead']:+.1%}"))


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
