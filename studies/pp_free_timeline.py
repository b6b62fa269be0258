"""The ppblock set's timelines read as development for session 45's ppfree term (issue 44; llm-findings.md, session 45
ppfree): is the free model's structure what the ranks ran, and what does it lack?

    PYTHONPATH=. python studies/pp_free_timeline.py   > studies/pp_free_timeline.txt

Prints, over the recorded timed steps of calibration/h200x2-ppblock-2026-11-30's 8 processes (pp_timeline's parser):
(a) each chunk's GPU start less max(its input's arrival on the other GPU, its previous chunk's GPU end, its host call's
start): the free model's start; (b) each chunk's GPU end less its host call's end; (c) stage 1's step start less stage
0's; (d) each rank's chunk calls against the model's chunk time in series (its issue bound, host-bound) and its median
gap before a chunk call (host.PIPELINE_ACTION_HOST_S's source); (e) the product, the free candidate and the term
(framework.launch_backlog) on the ppblock and ppcouple processes (pphost.read_set); (f) the chunk calls that took over
twice the shortest call of their kind in their rank's step (a host blocked inside the call: the launch queue full of
earlier chunks' kernels, llm/launch_backlog.py). Development, all of it.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import ppblock  # noqa: E402
import pphost  # noqa: E402

from simcluster.heldout.eager_regimes import regime_predict  # noqa: E402
from simcluster.runner import pp_timeline as pt  # noqa: E402

PPBLOCK = ROOT / "calibration" / "h200x2-ppblock-2026-11-30"
PPCOUPLE = ROOT / "calibration" / "h200x2-ppcouple-2026-11-30"
BLOCKED = 2.0   # (f): a call that took the shortest call of its kind (its issue alone) again or more, blocked inside: the
                # long blocks the term's launch queue is about (pp_timeline.INSIDE_SLACK, 20%, takes any wait inside a call)


def processes(bundle: Path) -> list[dict]:
    reg, judge, regs = pphost._registered(bundle, "free", "pooled_single_host")
    got = pphost.read_set(bundle, regs, judge, "free")
    for q in got["procs"]:
        r = q["row"]
        q["term_s"] = regime_predict(r["preset"], 1, r["mode"], "h200", microbatches=4, seq=r["seq"], backlog=True)["step_ms"] / 1e3
    return got["procs"], got["docs"]


def structure(regs: list[dict], docs: dict) -> None:
    start, end, heads = [], [], []
    for r in regs:
        for doc in docs.get(r["name"], []):
            s0, s1 = (pt.timed_recorded(rank["timeline"], 3) for rank in doc["shapes"][0]["ranks"])
            for a, b in zip(s0, s1, strict=False):
                if a["call"] != b["call"]:
                    continue
                heads.append((b["t0"] - a["t0"]) * 1e3)
                gpu, host = {0: pt._chunks(a, True), 1: pt._chunks(b, True)}, {0: pt._chunks(a, False), 1: pt._chunks(b, False)}
                for rank in (0, 1):
                    prev = -math.inf
                    for (kind, k), (gs, ge) in sorted(gpu[rank].items(), key=lambda kv: kv[1][0]):
                        src = {(1, "fwd"): 0, (0, "bwd"): 1}.get((rank, kind))
                        arrival = gpu[src][kind, k][1] if src is not None else -math.inf
                        hs, he = host[rank][kind, k]
                        start.append((gs - max(arrival, prev, hs)) * 1e3)
                        end.append((ge - he) * 1e3)
                        prev = ge
    print(f"(a) GPU start - max(input arrival, previous chunk's end, host call start), {len(start)} chunks: median "
          f"{statistics.median(start):+.2f} ms, range {min(start):+.2f}..{max(start):+.2f}")
    print(f"(b) GPU end - host call end: median {statistics.median(end):+.2f} ms, min {min(end):+.2f}")
    print(f"(c) stage 1's step start - stage 0's: median {statistics.median(heads):+.1f} ms, range "
          f"{min(heads):+.1f}..{max(heads):+.1f} over {len(heads)} recorded steps")


def chunks(regs: list[dict], docs: dict) -> None:
    print("(d) chunk calls / the model's chunk time in series (median over recorded steps), gap before a call (ms)")
    gaps = []
    for r in regs:
        model = {s: {(kind, k): e - b for kind, k, b, e in v} for s, v in
                 ppblock.spans(regime_predict(r["preset"], 1, r["mode"], "h200", microbatches=4, seq=r["seq"],
                                              timeline=True)["timeline"]).items()}
        for n, doc in enumerate(docs.get(r["name"], []), 1):
            for rank, tl in enumerate(doc["shapes"][0]["ranks"]):
                steps = pt.timed_recorded(tl["timeline"], 3)
                dur: dict = {}
                for s in steps:
                    for e in s["events"]:
                        if e[0] in pt.CHUNKS:
                            dur.setdefault((e[0], e[1]), []).append(e[3] - e[2])
                gap = statistics.median(statistics.mean(pt.before_chunk(s, e[0], e[1])["gap_s"] for e in s["events"]
                                                        if e[0] in pt.CHUNKS) for s in steps)
                gaps.append(gap)
                ratio = " ".join(f"{kind[0].upper()}{k} {statistics.median(v) / model[rank][kind, k]:.2f}"
                                 for (kind, k), v in sorted(dur.items(), key=lambda kv: (kv[0][0] != "fwd", kv[0][1])))
                print(f"    {r['name']:14} p{n} r{rank}  {ratio}  gap {gap * 1e3:.2f}")
    print(f"    gap before a chunk call: mean {statistics.mean(gaps) * 1e3:.2f} ms over {len(gaps)} rank-processes "
          f"({min(gaps) * 1e3:.2f}..{max(gaps) * 1e3:.2f})")


def blocked(regs: list[dict], docs: dict) -> None:
    """(f): each recorded step's chunk calls over BLOCKED x the shortest of their kind on that rank in that step."""
    out, steps = [], 0
    for r in regs:
        for n, doc in enumerate(docs.get(r["name"], []), 1):
            for rank, tl in enumerate(doc["shapes"][0]["ranks"]):
                for s in pt.timed_recorded(tl["timeline"], 3):
                    steps += 1
                    calls = pt._chunks(s, False)
                    for kind in pt.CHUNKS:
                        took = {k: b - a for (kk, k), (a, b) in calls.items() if kk == kind}
                        short = min(took.values(), default=0.0)
                        out += [(r["name"], n, rank, s["call"], kind, k, d, short) for k, d in took.items() if d > BLOCKED * short]
    print(f"(f) chunk calls over {BLOCKED:g}x the shortest of their kind in their rank's step: {len(out)} over {steps} "
          f"recorded rank-steps, {min(x[6] for x in out) * 1e3:.1f}..{max(x[6] for x in out) * 1e3:.1f} ms")
    for name, n, rank, call, kind, k, d, short in out:
        print(f"    {name:14} p{n} r{rank} call {call:2}  {kind} {k}  {d * 1e3:5.1f} ms against {short * 1e3:5.1f}")


def errors(name: str, procs: list[dict]) -> None:
    for key in ("product", "free", "term"):
        e = [(q["row"]["mode"], q[f"{key}_s"] / q["measured_s"] - 1) for q in procs]
        bias = math.expm1(statistics.mean(math.log(1 + x) for _, x in e))
        per = ", ".join(f"{m} {statistics.mean(abs(x) for mm, x in e if mm == m):.1%}" for m in pphost.SCHEDULES)
        print(f"    {name:9} {key:8} {statistics.mean(abs(x) for _, x in e):.1%} (bias {bias:+.1%}; {per})")


def main() -> int:
    procs, docs = processes(PPBLOCK)
    regs = list({id(q["row"]): q["row"] for q in procs}.values())
    structure(regs, docs)
    chunks(regs, docs)
    print("(e) mean |error| over the processes, the registered product and free, the term live")
    errors("ppblock", procs)
    errors("ppcouple", processes(PPCOUPLE)[0])
    blocked(regs, docs)
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
