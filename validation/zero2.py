"""Issue 44, session 46: FSDP2 with reshard_after_forward=False (ZeRO-2's layout in torch) and 4 micro-batches reduced
every micro-batch: does the next forward wait for the reduce-scatters? A registered 2 x H200 set
(calibration/h200x2-zero2-2026-11-30): three shapes new to calibration, each run under reshard_after_forward=False
(zero2: framework torch zero 2) and under FSDP2's default (control: zero 3), 4 micro-batches a step, gradients
reduce-scattered after every micro-batch.

    python validation/zero2.py --register calibration/h200x2-zero2-2026-11-30/registered.yaml   # before the call
    python validation/zero2.py [calibration/h200x2-zero2-2026-11-30]                            # after: the read-out

PROCESSES: `simcluster.runner.llm_step --mode fsdp --grad-accum 4 [--reshard-after-forward false]` (torchrun, 2 ranks,
2 warm-up and 5 timed steps per shape, --profile 0); 8b one shape per process, 0.5b two shapes per process (2496:1 then
3456:4, each row naming its process); round 1 each preset zero2 then control, round 2 control then zero2, round 3 the
8b zero2 once more (the row the wait rule reads, 3 processes). Registered: the product's step (heldout/eager_regimes.
registered_row: framework torch, the product's host fits; zero 2's with the per-micro-batch wait, llm/grad_sync.py),
the zero2 rows' step without the wait (step_ms_nowait: the model's ZeRO-2 path as it was, the reduce-scatter running
into the next forward), host share and stage-0 memory, and the rules below. The process reading and rules N, M, B, P
are validation/nosync.py's (imported; P on the timed steps' peak, A's limit from each shape's own noise: cold read C45
item 9 on the ddpaccum set); nothing fitted on the runs after.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402
from ddpaccum import show  # noqa: E402  (nosync's process lines, then this set's verdicts)

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import pooled_log_sd, set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-zero2-2026-11-30"
# (preset, seq, micro_batch, why): seqs new to calibration (session 46's 704, 2496, 3456)
SHAPES = (("8b", 704, 1, "the wait matters: 8B's fp32 reduce-scatter long against a 704-token micro-batch (predicted host "
                         "share 0.63; zero2 with / without the wait +7.8%)"),
          ("0.5b", 2496, 1, "host-bound small (predicted host share 0.95; the wait +0.1%)"),
          ("0.5b", 3456, 4, "GPU-bound (predicted host share 0.07; the wait +0.1%)"))
PROCESS = {"8b": "{preset}-{seq}x{mb}-{variant}", "0.5b": "0.5b-2496x1+3456x4-{variant}"}   # the process file's stem
ZERO2_PROCESSES = {"8b": 3}   # the zero2 rows with a third process (else nosync.PROCESSES)
VARIANTS = {"zero2": "fsdp-zero2", "control": "fsdp"}   # process stem suffix -> heldout/eager_regimes.layout_of mode
JUDGE = {k: nosync.JUDGE[k] for k in ("target_pct", "mem_pct", "bias_band")} | {"adopt_min_pct": 2.0, "diff_floor_pct": 2.0,
                                                                                "diff_z": 2.0}
PEAK_KEY = "max_memory_allocated_timed_bytes"   # the timed steps' own peak (the steady one, first steps apart: C45 item 9)
RULES = {k: nosync.RULES[k] for k in ("N", "M", "B")} | {
    "P": "rank 0's peak over the shape's timed steps (max_memory_allocated_timed_bytes: the steady peak, the warm-up steps "
         "apart) of every process within mem_pct of the registered range [steady_mem_GiB, peak_mem_GiB] (0 inside) -> "
         "'memory met', else 'not met'",
    "measured": "rank 0's median step of each (process, shape) (2 warm-up, 5 timed steps of 4 micro-batches per shape); a "
                "process the budget guard skipped or that failed is left out and said",
    "A": "ADOPT rule for the per-micro-batch wait, on each shape whose registered zero2 step with the wait (step_ms) and "
         "without it (step_ms_nowait) differ by >= adopt_min_pct in log (the deciding shapes): measured r_m = exp(mean log "
         "step zero2 - mean log step control), registered r_w = step_ms(zero2) / step_ms(control) and r_n = "
         "step_ms_nowait(zero2) / step_ms(control); limit = max(diff_floor_pct / 100, diff_z x sd x sqrt(1 / n_zero2 + 1 / "
         "n_control)), sd the shape's own pooled sd of log step over its two variants (N's pooled sd over every shape only "
         "where the shape has no repeat: cold read C45 item 9); ADOPT if |log r_m - log r_w| <= limit < |log r_m - log r_n|, REJECT if |log r_m - "
         "log r_n| <= limit < |log r_m - log r_w|, else UNDECIDED (within both limits, or neither: its sign and size "
         "said); over the deciding shapes: ADOPT (or REJECT) if every one says so, else UNDECIDED; NO DATA without a "
         "process of each variant; UNDECIDED (NOISE) if N is ABOVE",
    "D": "NOISE if N is ABOVE the target; else 'WAIT ADOPTED' / 'WAIT REJECTED' / 'WAIT UNDECIDED' by A, followed by "
         "'step within' or 'step not within' (M) and 'memory met' or 'memory not met' (P). ADOPTED keeps zero2_wait on "
         "for framework torch's zero 2 (FSDP2) and is the measured case for the wait the model's other frameworks' "
         "ZeRO-2 path leaves off; REJECTED turns it off for torch (the runs showed the reduce-scatter running into the "
         "next forward, against the cited source)",
}


def step_without_wait(preset: str, seq: int, mb: int, mode: str) -> float:
    """The zero2 row's step (ms) with framework torch's zero2_wait off: the ZeRO-2 path as before session 46."""
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager

    with eager.torch_framework_as(lambda fw: replace(fw, zero2_wait=False)):
        return regime_predict(preset, mb, mode, "h200", microbatches=nosync.MICROBATCHES, seq=seq)["step_ms"]


def add_keys(row: dict, variant: str) -> None:
    """nosync.rows' extra: the process that times the row, its reshard_after_forward, and the zero2 rows' step without
    the wait and third process where ZERO2_PROCESSES has it."""
    preset, seq, mb = row["preset"], row["seq"], row["micro_batch"]
    row["process"] = PROCESS[preset].format(preset=preset, seq=seq, mb=mb, variant=variant)
    row["reshard_after_forward"] = variant != "zero2"
    if variant == "zero2":
        row["processes"] = ZERO2_PROCESSES.get(preset, nosync.PROCESSES)
        row["predicted"]["step_ms_nowait"] = step_without_wait(preset, seq, mb, row["mode"])


def register(path: Path) -> None:
    nosync.register(path, "validation/zero2.py --register", SHAPES, VARIANTS, JUDGE, RULES, add_keys, session=46)


def adopt(procs: list[dict], regs: list[dict], judge: dict, sd: float | None, term: str = "the wait",
          keys: tuple[str, str] = ("step_ms", "step_ms_nowait"), variants: tuple[str, str] = tuple(VARIANTS),
          base: tuple[str, str] = ("step_ms", "step_ms")) -> tuple[str, list[str]]:
    """Rule A: (ADOPT, REJECT, UNDECIDED or NO DATA over the deciding shapes; a line per shape): the ratio of the
    variants[0] row (zero2) over the variants[1] row (control), the first's keys[0] the step with `term`, keys[1]
    without it, over the second's base[0] and base[1] (validation/zero2c.py's rule R: the regather's columns; zero2d.py's:
    its own two variants; zero2e.py's: each column's own ratio, base its candidate and shipped steps)."""
    a, b = variants
    lines, says = [], []
    for preset, seq, mb in sorted({(r["preset"], r["seq"], r["micro_batch"]) for r in regs}):
        here = {r["variant"]: r for r in regs if (r["preset"], r["seq"], r["micro_batch"]) == (preset, seq, mb)}
        z, c = here[a]["predicted"], here[b]["predicted"]
        log_w = math.log(float(z[keys[0]]) / float(c[base[0]]))
        log_n = math.log(float(z[keys[1]]) / float(c[base[1]]))
        label = f"{preset} {seq}:{mb}"
        if abs(log_w - log_n) < judge["adopt_min_pct"] / 100:
            lines.append(f"{label}: not deciding ({term} moves it {math.exp(log_w - log_n) - 1:+.1%})")
            continue
        by = {v: [math.log(p["step_s"]) for p in procs if p["row"] is here[v]] for v in variants}
        if not by[a] or not by[b]:
            lines.append(f"{label}: NO DATA (a variant did not run)")
            continue
        log_m = statistics.mean(by[a]) - statistics.mean(by[b])
        own = pooled_log_sd([by[a], by[b]])[0]   # the shape's own repeats; N's pooled sd where none
        noise = judge["diff_z"] * (own if own is not None else sd or 0.0) * math.sqrt(1 / len(by[a]) + 1 / len(by[b]))
        limit = max(judge["diff_floor_pct"] / 100, noise)
        to_w, to_n = abs(log_m - log_w), abs(log_m - log_n)
        say = "ADOPT" if to_w <= limit < to_n else "REJECT" if to_n <= limit < to_w else "UNDECIDED"
        says.append(say)
        lines.append(f"{label}: {say}: {a} / {b} measured {math.exp(log_m) - 1:+.1%}, registered with {term} "
                     f"{math.exp(log_w) - 1:+.1%}, without {math.exp(log_n) - 1:+.1%} (limit {limit:.1%}"
                     f"{' from the noise' if noise > judge['diff_floor_pct'] / 100 else ' (the floor)'})")
    verdict = ("NO DATA" if not says else says[0] if len(set(says)) == 1 else "UNDECIDED")
    return verdict, lines


WORD = {"ADOPT": "ADOPTED", "REJECT": "REJECTED"}   # rule D's words for rule A's


def read_out(bundle: Path, rule: str = "A", word: str = "WAIT", term: str = "the wait",
             keys: tuple[str, str] = ("step_ms", "step_ms_nowait"), variants: dict = VARIANTS,
             base: tuple[str, str] = ("step_ms", "step_ms")) -> dict:
    """Rules N, M, B, P and `rule` (adopt on the first variant's rows' `keys` over the second's step, said with `term`),
    then D (`word` and rule's verdict): the wait's rule A by default; validation/zero2c.py's rule R on the regather's
    columns; validation/zero2d.py's with its own `variants` (name -> mode)."""
    first = next(iter(variants))
    judge, regs = nosync.read_registration(bundle, JUDGE)
    for key in keys:
        if any(not isinstance(r["predicted"].get(key), (int, float)) for r in regs if r["variant"] == first):
            raise SimclusterError(f"{bundle / 'registered.yaml'}: a {first} row without predicted.{key} (ms)")
    procs, left = nosync.read_processes(bundle, regs, peak_key=PEAK_KEY)
    verdicts, sd, above, within, mem_met = nosync.step_verdicts(procs, regs, judge, variants)
    said, lines = adopt(procs, regs, judge, sd, term, keys, tuple(variants), base)
    if above:
        said = "UNDECIDED (NOISE)"
    verdicts[rule] = f"{said} | " + " | ".join(lines)
    verdicts["D"] = ("NOISE: process noise alone exceeds the target" if above else
                     f"{word} {WORD.get(said, said)}; step "
                     f"{'NO DATA' if within is None else 'within' if within else 'not within'}; memory "
                     f"{'met' if mem_met else 'not met'}")
    return {"procs": procs, "left": left, "verdicts": verdicts, "regs": regs, "sd": sd, "judge": judge}   # zero2b.py


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
