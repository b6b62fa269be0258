"""Issue 44, session 48 (helper zero2f): FSDP2 ZeRO-2's forward re-gather priced exposed (FrameworkSpec.zero2_exposed with
zero2_regather and zero2_fsdp2: llm/fsdp2_zero2.py) as the candidate, shipped and candidate columns on GPU-bound 8b / 3b
shapes. A registered 2 x H200 set (calibration/h200x2-zero2f-2026-11-30): two shapes new to calibration (8b 2592:1, 3b
2592:2), each run as zero2d's two variants, FSDP2 with reshard_after_forward=False and 4 micro-batches a step
reduce-scattered after every micro-batch: A (regather) FSDP2's default reshard_after_backward=True, B (gathered)
--reshard-after-backward false. 3 processes a variant of the 8b shape and 2 of the 3b one, ABBA per shape.

    python validation/zero2f.py --register calibration/h200x2-zero2f-2026-11-30/registered.yaml   # before the call
    python validation/zero2f.py [calibration/h200x2-zero2f-2026-11-30]                            # after: the read-out

Registered per row: the product's step (step_ms: zero2_regather, zero2_fsdp2 and zero2_exposed off, the wait on) and
the candidate's (step_ms_candidate: zero2_fsdp2 on; for A zero2_regather and zero2_exposed on, for B off: the runner's
gathered variant does not re-gather), host share, stage-0 memory. Rules N, M, B, P are validation/zero2.py's (imported;
M on the shipped column), R zero2.adopt on A / B with each column's own ratio under validation/zero2e.py's judge (its
floors), C zero2e.columns (the veto), D zero2e.decide with its consequence fixed here; nothing fitted on the runs after.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402
import zero2  # noqa: E402
import zero2b  # noqa: E402
import zero2d  # noqa: E402
import zero2e  # noqa: E402

from simcluster.heldout.registration import set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-zero2f-2026-11-30"
PROCESSES = {"8b": 3, "3b": 2}   # of each variant per shape: 10 processes, about 215 s (device_run.sh)
TIMED_STEPS = 3        # per process (device_run.sh --steps)
SEQS = (384, 992, 1376, 1888, 2144, 2592, 3200, 3360)   # this helper's seqs, each new to every bundle
PRESETS = ("3b", "8b")
# (preset, seq, micro_batch, why): of each preset the GPU-bound shape (host share <= 0.06) at SEQS x micro-batch 1, 2 with
# the largest candidate regather / gathered ratio (--register prints every searched shape)
SHAPES = (("8b", 2592, 1, "GPU-bound (predicted host share 0.05), the shortest GPU-bound 8b shape at micro-batch 1: the "
                          "candidate's regather the largest of the GPU-bound 8b shapes (+8.0%)"),
          ("3b", 2592, 2, "GPU-bound (predicted host share 0.05), the shortest GPU-bound 3b shape: the candidate's regather "
                          "the largest of the GPU-bound 3b shapes (+4.0%)"))
VARIANTS = zero2e.VARIANTS
JUDGE = zero2e.JUDGE   # zero2.py's judge with zero2e's floors (0.6% floor, 0.8% to decide, column_pct 0.5)
RULES = {k: zero2e.RULES[k] for k in ("N", "M", "B", "P", "measured")} | {
    "R": "validation/zero2.py's rule A on A / B per shape: measured r_m = exp(mean log step regather - mean log step "
         "gathered) against the candidate's ratio (the regather row's step_ms_candidate over the gathered row's: 'with', "
         "every re-gather exposed) and the shipped one's (step_ms over step_ms: 'without', +0.0%), deciding only where the "
         "two differ by >= adopt_min_pct, the same limit and words (ADOPT / REJECT / UNDECIDED / NO DATA; 'not deciding' "
         "lines); UNDECIDED (NOISE) if N is ABOVE",
    "C": zero2e.RULES["C"],
    "D": "NOISE if N is ABOVE the target; else 'EXPOSED REGATHER ADOPTED' where R says ADOPT and C does not say SHIPPED "
         "BETTER, 'EXPOSED REGATHER REJECTED' where R says REJECT or C says SHIPPED BETTER, else 'EXPOSED REGATHER "
         "UNDECIDED'; followed by 'step within' / 'step not within' (M) and 'memory met' / 'memory not met' (P). "
         "Consequence fixed before the run: ADOPTED turns FrameworkSpec.zero2_fsdp2, zero2_regather and zero2_exposed on "
         "for framework torch's zero 2 (llm/eager.py) and the FSDP2 frameworks (torchtitan-fsdp2, kempnerforge-fsdp2), "
         "with the pins that moves (tests/fixtures/llm_pinned.json and tests/test_trust.py rows priced with those "
         "frameworks at zero 2, the eager FSDP zero-2 rows); REJECTED and UNDECIDED (NOISE included) leave the product "
         "unchanged (all three off)",
}


def add_keys_for(candidate, processes: dict):
    """nosync.rows' extra for a set of VARIANTS (this one, validation/zero2g.py's): the process stem, FSDP2's two reshard
    flags the process runs, `processes`[preset] and `candidate`(preset, seq, mb, mode, regather) as step_ms_candidate."""
    def add_keys(row: dict, variant: str) -> None:
        regather = variant == "regather"
        row["process"] = f"{row['preset']}-{row['seq']}x{row['micro_batch']}-{variant}"
        row["reshard_after_forward"] = False
        row["reshard_after_backward"] = regather
        row["processes"] = processes[row["preset"]]
        row["predicted"]["step_ms_candidate"] = candidate(row["preset"], row["seq"], row["micro_batch"], row["mode"], regather)
    return add_keys


def candidate(preset: str, seq: int, mb: int, mode: str, regather: bool) -> float:
    """The row's step (ms) with zero2_regather and zero2_exposed on as the variant re-gathers."""
    return zero2e.step_candidate(preset, seq, mb, mode, regather=regather, exposed=regather)


