"""Issue 44, session 46: the eager pipeline's stage hosts in series (the product), free (session 44's candidate) or free
in the steady state with the shared launch queue (session 45's ppfree term), decided at 2 GPUs (PP+host-bound) on a
registered 2 x H200 set (calibration/h200x2-ppboth-2026-11-30) with no timeline recorder in any process: one host-bound
shape new to calibration/ under torch.distributed.pipelining's 1F1B and GPipe (2 stages, 4 micro-batches), each in five
separate processes on one lease, the schedules alternating in ABBA order (1F1B first in odd rounds, GPipe first in
even ones), after the lease's hidden-128 single-mode host probe (runs/host: 2 and 32 layers).

    python validation/ppboth.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/ppboth.py [calibration/BUNDLE]                            # after: read-out and verdicts

Why. The ppblock set (every process recording its host timeline) read the product +15.2% SLOW and the hosts free 9.9%;
the ppfree set read NOISE (process sd 0.121) with the recorder in its first round only, and that round ran faster on 3
of 4 shapes: recorder and round order confounded (its round 2 alone: product +10.0%, free -5.2%, term -9.8%). Both
sets' 16 processes are development for every model here. This set removes the confound by design: no process records
(the recorder is a probe effect, not part of what the models price), and each schedule's five processes sit at launch
positions balanced against linear drift (1F1B 1, 4, 5, 8, 9; GPipe 2, 3, 6, 7, 10: mean 5.4 and 5.6). One shape
rather than two: at about 17.5 s a process, 10 processes and the probe fill the 220 s wall, and the brief asks for at
least 3 processes per shape and schedule; five repeats give rule N 8 degrees of freedom.
Registered per row: `product` (hosts in series), `free` and `term` steps (validation/ppfree.py's), each process's
launch position. Rules N, B, M, F, P, H, O, S, T and A are ppfree's (A with this set's follows); D (drift) and X (the
recorder's absence) are reported. PROCESSES: `simcluster.runner.llm_step --mode pp` (torchrun, 2 ranks, 3 warm-up, 12
timed steps, no --timeline), one row per process.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import ppcouple  # noqa: E402  (validation/ppcouple.py: rules F, H, O, S; the rows' product and free predictions)
import ppfree  # noqa: E402  (validation/ppfree.py: the term's step, the registration's writer, the read and rules N-A)

from simcluster.heldout.registration import print_verdicts, set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-ppboth-2026-11-30"
SHAPES = (("0.3b", 3264, 1),)   # (preset, seq, micro_batch): new to calibration/ (seq and tokens), host share 0.95
SCHEDULES = ppfree.SCHEDULES
MICROBATCHES, PROCESSES, WARMUP, STEPS = 4, 5, ppfree.WARMUP, ppfree.STEPS
JUDGE = ppfree.JUDGE
RULES = {
    "measured": "rank 0's median step of each process over its 12 timed steps (no process records a timeline); a row's "
                "processes are read one by one",
    **{k: ppfree.RULES[k] for k in ("N", "B", "M", "F", "P", "H", "O", "S", "T", "A")},
    "D": "reported, not judged: drift over the lease, the least-squares slope of each process's log measured step (less "
         "its row's mean) on its launch position (registered per row: positions), % per position, and the later half's "
         "processes against the earlier half's; each schedule's mean position beside (ABBA: 5.4 and 5.6)",
    "X": "reported, not judged: processes whose document carries a rank's timeline (the recorder): NONE by design",
}
FOLLOWS = {
    "ADOPT TERM": "the lead applies the one-line switch of /work/device-requests/ppboth.md with the term (llm/eager.py: "
                  "free_stage_hosts and launch_backlog on for torch pipelines) and moves its listed pins; the PP+host-bound "
                  "rows are re-read against it",
    "ADOPT FREE": "the lead applies the one-line switch of /work/device-requests/ppboth.md (llm/eager.py: free_stage_hosts "
                  "on for torch pipelines) and moves its listed pins; the term stays off and is development",
    "KEEP SERIES": "the product stays (the hosts in series); the PP+host-bound miss is carried with these numbers as an "
                   "unvalidated regime, the free and term models stay off",
    "NOISE": "no switch on this set; the lease's process noise is said beside the errors and PP+host-bound stays "
             "unvalidated",
}


def position(mode: str, k: int) -> int:
    """The launch position (1 = first after the host probe) of process k of a schedule: round k runs both schedules,
    1F1B first in odd rounds, GPipe first in even ones (ABBA; device_run.sh's order)."""
    first = SCHEDULES[0] if k % 2 else SCHEDULES[1]
    return 2 * (k - 1) + (1 if mode == first else 2)


def rows_plan() -> list[dict]:
    """Each registered row (device_run.sh's stem NAME-rK.json) with its processes' launch positions."""
    return [{"name": f"{mode}-{p}", "mode": mode, "preset": p, "seq": s, "micro_batch": mb, "microbatches": MICROBATCHES,
             "processes": PROCESSES, "warmup": WARMUP, "steps": STEPS,
             "positions": [position(mode, k) for k in range(1, PROCESSES + 1)]} for p, s, mb in SHAPES for mode in SCHEDULES]


def predicted() -> list[dict]:
    return [row | {"predicted": ppcouple.row_predicted(row) | {"term": ppfree.term_step(row)}} for row in rows_plan()]


def register(path: Path) -> None:
    ppfree.write_set(path, "validation/ppboth.py --register", 46, JUDGE | {"margin": ppfree.MARGIN}, RULES, FOLLOWS,
                     predicted(), lambda r: f"  positions {r['positions']}")


def rule_d(procs: list[dict]) -> str:
    """Rule D (reported): the drift of the processes' log step (less their row's mean) over launch positions."""
    points = []
    for q in procs:
        mine = [math.log(x["measured_s"]) for x in procs if x["row"] is q["row"]]
        points.append((q["position"], math.log(q["measured_s"]) - statistics.mean(mine)))
    if len({x for x, _ in points}) < 3:
        return "NO DATA: fewer than 3 positions ran"
    xbar = statistics.mean(x for x, _ in points)
    slope = sum((x - xbar) * y for x, y in points) / sum((x - xbar) ** 2 for x, _ in points)
    half = sorted(points)
    n = len(half) // 2
    late = statistics.mean(y for _, y in half[-n:]) - statistics.mean(y for _, y in half[:n])
    where = ", ".join(f"{m} {statistics.mean(q['position'] for q in procs if q['row']['mode'] == m):.1f}"
                      for m in SCHEDULES if any(q["row"]["mode"] == m for q in procs))
    return (f"reported: drift {math.expm1(slope):+.2%} per position over {len(points)} processes; the later "
            f"{n} against the earlier {n} {math.expm1(late):+.1%}; mean position {where}")


def rule_x(docs: dict) -> str:
    """Rule X (reported): processes whose document carries a rank's timeline."""
    n = sum(1 for ds in docs.values() for d in ds if any(rk.get("timeline") for s in d.get("shapes") or []
                                                         for rk in s.get("ranks") or []))
    return "NONE: no process recorded a timeline" if n == 0 else f"PRESENT: {n} processes recorded a timeline"


def read_out(bundle: Path) -> dict:
    result, regs, docs = ppfree.read_models(bundle, FOLLOWS)   # the processes, rules N, B, M, F, P, H, O, S, T, A
    procs, v = result["procs"], result["verdicts"]
    for r in regs:   # read_set appends a row's processes in order k = 1, 2, ...; the files that ran, their positions
        ran = [k for k in range(1, int(r["processes"]) + 1) if (bundle / "runs" / f"{r['name']}-r{k}.json").is_file()]
        for q, k in zip([q for q in procs if q["row"] is r], ran, strict=False):
            q["position"] = int(r["positions"][k - 1])
    v["D"] = rule_d(procs)
    v["X"] = rule_x(docs)
    return result


def show(result: dict) -> None:
    ppcouple.show_processes(result)
    for q in result["procs"]:
        print(f"{q['row']['name']:16} position {q['position']:2}  term {q['term_s'] / q['measured_s'] - 1:+6.1%}")
    print_verdicts(result["verdicts"], result["left"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
