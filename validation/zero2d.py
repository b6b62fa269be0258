"""Issue 44, session 47 (helper zero2d): FSDP2 ZeRO-2's per-micro-batch forward re-gather measured directly. A registered
2 x H200 set (calibration/h200x2-zero2d-2026-11-30): the 8b preset at one GPU-bound shape new to calibration (2912:1),
both variants FSDP2 with reshard_after_forward=False (the model's framework torch zero 2), 4 micro-batches a step
reduce-scattered after every micro-batch: A (regather) FSDP2's default reshard_after_backward=True (each micro-batch's
forward all-gathers every layer again), B (gathered) set_reshard_after_backward(False) on every micro-batch but the
step's last (the parameters stay gathered from one micro-batch to the next: no re-gather). 4 processes a variant, ABBA.

    python validation/zero2d.py --register calibration/h200x2-zero2d-2026-11-30/registered.yaml   # before the call
    python validation/zero2d.py [calibration/h200x2-zero2d-2026-11-30]                            # after: the read-out

Why: the zero2c set read its rule R UNDECIDED because its zero-3 control ran 4.2% longer than registered; here the two
variants differ only by the re-gather, no zero-3 step in the ratio. PROCESSES: `simcluster.runner.llm_step --mode fsdp
--grad-accum 4 --reshard-after-forward false [--reshard-after-backward false]` (torchrun, 2 ranks, 2 warm-up and 3
timed steps, --profile 0), one shape per process, order regather gathered gathered regather regather gathered gathered
regather. Registered: the product's step for both (zero2_regather off, the wait on), the regather row's step with
FrameworkSpec.zero2_regather on (step_ms_regather: validation/zero2b.step_regather), host share, stage-0 memory. Rules
N, M, B, P are validation/zero2.py's (imported), R' is zero2's rule A (zero2.adopt) on A / B: the regather row's
step_ms_regather (the 'with' column) and step_ms (the product's: 'without') over the gathered row's step_ms; D the
verdict with its consequence fixed here; nothing fitted on the runs after.
"""

from __future__ import annotations

import math
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

BUNDLE = ROOT / "calibration" / "h200x2-zero2d-2026-11-30"
DEVELOPMENT = ROOT / "calibration" / "h200x2-zero2c-2026-11-30"   # its process sd plans the power (read before this set)
PROCESSES = 4          # of each variant
TIMED_STEPS = 3        # per process (device_run.sh --steps)
SEQS = (1504, 3552, 3616, 3680, 2912, 2976)   # this helper's seqs, each new to calibration
SEARCHED = tuple((seq, mb) for seq in SEQS for mb in (1, 2))   # the 8b shapes the choice read
# (preset, seq, micro_batch, why)
SHAPES = (("8b", 2912, 1, "GPU-bound (predicted host share 0.04): the regather moves the zero2 step +2.7%, the largest among "
                          "the GPU-bound 8b shapes of seqs 1504, 3552, 3616, 3680, 2912, 2976 at micro-batch 1 and 2 "
                          "(1504:2 ties it but the zero2c set's README names it as a candidate; 1504:1 is host-bound)"),)
VARIANTS = {"regather": "fsdp-zero2", "gathered": "fsdp-zero2"}   # A (FSDP2's default), B (no reshard after backward)
JUDGE = zero2.JUDGE
RULES = {k: zero2.RULES[k] for k in ("N", "M", "B", "P")} | {
    "measured": f"rank 0's median step of each process (2 warm-up, {TIMED_STEPS} timed steps of 4 micro-batches); a "
                "process the budget guard skipped or that failed is left out and said",
    "R": "ADOPT rule for the regather (FrameworkSpec.zero2_regather), on A / B: validation/zero2.py's rule A with the "
         "regather row's step_ms_regather (the regather on) as the 'with' column and its step_ms (the product's, off: "
         "the same as the gathered row's) as the 'without' one, each over the gathered row's step_ms: measured r_m = "
         "exp(mean log step regather - mean log step gathered); the same deciding threshold (adopt_min_pct), limit "
         "(max(diff_floor_pct / 100, diff_z x the shape's own pooled sd x sqrt(1 / n_regather + 1 / n_gathered))) and "
         "words: ADOPT / REJECT / UNDECIDED / NO DATA; UNDECIDED (NOISE) if N is ABOVE",
    "D": "NOISE if N is ABOVE the target; else 'REGATHER ADOPTED' / 'REGATHER REJECTED' / 'REGATHER UNDECIDED' by R, "
         "followed by 'step within' or 'step not within' (M) and 'memory met' or 'memory not met' (P). Consequence fixed "
         "before the run: ADOPTED turns FrameworkSpec.zero2_regather on for framework torch's zero 2 (llm/eager.py) and "
         "the FSDP2 frameworks (torchtitan-fsdp2, kempnerforge-fsdp2); REJECTED and UNDECIDED (NOISE included) leave the "
         "product unchanged (off)",
}


