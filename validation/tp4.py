"""Issue 44, session 48 (helper tp4): torch TP x DP on 4 x H200, the shipped model and a candidate host term. A registered
4 x H200 set (calibration/h200x4-tp4-2026-11-30): three shapes new to calibration, each in the runner's 2-D layouts
(--mode tp+fsdp or tp+ddp --group 2: tensor parallel over pairs of ranks, FSDP2 or DDP across the pairs), three processes
a shape, the shapes alternated A B C | C B A | A B C (3 warm-up, 8 timed steps, --profile 0). Why: the error-band regime
'TP x DP+host-bound' at 4 GPUs reads 19.9% over 24 rows (4 sets, one process a row), bias -16.1% (model fast), and no
row-level noise floor of its own; the tpdp sets' READMEs found tp+fsdp priced 29-33% fast with tp's host fit.

    python validation/tp4.py --register calibration/h200x4-tp4-2026-11-30/registered.yaml   # before the call
    python validation/tp4.py [calibration/h200x4-tp4-2026-11-30]                            # after: the read-out

Registered per row: the shipped model's step, host share and rank-0 memory range (heldout/eager_regimes.registered_row,
`step_ms`) and the candidate's step and host share (heldout/eager_tp4.candidate_predict, `step_ms_candidate`: tp+fsdp
with its own 4-rank host fit; tp+ddp's equal to the shipped). Rules N, B, P are validation/nosync.py's (imported), M
per shape as validation/repeats47.py's, R the adoption rule below; nothing is fitted on the runs.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402
import repeats47  # noqa: E402

from simcluster.heldout.eager_tp4 import CANDIDATE_HOST, CANDIDATE_MODES, candidate_predict, process_step  # noqa: E402
from simcluster.heldout.registration import set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x4-tp4-2026-11-30"
SCRIPT = "validation/tp4.py --register"   # registered.yaml's `script`: the read-out refuses another set's file
PROCESSES = 3
MODES = ("tp+fsdp", "tp+ddp")
# (preset, seq, micro_batch, mode, why): seqs from this helper's own list (352, 416, 672, 1184, 1632, 2208, 3168, 3808)
SHAPES = (("0.3b", 1184, 4, "tp+fsdp", "host-bound (predicted share 0.95): the smallest preset, the most host-bound"),
          ("1b", 2208, 2, "tp+fsdp", "host-bound (0.89), a wider model: the candidate's term per block against more GPU work"),
          ("0.5b", 1632, 2, "tp+ddp", "host-bound (0.94): tp+ddp's control, the candidate leaves it as shipped"))
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05}
RULES = {
    "measured": "rank 0's median step of each process (3 warm-up, 8 timed steps); a process the budget guard skipped, "
                "that failed, or whose document is not the registered configuration (mode, 4 ranks, mesh dp 2 x tp 2, "
                "preset, the shape ok) is left out and said",
    **{k: nosync.RULES[k] for k in ("N", "B", "P")},
    "M": repeats47.RULES["M"] + " (the shipped model's step_ms)",
    "F": repeats47.RULES["F"],
    "R": "per mode with data, mean |error| over its processes of the shipped step (step_ms) and of the candidate's "
         "(step_ms_candidate): candidate <= target_pct and shipped above -> ADOPT; shipped <= target_pct and candidate "
         "above -> REJECT; else UNDECIDED (equal columns: 'not deciding'). Consequence, fixed now: ADOPT on tp+fsdp -> "
         "the product's tp+fsdp host cost takes tp+fsdp's own 4-rank host fit (eager.host_mode) in a later commit, and "
         "this set's rows become development for it (the next set its held-out check); REJECT -> the candidate is "
         "dropped; UNDECIDED -> the product unchanged, the candidate stays off",
    "D": "NOISE if N is ABOVE the target; else MET if M is within and P met; 'MODEL' naming the shapes (or 'overall') "
         "not within; 'MEMORY' if only P fails (the shipped model only; R says the candidate's)",
}


def rows() -> list[dict]:
    """Each shape as registered: the shipped prediction (flat, memory too) and the candidate's step and share."""
    from simcluster.heldout.eager_regimes import registered_row

    out = []
    for preset, seq, mb, mode, _ in SHAPES:
        row = registered_row(preset, seq, mb, mode, memory=True)
        cand = candidate_predict(preset, seq, mb, mode)
        row["predicted"] |= {"step_ms_candidate": cand["step_ms"], "host_share_candidate": cand["host_share"],
                             "host_candidate": cand["host"]}
        out.append({"name": f"{preset}-{seq}x{mb}-{mode}", "variant": mode, "processes": PROCESSES, **row})
    return out


