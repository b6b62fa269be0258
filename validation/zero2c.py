"""Issue 44, session 47 (helper zero2c): FSDP2 ZeRO-2's per-micro-batch forward re-gather, measured alone on a GPU-bound
shape. A registered 2 x H200 set (calibration/h200x2-zero2c-2026-11-30): the 8b preset at one shape new to calibration
(1440:2, predicted host share 0.05), run under reshard_after_forward=False (zero2: framework torch zero 2) and under
FSDP2's default (control: zero 3), 4 micro-batches a step reduce-scattered after every micro-batch, 4 processes of each
variant alternated ABBA.

    python validation/zero2c.py --register calibration/h200x2-zero2c-2026-11-30/registered.yaml   # before the call
    python validation/zero2c.py [calibration/h200x2-zero2c-2026-11-30]                            # after: the read-out

Why: session 46's zero2 and zero2b sets read their wait rule UNDECIDED on host-bound 8b shapes, where the wait
(FrameworkSpec.zero2_wait, on for torch) and the candidate re-gather (FrameworkSpec.zero2_regather, off: FSDP2 reshards
after every backward, so each micro-batch's forward all-gathers every layer again) move the zero2 step by the same ~72
ms. On a GPU-bound shape the reduce-scatters end inside each backward (the wait moves the step +0.0%) while the
re-gather's forward all-gathers still slow the compute they run beside: this set measures the re-gather alone.
PROCESSES: `simcluster.runner.llm_step --mode fsdp --grad-accum 4 [--reshard-after-forward false]` (torchrun, 2 ranks,
2 warm-up and 5 timed steps, --profile 0), one shape per process, order zero2 control control zero2 zero2 control
control zero2. Registered: the product's step (regather off, the wait on), step_ms_regather (the zero2 row with the
regather on, the wait as the product's) and step_ms_nowait (the wait off: the shape's wait at 0), host share, stage-0
memory. Rules N, M, B, P are validation/zero2.py's (imported: nosync.step_verdicts on zero2's PEAK_KEY), R is zero2's
rule A (zero2.adopt) on the regather's two columns, D the verdict with its consequence fixed here; nothing fitted on the
runs after.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402
import zero2  # noqa: E402
import zero2b  # noqa: E402

from simcluster.heldout.registration import pooled_log_sd, set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-zero2c-2026-11-30"
# the GPU-bound FSDP2 accumulation rows of earlier sets whose repeat spread plans the power (development: both sets
# were read before this one was designed): (bundle, its judge keys, its peak key, the GPU-bound shape's seq)
DEVELOPMENT = (("h200x2-zero2-2026-11-30", zero2.JUDGE, zero2.PEAK_KEY, 3456),
               ("h200x2-nosync-2026-11-30", nosync.JUDGE, "max_memory_allocated_bytes", 2112))
PROCESSES = 4          # of each variant
TIMED_STEPS = 5        # per process (device_run.sh --steps)
# (preset, seq, micro_batch, why): seq 1440 from this helper's list (3520, 3552, 3616, 3680, 1440, 1504), new to calibration
SHAPES = (("8b", 1440, 2, "GPU-bound (predicted host share 0.05): zero2 with / without the regather +2.7%, the wait +0.0%; the "
                          "largest regather among the GPU-bound 8b shapes of seqs 3520, 3552, 3616, 3680 at micro-batch 1 "
                          "and 2 and 1440, 1504 at 2 (1440 and 1504 at 1 are host-bound: the wait +7.7%)"),)
SEARCHED = tuple((seq, mb) for seq in (3520, 3552, 3616, 3680, 1440, 1504) for mb in (1, 2))   # the 8b shapes the choice read
JUDGE = zero2.JUDGE
RULES = {k: zero2.RULES[k] for k in ("N", "M", "B", "P")} | {
    "measured": f"rank 0's median step of each process (2 warm-up, {TIMED_STEPS} timed steps of 4 micro-batches); a "
                "process the budget guard skipped or that failed is left out and said",
    "R": "ADOPT rule for the regather (FrameworkSpec.zero2_regather: every micro-batch's forward all-gathers each layer "
         "again, no once-a-step gather): validation/zero2.py's rule A with the zero2 row's step_ms_regather (the regather "
         "on) as the 'with' column and step_ms (the product's, off) as the 'without' one, the same deciding threshold "
         "(adopt_min_pct), limit (max(diff_floor_pct / 100, diff_z x the shape's own pooled sd x sqrt(1 / n_zero2 + 1 / "
         "n_control))) and words: ADOPT / REJECT / UNDECIDED / NO DATA; UNDECIDED (NOISE) if N is ABOVE",
    "D": "NOISE if N is ABOVE the target; else 'REGATHER ADOPTED' / 'REGATHER REJECTED' / 'REGATHER UNDECIDED' by R, "
         "followed by 'step within' or 'step not within' (M) and 'memory met' or 'memory not met' (P). Consequence fixed "
         "before the run: ADOPTED turns FrameworkSpec.zero2_regather on for framework torch's zero 2 (llm/eager.py) and "
         "the FSDP2 frameworks (torchtitan-fsdp2, kempnerforge-fsdp2); REJECTED keeps it off; UNDECIDED (NOISE included) "
         "leaves the product unchanged (off)",
}


def add_keys(row: dict, variant: str) -> None:
    """nosync.rows' extra: the process stem, its reshard_after_forward, PROCESSES, and the zero2 row's step under the
    regather (the wait as the product's: zero2b.step_regather) and without the wait (zero2.step_without_wait)."""
    row["process"] = f"{row['preset']}-{row['seq']}x{row['micro_batch']}-{variant}"
    row["reshard_after_forward"] = variant != "zero2"
    row["processes"] = PROCESSES
    if variant == "zero2":
        shape = (row["preset"], row["seq"], row["micro_batch"], row["mode"])
        row["predicted"]["step_ms_regather"] = zero2b.step_regather(*shape, wait=True)
        row["predicted"]["step_ms_nowait"] = zero2.step_without_wait(*shape)


def read_out(bundle: Path) -> dict:
    """validation/zero2.py's read-out with rule R in place of its A: adopt on the zero2 rows' step_ms_regather (with
    the regather) and step_ms (the product's, without), D's word REGATHER."""
    return zero2.read_out(bundle, rule="R", word="REGATHER", term="the regather", keys=("step_ms_regather", "step_ms"))


def development() -> tuple[float, int, list[str]]:
    """The DEVELOPMENT sets' GPU-bound rows: (their pooled sd of log step over each (shape, variant)'s processes, its
    dof, a line per set with its zero2 / control (or no-sync / sync) ratio measured and registered)."""
    groups, lines = [], []
    for name, keys, peak, seq in DEVELOPMENT:
        _, regs = nosync.read_registration(ROOT / "calibration" / name, keys)
        regs = [r for r in regs if r["seq"] == seq]
        procs, _ = nosync.read_processes(ROOT / "calibration" / name, regs, peak_key=peak)
        logs = {r["variant"]: [math.log(p["step_s"]) for p in procs if p["row"] is r] for r in regs}
        groups += logs.values()
        pred = {r["variant"]: float(r["predicted"]["step_ms"]) for r in regs}
        (a, b) = list(pred)
        lines.append(f"{name} {regs[0]['preset']} {seq}:{regs[0]['micro_batch']}: {a} / {b} measured "
                     f"{math.exp(statistics.mean(logs[a]) - statistics.mean(logs[b])) - 1:+.1%}, registered "
                     f"{pred[a] / pred[b] - 1:+.1%}; sd {pooled_log_sd(list(logs.values()))[0]:.4f}")
    sd, dof = pooled_log_sd(groups)
    return sd, dof, lines


def candidates() -> list[str]:
    """A line per SEARCHED 8b shape: its host share and what the wait and the regather move the zero2 step by (the
    choice of SHAPES, printed by --register)."""
    from simcluster.heldout.eager_regimes import regime_predict

    out = []
    for seq, mb in SEARCHED:
        p = regime_predict("8b", mb, "fsdp-zero2", "h200", microbatches=nosync.MICROBATCHES, seq=seq)
        wait = p["step_ms"] / zero2.step_without_wait("8b", seq, mb, "fsdp-zero2") - 1
        regather = zero2b.step_regather("8b", seq, mb, "fsdp-zero2", wait=True) / p["step_ms"] - 1
        out.append(f"candidate 8b {seq}:{mb}: host share {p['host_share']:.2f}, the wait {wait:+.1%}, the regather {regather:+.1%}")
    return out


def row_line(r: dict) -> str:
    p = r["predicted"]
    extra = (f"  regather {p['step_ms_regather']:8.2f} ms  no wait {p['step_ms_nowait']:8.2f} ms" if r["variant"] == "zero2"
             else "")
    return (f"{r['name']:20} {p['step_ms']:8.2f} ms{extra}  host share {p['host_share']}  memory {p['steady_mem_GiB']:.2f}.."
            f"{p['peak_mem_GiB']:.2f} GiB")


def register(path: Path) -> None:
    nosync.register(path, "validation/zero2c.py --register", SHAPES, zero2.VARIANTS, JUDGE, RULES, add_keys, session=47,
                    line=row_line)
    rows = yaml.safe_load(path.read_text())["rows"]
    z, c = (next(r["predicted"] for r in rows if r["variant"] == v) for v in zero2.VARIANTS)
    gap = math.log(z["step_ms_regather"] / z["step_ms"])
    print(f"zero2 / control registered: regather off {z['step_ms'] / c['step_ms'] - 1:+.1%}, on "
          f"{z['step_ms_regather'] / c['step_ms'] - 1:+.1%}; the gap {gap:.2%} (log); the wait moves zero2 "
          f"{z['step_ms'] / z['step_ms_nowait'] - 1:+.2%}")
    for line in candidates():
        print(line)
    sd, dof, lines = development()
    for line in lines:
        print(f"development: {line}")
    for label, s in (("the development sets' pooled sd", sd), ("5 x that sd", 5 * sd), ("10 x that sd", 10 * sd)):
        limit, chance = zero2b.power(gap, s, PROCESSES, JUDGE)
        print(f"power R ({label} {s:.4f}, {dof} dof): {PROCESSES} + {PROCESSES} processes: limit {limit:.1%} against the "
              f"gap {gap:.1%}: ADOPT where the regather is true (the measured ratio centred on it) with chance {chance:.0%}")


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, zero2.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