add_keys = add_keys_for(candidate, PROCESSES)


def read_out(bundle: Path) -> dict:
    """validation/zero2.py's read-out with rule R on each column's A / B ratio, then C and D (zero2e.decide)."""
    out = zero2.read_out(bundle, rule="R", word="EXPOSED REGATHER", term="the candidate",
                         keys=("step_ms_candidate", "step_ms"), variants=VARIANTS, base=("step_ms_candidate", "step_ms"))
    return zero2e.decide(out, bundle, {}, word="EXPOSED REGATHER")


def searched() -> list[str]:
    """A line per 3b and 8b shape of SEQS x micro-batch 1, 2: host share and the candidate's regather / gathered ratio (the
    choice of SHAPES: the GPU-bound ones, host share <= 0.06, with the largest ratio; printed by --register)."""
    from simcluster.heldout.eager_regimes import regime_predict

    out = []
    for preset in PRESETS:
        for seq in SEQS:
            for mb in (1, 2):
                share = regime_predict(preset, mb, "fsdp-zero2", "h200", microbatches=nosync.MICROBATCHES, seq=seq)["host_share"]
                b = zero2e.step_candidate(preset, seq, mb, "fsdp-zero2", regather=False)
                a = zero2e.step_candidate(preset, seq, mb, "fsdp-zero2", regather=True, exposed=True)
                out.append(f"searched {preset} {seq}:{mb}: host share {share:.2f}, regather / gathered candidate {a / b - 1:+.1%}")
    return out


def register(path: Path) -> None:
    import yaml

    nosync.register(path, "validation/zero2f.py --register", SHAPES, VARIANTS, JUDGE, RULES, add_keys, session=48,
                    line=zero2e.row_line)
    sd = max(zero2d.development(zero2d.BUNDLE)[0], zero2d.development(zero2e.BUNDLE)[0])
    for line in power_lines(yaml.safe_load(path.read_text())["rows"], SHAPES, PROCESSES, sd, "the larger of the zero2d and zero2e"):
        print(line)
    for line in searched():
        print(line)


def power_lines(rows: list[dict], shapes: tuple, processes: dict, sd: float, sets: str) -> list[str]:
    """Per registered shape: each column's regather / gathered ratio and candidate / shipped, and rule R's power with the
    process sd `sd` (of `sets` sets; development); validation/zero2g.py's too."""
    out = []
    for preset, seq, mb, _ in shapes:
        a, b = (next(r["predicted"] for r in rows if (r["preset"], r["seq"], r["variant"]) == (preset, seq, v)) for v in VARIANTS)
        gap = math.log(a["step_ms_candidate"] / b["step_ms_candidate"])
        out.append(f"{preset} {seq}:{mb}: regather / gathered shipped {a['step_ms'] / b['step_ms'] - 1:+.1%}, candidate "
                   f"{math.exp(gap) - 1:+.1%}: rule R {'deciding' if gap >= JUDGE['adopt_min_pct'] / 100 else 'not deciding'}; "
                   f"candidate / shipped: regather {a['step_ms_candidate'] / a['step_ms'] - 1:+.1%}, gathered "
                   f"{b['step_ms_candidate'] / b['step_ms'] - 1:+.1%}")
        n = processes[preset]
        limit, chance = zero2b.power(gap, sd, n, JUDGE)
        out.append(f"power R {preset} {seq}:{mb} ({sets} sets' process sd, {sd:.4f}; development): "
                   f"{n} + {n} processes: limit {limit:.2%} against the gap {gap:.2%}: ADOPT where the candidate's column is "
                   f"true with chance {chance:.0%}")
    return out


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, zero2.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
