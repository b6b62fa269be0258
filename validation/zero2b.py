"""Issue 44, session 46 (helper zero2b): FSDP2 ZeRO-2's per-micro-batch wait, decided with a set powered for it. A
registered 2 x H200 set (calibration/h200x2-zero2b-2026-11-30): the 8b preset at one shape new to calibration (448:1),
run under reshard_after_forward=False (zero2: framework torch zero 2) and under FSDP2's default (control: zero 3), 4
micro-batches a step reduce-scattered after every micro-batch, 4 processes of each variant alternated ABBA.

    python validation/zero2b.py --register calibration/h200x2-zero2b-2026-11-30/registered.yaml   # before the call
    python validation/zero2b.py [calibration/h200x2-zero2b-2026-11-30]                            # after: the read-out

Why a second set: session 46's zero2 set (validation/zero2.py) left rule A UNDECIDED on 8b seq 704 x 1, its limit from that
shape's own noise (9.8%, one repeat per variant) wider than the with / without gap (7.5% in log). This set runs one
shape only (the model's gap is flat at 7.5-7.6% over the 8b host-bound shapes: POWER below), 4 processes per variant
and 7 timed steps per process (the zero2 set's 8b steps spread 7% inside a process: more steps narrow a process's
median). PROCESSES: `simcluster.runner.llm_step --mode fsdp --grad-accum 4 [--reshard-after-forward false]` (torchrun,
2 ranks, 2 warm-up and 7 timed steps, --profile 0), one shape per process, order zero2 control control zero2 zero2
control control zero2. Registered: as validation/zero2.py's (the product's step with the wait, step_ms_nowait without
it, host share, stage-0 memory); its read-out and rules N, M, B, P, A, D are zero2.py's (imported), A's limit from this
set's own noise; nothing fitted on the runs after.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402
import zero2  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import pooled_log_sd, set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-zero2b-2026-11-30"
DEVELOPMENT = ROOT / "calibration" / "h200x2-zero2-2026-11-30"   # the zero2 set: its 8b sd plans the power (development)
PROCESSES = 4          # of each variant
TIMED_STEPS = 7        # per process (device_run.sh --steps); the zero2 set's 5
# (preset, seq, micro_batch, why): seq 448 from this helper's list (448, 576, 1100, 3520), new to calibration
SHAPES = (("8b", 448, 1, "the wait matters: 8B's fp32 reduce-scatter long against a 448-token micro-batch (predicted host "
                         "share 0.63; zero2 with / without the wait +7.9%, the largest among the 8b shapes of seq 448 and "
                         "576 at micro-batch 1 and 2, seq 1100 and 3520 at 1)"),)
JUDGE = zero2.JUDGE
RULES = {k: v for k, v in zero2.RULES.items() if k != "D"} | {
    "measured": f"rank 0's median step of each process (2 warm-up, {TIMED_STEPS} timed steps of 4 micro-batches); a "
                "process the budget guard skipped or that failed is left out and said",
    "G": "rule A's test under the candidate zero2_regather (FSDP2 all-gathers every layer again in each micro-batch's "
         "forward: llm/work.py, OFF in the product): the zero2 row's step_ms_regather (with the wait) and "
         "step_ms_regather_nowait (without) in place of step_ms and step_ms_nowait, the same limit: ADOPT / REJECT / "
         "UNDECIDED / NO DATA, UNDECIDED (NOISE) if N is ABOVE. Said beside D, not changing it: D stays rule A's word "
         "(the product's pricing); where A and G disagree the wait's reading depends on the regather, for the lead",
    "D": zero2.RULES["D"],
}


def step_regather(preset: str, seq: int, mb: int, mode: str, wait: bool) -> float:
    """The zero2 row's step (ms) under the candidate FrameworkSpec.zero2_regather (OFF in the product: every
    micro-batch's forward all-gathers each layer again, as FSDP2 does), with or without the per-micro-batch wait."""
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager

    with eager.torch_framework_as(lambda fw: replace(fw, zero2_regather=True, zero2_wait=fw.zero2_wait and wait)):
        return regime_predict(preset, mb, mode, "h200", microbatches=nosync.MICROBATCHES, seq=seq)["step_ms"]


