"""Issue 44, session 40 (fsdp2time): FSDP2's step time with the bf16 block -- the kept model (FSDP2's residual stream
priced at TORCH_AMP's 4 B, autocast's input casts, the generic eager copies) against the candidate eager.bf16_step
(residual_bytes 2, no casts, no residual-add backward cast, no attention-output / q / k / v gradient copies), by a
registered 2 x H200 set (calibration/h200x2-eager-fsdpstep-2026-11-30).

    python validation/eager_fsdp_step.py [calibration/BUNDLE]   # the read-out, from the registered predictions

Read once: KEEP (the bundle's README "## Result"). The candidate left the product in session 41 (REMOVED_AT): the
read-out takes both columns (`today`, `candidate`) from registered.yaml as registered at 548a3ae0, never recomputed,
and `--register` refuses in one line naming that file.

ROWS: `simcluster.runner.llm_step`, FSDP2 rows where the two forms differ most (GPU-bound, 4K-5K tokens a sequence, 10K-12K a micro-batch step:
elementwise traffic weighs most) and one DDP control (the candidate leaves DDP alone), one process each but FSDP2_REPEAT
(a second process: the set's own process spread); every (preset, tokens) new to calibration/. Registered per row as
eager_cudnn_steps.py registers (its predict) for `today` (the kept model, the product) and `candidate` (eager.bf16_step
inside eager.torch_framework, the host fits refitted with its kernel count, as adoption would ship it).
RULE (fixed at registration, registered.yaml), over the FSDP2 rows, each row's mean over its processes:
  ADOPT the candidate iff  mean |error| today - mean |error| candidate > SPREAD  and  mean |error| candidate <= 8%,
  SPREAD = max / min - 1 of FSDP2_REPEAT's two process medians (NOISE_SPREAD, the noise set's FSDP2 spread, when one
  process ran). Else KEEP. The DDP control: both forms predict the same step (reported: its error).
Development (every FSDP2 row the project held when this was written, llm-findings.md session 40): the candidate moves
GPU-bound FSDP2 rows by -5..-11% and reads them low (mean |error| ~6% vs the kept ~4%).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "studies"))

import eager_cudnn_steps as steps  # noqa: E402  (process reading and checked predictions reused)
import eager_mode_classes as classes  # noqa: E402  (the per-class reading of a profiled step, and the model's classes)

from simcluster.heldout.registration import read_run_set, set_main  # noqa: E402

ROOT = steps.ROOT
BUNDLE = ROOT / "calibration" / "h200x2-eager-fsdpstep-2026-11-30"
# (name, mode, preset, seq, processes, micro-batch): device_run.sh's file stems (NAME-rK.json)
ROWS = (
    ("fsdp-0.5b", "fsdp", "0.5b", 5120, 2, 2),    # 16 layers, h 1536: the largest moves (two's 0.5b 2048x6: -10.9%)
    ("fsdp-1.1b", "fsdp", "1.1b", 4096, 1, 3),    # 22 layers, h 2048, head size 64
    ("fsdp-0.8b", "fsdp", "0.8b", 4096, 1, 3),    # 20 layers, h 1792, head size 128
    ("fsdp-2b", "fsdp", "2b", 4096, 1, 3),        # 24 layers, h 2560: GEMMs weigh more
    ("ddp-1b", "ddp", "1b", 4096, 1, 3),          # the control (DDP: untouched by the candidate)
)
FSDP2_REPEAT = "fsdp-0.5b"
TRACED = "fsdp-0.8b"   # one more process of this row, profiled (--profile 1 --trace): runs/traces/TRACED-SEQxMB-rankR.json.gz
CLASS_KEYS = ("gemm", "attention", "memory", "copies", "optimizer")
NOISE_SPREAD = 0.026   # calibration/h200x2-llm-eager-noise-2026-11-29: fsdp 3b 2048x3, four processes, 300.17..307.87 ms
TARGET_PCT = 8.0
CANDIDATE = "candidate"
REMOVED_AT = "c688aac5 (session 41, branch candout)"   # where eager.bf16_step left the product (KEEP: README "## Result")


def register(path: Path) -> None:
    """Refused: the candidate this set judged (eager.bf16_step) was taken out of the product after its KEEP verdict, so
    nothing can predict it again; its predictions stay in BUNDLE's registered.yaml, which read_out reads."""
    raise steps.SimclusterError(f"the candidate eager.bf16_step was removed at {REMOVED_AT}: its registered predictions are "
                                f"{BUNDLE / 'registered.yaml'} (read them with this script's read-out); nothing to register")