def register(path: Path) -> None:
    notes = {"model": "two columns: step_ms the shipped model (heldout/eager_regimes.registered_row); step_ms_candidate "
                      "heldout/eager_tp4.candidate_predict (off in the product): "
                      f"{', '.join(CANDIDATE_MODES)} with its own host fit from {CANDIDATE_HOST.relative_to(ROOT)}; "
                      "nothing fitted on the runs",
             "development": "the candidate was chosen on the 4-GPU tp+fsdp rows of the meshes, meshes-repeat, meshes2, tpdp and "
                            "tpdp2 sets (their errors looked at); none of this set's shapes",
             "shapes": {f"{p}-{s}x{mb}-{m}": why for p, s, mb, m, why in SHAPES}}
    calibration = nosync.CALIBRATION | {"host": nosync.CALIBRATION["host"] | {"candidate": str(CANDIDATE_HOST.relative_to(ROOT))}}
    register_set(path, SCRIPT, RULES, calibration, rows(), notes,
                 lambda p: f"  candidate {p['step_ms_candidate']:8.2f} ms")


def register_set(path: Path, script: str, rules: dict, calibration: dict, regs: list[dict], notes: dict,
                 middle=lambda p: "") -> None:
    """A session-48 4-GPU TP x DP registration (this set's, validation/tp4b.py's) through nosync.register with JUDGE;
    each row's line the shipped step and share, `middle(predicted)`, then the memory range."""
    def line(r: dict) -> str:
        p = r["predicted"]
        return (f"{r['name']:22} shipped {p['step_ms']:8.2f} ms (share {p['host_share']}){middle(p)}  memory "
                f"{p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB")
    nosync.register(path, script, judge=JUDGE, rules=rules, session=48, calibration=calibration, regs=regs, notes=notes,
                    line=line)


def adopt(procs: list[dict], judge: dict) -> str:
    """Rule R over the processes (their shipped errors set by nosync.step_verdicts)."""
    target, lines, says = judge["target_pct"] / 100, [], []
    for mode in MODES:
        ps = [p for p in procs if p["row"]["mode"] == mode]
        if not ps:
            lines.append(f"{mode}: NO DATA")
            continue
        shipped = statistics.mean(abs(p["error"]) for p in ps)
        cand = statistics.mean(abs(float(p["row"]["predicted"]["step_ms_candidate"]) / 1e3 / p["step_s"] - 1) for p in ps)
        if all(p["row"]["predicted"]["step_ms_candidate"] == p["row"]["predicted"]["step_ms"] for p in ps):
            lines.append(f"{mode}: not deciding (equal columns; shipped {shipped:.1%})")
            continue
        say = ("ADOPT" if cand <= target < shipped else "REJECT" if shipped <= target < cand else "UNDECIDED")
        says.append(say)
        lines.append(f"{mode}: {say}: shipped {shipped:.1%}, candidate {cand:.1%} over {len(ps)} processes "
                     f"(target {target:.0%})")
    verdict = "NO DATA" if not says else says[0] if len(set(says)) == 1 else "UNDECIDED"
    return f"{verdict}: " + "; ".join(lines)


def read_out(bundle: Path, own_rules=None, script: str = SCRIPT) -> dict:
    """The read-out's processes and rule lines; `own_rules(procs, bundle, judge)` -> {rule: line} (the lines after F and
    before D: this set's R by default, validation/tp4b.py's H and R); `script`: the registration's own (another set's
    registered.yaml is one error line)."""
    judge, regs = nosync.read_registration(bundle, JUDGE, {"script": script})
    procs, left = nosync.read_processes(bundle, regs, step_of=process_step)
    verdicts, _, above, within, mem_met = nosync.step_verdicts(procs, regs, judge, MODES)
    bad, verdicts["M"] = repeats47.per_shape(procs, regs, judge, within)
    verdicts["F"] = repeats47.floors(procs, regs)
    verdicts |= {"R": adopt(procs, judge)} if own_rules is None else own_rules(procs, bundle, judge)
    verdicts["D"] = ("NOISE: process noise alone exceeds the target" if above else "NO DATA" if within is None else
                     f"MODEL: {', '.join(bad)} not within" if bad else "MEMORY: steps met, memory not" if not mem_met else "MET")
    return {"procs": procs, "left": left, "verdicts": verdicts}


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, nosync.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
