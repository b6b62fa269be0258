"""Issue 44, session 45: torch DDP gradient accumulation, all-reduced every micro-batch (DDP's default) or once a step
(no_sync). A registered 2 x H200 set (calibration/h200x2-ddpaccum-2026-11-30): two GPU-bound shapes new to calibration
whose bucket all_reduces outlast part of their backward over NVLink, each run with 4 micro-batches per step under both,
two processes each. It checks session 45's ddpaccum change (llm/grad_sync.py: every synced DDP backward is finalized as
the last one is, its compute stream waiting for its all_reduces, its bucket copies run each time).

    python validation/ddpaccum.py --register calibration/h200x2-ddpaccum-2026-11-30/registered.yaml   # before the call
    python validation/ddpaccum.py [calibration/h200x2-ddpaccum-2026-11-30]                            # after: the read-out

PROCESSES: `simcluster.runner.llm_step --mode ddp --grad-accum 4 [--no-sync]` (torchrun, 2 ranks, 3 warm-up and 6
timed steps, each step 4 micro-batches, --profile 0), one shape per process; round 1 each shape sync then no-sync,
round 2 no-sync then sync. Registered: the product's step (heldout/eager_regimes.registered_row), host share and stage-0
memory of each (shape, variant), the sync rows' step as the model before the change priced it (step_ms_before), and
the rules below. The process reading and rules N, M, B, P are validation/nosync.py's (imported); S's limit is derived
from N's measured noise; nothing fitted on the runs after.

For reuse (said after the read, cold read C45 item 9): S's limit pools N's sd over every shape and process, so one noisy
shape (2b's round split, sd 0.050) set a 10-point limit for the quiet one too (3b, sd about 0.004) and S could not
decide between the models. The next difference rule takes each shape's own sd, with the pooled sd as a floor only where
a shape has too few processes to estimate its own. This registration's rules are unchanged.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402

from simcluster.heldout.registration import print_verdicts, set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-ddpaccum-2026-11-30"
MICROBATCHES, PROCESSES = nosync.MICROBATCHES, nosync.PROCESSES
# (preset, seq, micro_batch, why): GPU-bound shapes whose DDP all_reduce (fp32 buckets over NVLink) is large beside
# their backward, so the wait after each synced backward shows; seqs and tokens new to calibration
SHAPES = (("3b", 2176, 1, "GPU-bound (predicted host share 0.04); sync / no-sync +20.5% (before the change +10.6%)"),
          ("2b", 2752, 1, "GPU-bound (predicted host share 0.09); sync / no-sync +14.9% (before the change +9.7%)"))
VARIANTS = {"sync": "ddp+sync", "nosync": "ddp+nosync"}   # process stem suffix -> heldout/eager_regimes.layout_of mode
JUDGE = nosync.JUDGE | {"diff_floor_pct": 2.0, "diff_z": 2.0}
RULES = {k: nosync.RULES[k] for k in ("measured", "N", "M", "B", "P")} | {
    "S": "per shape, the sync step over the no-sync one: measured r_m = exp(mean log step sync - mean log step nosync), "
         "registered r_p (the rows' predicted steps); limit = max(diff_floor_pct / 100, diff_z x N's pooled sd x "
         "sqrt(1 / n_sync + 1 / n_nosync)) (the sd of log r_m that process noise alone gives, taken at twice: never "
         "below the noise); MET if r_m > 1 and |log r_m - log r_p| <= limit, else NOT MET (its size said); also said: "
         "whether log r_m is nearer log r_p or the sync row's step_ms_before over the no-sync step (the model before "
         "the ddpaccum change); NO DATA without a process of each variant",
    "D": "NOISE if N is ABOVE the target; else MET if M is within, P met and S MET on every shape with data; "
         "'MODEL (DDP's per-micro-batch terms)' if S is NOT MET on a shape (grad_sync.py's wait after each synced "
         "backward and its bucket copies); 'MODEL (the step)' if S is MET on every shape but M is not within; 'MEMORY' "
         "if only P fails",
}


def before_change(preset: str, seq: int, mb: int, mode: str) -> float:
    """The row's step (ms) as the model priced it before the ddpaccum change (no DDP per-backward wait or copies)."""
    from simcluster.heldout.eager_regimes import regime_predict

    with mock.patch("simcluster.llm.grad_sync.ddp_every_micro_batch", lambda *a: False):
        return regime_predict(preset, mb, mode, "h200", microbatches=MICROBATCHES, seq=seq)["step_ms"]