def add_keys(row: dict, variant: str) -> None:
    """nosync.rows' extra: the process stem, its reshard_after_forward, PROCESSES, and the zero2 row's step without
    the wait (zero2.step_without_wait) and under the candidate regather with and without it."""
    row["process"] = f"{row['preset']}-{row['seq']}x{row['micro_batch']}-{variant}"
    row["reshard_after_forward"] = variant != "zero2"
    row["processes"] = PROCESSES
    if variant == "zero2":
        shape = (row["preset"], row["seq"], row["micro_batch"], row["mode"])
        row["predicted"]["step_ms_nowait"] = zero2.step_without_wait(*shape)
        row["predicted"]["step_ms_regather"] = step_regather(*shape, wait=True)
        row["predicted"]["step_ms_regather_nowait"] = step_regather(*shape, wait=False)


def regather_rule(result: dict, bundle: Path) -> str:
    """Rule G: zero2.adopt on the zero2 rows' step_ms_regather (with the wait) and step_ms_regather_nowait (without);
    UNDECIDED (NOISE) where N is ABOVE."""
    keys = ("step_ms_regather", "step_ms_regather_nowait")
    if any(not isinstance(r["predicted"].get(k), (int, float)) for r in result["regs"] if r["variant"] == "zero2" for k in keys):
        raise SimclusterError(f"{bundle / 'registered.yaml'}: a zero2 row without predicted.step_ms_regather / "
                              "step_ms_regather_nowait (ms)")
    word, lines = zero2.adopt(result["procs"], result["regs"], result["judge"], result["sd"], keys=keys)
    if result["verdicts"]["D"].startswith("NOISE"):
        word = "UNDECIDED (NOISE)"
    return f"{word} | " + " | ".join(lines)


def read_out(bundle: Path) -> dict:
    """zero2.read_out (rules N, M, B, P, A, D), with rule G said before D."""
    out = zero2.read_out(bundle)
    g = regather_rule(out, bundle)
    out["verdicts"] = {k: v for k, v in out["verdicts"].items() if k != "D"} | {"G": g, "D": out["verdicts"]["D"]}   # G before D (printed in order)
    return out


def development_sd() -> float:
    """The zero2 set's 8b seq 704 x 1 pooled sd of log step over its two variants (one repeat each), scaled from its 5 timed
    steps to TIMED_STEPS as if all of it were step jitter inside a process (the low end; unscaled is the high end)."""
    judge, regs = nosync.read_registration(DEVELOPMENT, zero2.JUDGE)
    procs, _ = nosync.read_processes(DEVELOPMENT, [r for r in regs if r["preset"] == "8b"], peak_key=zero2.PEAK_KEY)
    sd, _ = pooled_log_sd([[math.log(p["step_s"]) for p in procs if p["row"]["variant"] == v] for v in zero2.VARIANTS])
    return sd


def power(gap: float, sd: float, n: int = PROCESSES, judge: dict = zero2.JUDGE) -> tuple[float, float]:
    """(rule A's limit, the chance it says ADOPT where the truth is the with-wait ratio) for a with / without gap (log)
    and a per-process sd of log step, n processes per variant: the measured log ratio ~ Normal(truth, sd sqrt(2 / n)),
    ADOPT where it lies within the limit of the with-wait ratio and beyond it of the without one (sd taken as known)."""
    se = sd * math.sqrt(2 / n)
    limit = max(judge["diff_floor_pct"] / 100, judge["diff_z"] * se)
    z = statistics.NormalDist()
    return limit, max(0.0, z.cdf((gap - limit) / se) - z.cdf(-limit / se))


def register(path: Path) -> None:
    nosync.register(path, "validation/zero2b.py --register", SHAPES, zero2.VARIANTS, JUDGE, RULES, add_keys, session=46)
    z = next(r["predicted"] for r in yaml.safe_load(path.read_text())["rows"] if r["variant"] == "zero2")
    sd = development_sd()
    for rule, gap in (("A", math.log(z["step_ms"] / z["step_ms_nowait"])),
                      ("G", math.log(z["step_ms_regather"] / z["step_ms_regather_nowait"]))):
        for label, s in (("unscaled", sd), (f"scaled to {TIMED_STEPS} steps", sd * math.sqrt(5 / TIMED_STEPS))):
            limit, p = power(gap, s)
            print(f"power {rule} ({label}; development: the zero2 set's 8b sd {sd:.3f}): sd {s:.3f}, {PROCESSES} + "
                  f"{PROCESSES} processes: limit {limit:.1%} against the with / without gap {gap:.1%} (log): ADOPT where "
                  f"the wait is true with chance {p:.0%}")


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, zero2.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
