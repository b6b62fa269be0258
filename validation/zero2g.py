"""Issue 44, session 48 (helper zero2g): FSDP2 ZeRO-2 as one candidate of four switches, all on (FrameworkSpec.zero2_fsdp2,
zero2_regather, zero2_exposed and zero2_bf16_weights: llm/fsdp2_zero2.py), shipped and candidate columns on GPU-bound
shapes. zero2f's set read the exposed re-gather right (rule R) and was vetoed by C: the gathered step ran 5.6-8.0% faster
than every column; zero2g's term-by-term study (studies/zero2g_terms.py, development) names the forward's autocast weight
casts, which FSDP2's bf16 parameters never run (zero2_bf16_weights). A registered 2 x H200 set
(calibration/h200x2-zero2g-2026-11-30): two shapes new to calibration, each run as zero2d's two variants, FSDP2 with
reshard_after_forward=False and 4 micro-batches a step reduce-scattered after every micro-batch: A (regather) FSDP2's
default reshard_after_backward=True, B (gathered) --reshard-after-backward false; ABBA per shape.

    python validation/zero2g.py --register calibration/h200x2-zero2g-2026-11-30/registered.yaml   # before the call
    python validation/zero2g.py [calibration/h200x2-zero2g-2026-11-30]                            # after: the read-out

Registered per row: the product's step (step_ms: the four switches off, the wait on) and the candidate's
(step_ms_candidate: zero2_fsdp2 and zero2_bf16_weights on; for A zero2_regather and zero2_exposed on, for B off: the
runner's gathered variant does not re-gather), host share, stage-0 memory. Rules N, M, B, P are validation/zero2.py's
(imported; M on the shipped column), R and C validation/zero2f.py's (zero2.adopt on each column's A / B ratio under
validation/zero2e.py's judge; zero2e.columns), D zero2e.decide with its consequence fixed here; nothing fitted on the
runs after.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402
import zero2  # noqa: E402
import zero2d  # noqa: E402
import zero2e  # noqa: E402
import zero2f  # noqa: E402

from simcluster.heldout.registration import set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-zero2g-2026-11-30"
PROCESSES = {"8b": 2, "3b": 2}   # of each variant per shape: 8 processes, about 170 s (device_run.sh)
TIMED_STEPS = 3        # per process (device_run.sh --steps)
SEQS = (1952, 2272, 2656, 2720, 2784, 2848, 3424, 3488)   # this helper's seqs, each new to every bundle
PRESETS = ("3b", "8b")
WORD = "FSDP2 ZERO-2 CANDIDATE"
# (preset, seq, micro_batch, why): of each preset the GPU-bound shape (host share <= 0.055) at SEQS x micro-batch 1, 2 whose
# candidate moves the gathered step most from the shipped one (--register prints every searched shape)
SHAPES = (("8b", 2656, 1, "GPU-bound, the 8b shape of SEQS x micro-batch 1, 2 (host share <= 0.055) whose candidate moves the "
                          "gathered step most from the shipped one (--register's searched lines)"),
          ("3b", 2656, 2, "GPU-bound, the 3b shape of SEQS x micro-batch 1, 2 (host share <= 0.055) whose candidate moves the "
                          "gathered step most from the shipped one (--register's searched lines)"))
VARIANTS = zero2e.VARIANTS
JUDGE = zero2e.JUDGE   # zero2.py's judge with zero2e's floors (0.6% floor, 0.8% to decide, column_pct 0.5)
RULES = {k: zero2f.RULES[k] for k in ("N", "M", "B", "P", "measured", "R", "C")} | {
    "D": f"NOISE if N is ABOVE the target; else '{WORD} ADOPTED' where R says ADOPT and C says CANDIDATE BETTER or TIE, "
         f"'{WORD} REJECTED' where R says REJECT or C says SHIPPED BETTER, else '{WORD} UNDECIDED'; followed by 'step "
         "within' / 'step not within' (M) and 'memory met' / 'memory not met' (P). Consequence fixed before the run: "
         "ADOPTED turns FrameworkSpec.zero2_fsdp2, zero2_regather, zero2_exposed and zero2_bf16_weights on for framework "
         "torch's zero 2 (llm/eager.py) and the FSDP2 frameworks (torchtitan-fsdp2, kempnerforge-fsdp2; their cast_bytes is "
         "0, so zero2_bf16_weights moves nothing there), with the pins that moves (tests/fixtures/llm_pinned.json and "
         "tests/test_trust.py rows priced with those frameworks at zero 2, the eager FSDP zero-2 rows); the patch is "
         "/work/device-requests/zero2g-adopt.patch. REJECTED and UNDECIDED (NOISE included) leave the product unchanged "
         "(all four off)",
}


def candidate(preset: str, seq: int, mb: int, mode: str, regather: bool) -> float:
    """The row's step (ms) with the four switches on (zero2_regather and zero2_exposed as the variant re-gathers)."""
    return zero2e.step_candidate(preset, seq, mb, mode, regather=regather, exposed=regather, bf16_weights=True)


add_keys = zero2f.add_keys_for(candidate, PROCESSES)   # nosync.rows' extra, zero2f's with this set's candidate


def read_out(bundle: Path) -> dict:
    """validation/zero2.py's read-out with rule R on each column's A / B ratio, then C and D (zero2e.decide)."""
    out = zero2.read_out(bundle, rule="R", word=WORD, term="the candidate",
                         keys=("step_ms_candidate", "step_ms"), variants=VARIANTS, base=("step_ms_candidate", "step_ms"))
    return zero2e.decide(out, bundle, {}, word=WORD)


def searched() -> list[str]:
    """A line per 3b and 8b shape of SEQS x micro-batch 1, 2: host share, the candidate's regather / gathered ratio and
    its gathered step against the shipped one (the choice of SHAPES; printed by --register)."""
    from simcluster.heldout.eager_regimes import regime_predict

    out = []
    for preset in PRESETS:
        for seq in SEQS:
            for mb in (1, 2):
                got = regime_predict(preset, mb, "fsdp-zero2", "h200", microbatches=nosync.MICROBATCHES, seq=seq)
                b = candidate(preset, seq, mb, "fsdp-zero2", False)
                a = candidate(preset, seq, mb, "fsdp-zero2", True)
                out.append(f"searched {preset} {seq}:{mb}: host share {got['host_share']:.3f}, regather / gathered candidate "
                           f"{a / b - 1:+.1%}, gathered candidate / shipped {b / got['step_ms'] - 1:+.1%}")
    return out


def register(path: Path) -> None:
    import yaml

    nosync.register(path, "validation/zero2g.py --register", SHAPES, VARIANTS, JUDGE, RULES, add_keys, session=48,
                    line=zero2e.row_line)
    sd = max(zero2d.development(zero2d.BUNDLE)[0], zero2d.development(zero2e.BUNDLE)[0],
             zero2d.development(zero2f.BUNDLE)[0])
    for line in zero2f.power_lines(yaml.safe_load(path.read_text())["rows"], SHAPES, PROCESSES, sd,
                                   "the largest of the zero2d, zero2e and zero2f"):
        print(line)
    for line in searched():
        print(line)


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, zero2.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