def add_keys(row: dict, variant: str) -> None:
    """nosync.rows' extra: the process stem, FSDP2's two reshard flags the process ran, PROCESSES, and the regather
    row's step under the regather (the wait as the product's: zero2b.step_regather)."""
    row["process"] = f"{row['preset']}-{row['seq']}x{row['micro_batch']}-{variant}"
    row["reshard_after_forward"] = False
    row["reshard_after_backward"] = variant == "regather"
    row["processes"] = PROCESSES
    if variant == "regather":
        row["predicted"]["step_ms_regather"] = zero2b.step_regather(row["preset"], row["seq"], row["micro_batch"],
                                                                    row["mode"], wait=True)


def read_out(bundle: Path) -> dict:
    """validation/zero2.py's read-out with rule R on A / B: adopt on the regather rows' step_ms_regather (with) and
    step_ms (without) over the gathered rows' step_ms, D's word REGATHER."""
    return zero2.read_out(bundle, rule="R", word="REGATHER", term="the regather", keys=("step_ms_regather", "step_ms"),
                          variants=VARIANTS)


def development(bundle: Path = DEVELOPMENT) -> tuple[float, int]:
    """The zero2c set's (or `bundle`'s: validation/zero2e.py reads this set's) pooled sd of log step over its (shape,
    variant)s' processes and its dof (development: read before this set was designed; nothing here is fitted on it)."""
    _, regs = nosync.read_registration(bundle, zero2.JUDGE)
    procs, _ = nosync.read_processes(bundle, regs, peak_key=zero2.PEAK_KEY)
    return pooled_log_sd([[math.log(p["step_s"]) for p in procs if p["row"] is r] for r in regs])


def candidates() -> list[str]:
    """A line per SEARCHED 8b shape: its host share and what the regather moves the zero2 step by (the choice of
    SHAPES, printed by --register)."""
    from simcluster.heldout.eager_regimes import regime_predict

    out = []
    for seq, mb in SEARCHED:
        p = regime_predict("8b", mb, "fsdp-zero2", "h200", microbatches=nosync.MICROBATCHES, seq=seq)
        regather = zero2b.step_regather("8b", seq, mb, "fsdp-zero2", wait=True) / p["step_ms"] - 1
        out.append(f"candidate 8b {seq}:{mb}: host share {p['host_share']:.2f}, the regather {regather:+.1%}")
    return out


def row_line(r: dict) -> str:
    p = r["predicted"]
    extra = f"  regather on {p['step_ms_regather']:8.2f} ms" if r["variant"] == "regather" else ""
    return (f"{r['name']:22} {p['step_ms']:8.2f} ms{extra}  host share {p['host_share']}  memory {p['steady_mem_GiB']:.2f}.."
            f"{p['peak_mem_GiB']:.2f} GiB")


def register(path: Path) -> None:
    nosync.register(path, "validation/zero2d.py --register", SHAPES, VARIANTS, JUDGE, RULES, add_keys, session=47,
                    line=row_line)
    rows = yaml.safe_load(path.read_text())["rows"]
    a, b = (next(r["predicted"] for r in rows if r["variant"] == v) for v in VARIANTS)
    gap = math.log(a["step_ms_regather"] / b["step_ms"])
    print(f"regather / gathered registered: regather off {a['step_ms'] / b['step_ms'] - 1:+.1%}, on "
          f"{a['step_ms_regather'] / b['step_ms'] - 1:+.1%}; the gap {gap:.2%} (log)")
    for line in candidates():
        print(line)
    sd, dof = development()
    for label, s in (("the zero2c set's process sd", sd), ("5 x that sd", 5 * sd), ("10 x that sd", 10 * sd)):
        limit, chance = zero2b.power(gap, s, PROCESSES, JUDGE)
        print(f"power R ({label} {s:.4f}, {dof} dof; development): {PROCESSES} + {PROCESSES} processes: limit {limit:.1%} "
              f"against the gap {gap:.1%}: ADOPT where the regather is true (the measured ratio centred on it) with "
              f"chance {chance:.0%}")


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, zero2.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