def add_before(row: dict, variant: str) -> None:
    """A sync row's step before the change (nosync.rows' extra)."""
    if variant == "sync":
        row["predicted"]["step_ms_before"] = before_change(row["preset"], row["seq"], row["micro_batch"], row["mode"])


def register(path: Path) -> None:
    nosync.register(path, "validation/ddpaccum.py --register", SHAPES, VARIANTS, JUDGE, RULES, add_before)


def difference(procs: list[dict], regs: list[dict], judge: dict, sd: float | None) -> tuple[bool | None, list[str]]:
    """Rule S per shape: (every shape with data MET, or None without any; a line per shape)."""
    lines, met = [], []
    for preset, seq, mb in sorted({(r["preset"], r["seq"], r["micro_batch"]) for r in regs}):
        here = [r for r in regs if (r["preset"], r["seq"], r["micro_batch"]) == (preset, seq, mb)]
        by = {v: [math.log(p["step_s"]) for p in procs if p["row"] in here and p["row"]["variant"] == v] for v in VARIANTS}
        label = f"{preset} {seq}:{mb}"
        if not by["sync"] or not by["nosync"]:
            lines.append(f"{label}: NO DATA (a variant did not run)")
            continue
        pred = {r["variant"]: r["predicted"] for r in here}
        log_m = statistics.mean(by["sync"]) - statistics.mean(by["nosync"])
        log_p = math.log(float(pred["sync"]["step_ms"]) / float(pred["nosync"]["step_ms"]))
        log_b = math.log(float(pred["sync"]["step_ms_before"]) / float(pred["nosync"]["step_ms"]))
        noise = judge["diff_z"] * (sd or 0.0) * math.sqrt(1 / len(by["sync"]) + 1 / len(by["nosync"]))
        limit = max(judge["diff_floor_pct"] / 100, noise)
        ok = log_m > 0 and abs(log_m - log_p) <= limit
        met.append(ok)
        nearer = "the change" if abs(log_m - log_p) <= abs(log_m - log_b) else "the model before it"
        lines.append(f"{label}: {'MET' if ok else 'NOT MET'}: sync / no-sync measured {math.exp(log_m) - 1:+.1%}, registered "
                     f"{math.exp(log_p) - 1:+.1%} (before the change {math.exp(log_b) - 1:+.1%}; nearer {nearer}; limit "
                     f"{limit:.1%}{' from the noise' if noise > judge['diff_floor_pct'] / 100 else ' (the floor)'})")
    return (all(met) if met else None), lines


def read_out(bundle: Path) -> dict:
    judge, regs = nosync.read_registration(bundle, JUDGE)
    procs, left = nosync.read_processes(bundle, regs, "ddp")
    verdicts, sd, above, within, mem_met = nosync.step_verdicts(procs, regs, judge)
    s_met, lines = difference(procs, regs, judge, sd)
    verdicts["S"] = " | ".join(lines)
    verdicts["D"] = ("NOISE: process noise alone exceeds the target" if above else
                     "MODEL (DDP's per-micro-batch terms): the sync / no-sync ratio missed on a shape" if s_met is False else
                     "NO DATA" if s_met is None or within is None else
                     "MODEL (the step): the ratio met, the step itself not within" if not within else
                     "MEMORY: steps met, memory not" if not mem_met else "MET")
    return {"procs": procs, "left": left, "verdicts": verdicts}


def show(result: dict) -> None:
    nosync.show({**result, "verdicts": {}, "left": []})
    print_verdicts(result["verdicts"], result["left"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