def read_out(bundle: Path) -> dict:
    """Every row that ran: its processes' medians, mean, spread, today's and the candidate's error; the verdict. A run
    file without a timed shape (truncated, foreign) is dropped and named (`dropped`): a row left without a process is
    missing, so the rule reads INCOMPLETE."""
    rows = read_run_set(bundle)["rows"]
    out, dropped = [], []
    for i, r in enumerate(rows):
        today, cand = (steps.checked_step(bundle, i, r, k) for k in ("today", CANDIDATE))
        meds = [p["step_ms"] for p in steps.process_runs(bundle, r, memory=False, dropped=dropped)]
        if not meds:
            continue
        mean = statistics.mean(meds)
        out.append({"name": r["name"], "mode": r["mode"], "medians": meds, "mean": mean, "processes": r["processes"],
                    "spread": max(meds) / min(meds) - 1 if len(meds) > 1 else None,
                    "err_today": today / mean - 1, "err_cand": cand / mean - 1})
    return {"rows": out, "verdict": verdict(out, [r["name"] for r in rows if r["mode"] == "fsdp"]),
            "classes": traced_classes(bundle, rows, dropped), "dropped": dropped}


def traced_classes(bundle: Path, rows: list[dict], dropped: list[str] | None = None) -> list[dict]:
    """TRACED's profiled step per rank (runs/traces/...): measured ms per class beside today's and the candidate's
    registered classes_ms; [] where the trace is absent (the budget guard); a corrupt trace left out, its error line
    appended to `dropped` (raised where none is given)."""
    i, reg = next((i, r) for i, r in enumerate(rows) if r["name"] == TRACED)
    out = []
    for rank in (0, 1):
        path = bundle / "runs" / "traces" / f"{TRACED}-{reg['seq']}x{reg['micro_batch']}-rank{rank}.json.gz"
        if not path.is_file():
            continue
        try:
            got = classes.measure(classes.load(path))
        except steps.SimclusterError as exc:
            if dropped is None:
                raise
            dropped.append(str(exc))
            continue
        try:
            forms = {k: {c: float(reg["predicted"][k]["classes_ms"][c]) for c in CLASS_KEYS} for k in ("today", CANDIDATE)}
        except (KeyError, TypeError, ValueError) as exc:
            raise steps.SimclusterError(f"{bundle / 'registered.yaml'}: rows[{i}].predicted: classes_ms of {CLASS_KEYS} must be "
                                        f"numbers ({type(exc).__name__}: {exc})") from None
        out.append({"rank": rank, "measured": {c: got[c] * 1e3 for c in CLASS_KEYS}, **forms})
    return out


def verdict(rows: list[dict], fsdp_names: list[str]) -> str:
    """The registered rule (module docstring) over the FSDP2 rows."""
    got = [r for r in rows if r["mode"] == "fsdp"]
    if len(got) < len(fsdp_names):
        return f"INCOMPLETE: {len(got)} of {len(fsdp_names)} fsdp rows"
    today = 100 * statistics.mean(abs(r["err_today"]) for r in got)
    cand = 100 * statistics.mean(abs(r["err_cand"]) for r in got)
    rep = next((r for r in got if r["name"] == FSDP2_REPEAT), None)
    spread, how = (rep["spread"], f"{FSDP2_REPEAT}'s processes") if rep and rep["spread"] is not None else (NOISE_SPREAD, "the noise set's")
    adopt = today - cand > 100 * spread and cand <= TARGET_PCT
    return (f"{'ADOPT' if adopt else 'KEEP'}: mean |error| today {today:.1f}%, {CANDIDATE} {cand:.1f}% "
            f"(gain {today - cand:+.1f} points vs spread {100 * spread:.1f}%, {how}) over {len(got)} fsdp rows")


def show(result: dict) -> None:
    print(f"{'row':12} {'process medians (ms)':>22} {'spread':>7} {'today':>7} {CANDIDATE:>10}")
    for r in result["rows"]:
        spread = "-" if r["spread"] is None else f"{r['spread']:.1%}"
        print(f"{r['name']:12} {' / '.join(f'{x:.1f}' for x in r['medians']):>22} {spread:>7} {r['err_today']:+7.1%} {r['err_cand']:+10.1%}")
    for line in result.get("dropped", []):
        print(f"dropped: {line}")
    print(result["verdict"])
    for c in result["classes"]:
        sums = {k: c[k]["memory"] + c[k]["copies"] for k in ("measured", "today", CANDIDATE)}
        print(f"{TRACED} rank {c['rank']} (ms, measured / today / {CANDIDATE}): " + ", ".join(
            f"{k} {c['measured'][k]:.1f} / {c['today'][k]:.1f} / {c[CANDIDATE][k]:.1f}" for k in ("memory", "copies"))
            + f", memory + copies {sums['measured']:.1f} / {sums['today']:.1f} / {sums[CANDIDATE]:.1f}")


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
