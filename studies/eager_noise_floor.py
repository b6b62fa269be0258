"""The 2-GPU eager modes' run-to-run noise against the model's error (issue 44, session 37; a diagnostic, not a test).

Reads calibration/h200x2-llm-eager-noise-2026-11-29 (each (mode, shape) in three processes, device_run.sh) and prints per
(mode, shape): each process's median step, the spread of those medians (max / min - 1) and their coefficient of
variation, the steps' spread within a process, and today's model (heldout/eager_regimes.regime_predict, the product's host fits)
with its error against each process. A mode whose error is inside its process-to-process spread is at the machine's
noise: more modelling cannot be told apart from that spread with one process per shape. Where the bundle carries its
lease's own hidden-128 host runs (runs/host/, MODE-L<n>.json: calibration/h200x2-eager-hostbound-noise-2026-11-29), a
last column gives the model with that lease's host fit and its error against the processes' mean.
    python studies/eager_noise_floor.py [BUNDLE]
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.heldout.eager_regimes import regime_documents, regime_mode_of, regime_predict  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-llm-eager-noise-2026-11-29"


def groups(bundle: Path) -> dict[tuple, list[dict]]:
    """(mode, preset, seq, micro_batch, microbatches) -> the ok shapes of every process, file order."""
    docs, failed = regime_documents(bundle)
    for line in failed:
        print(f"no document (run failed): {line}", file=sys.stderr)
    out = defaultdict(list)
    for doc in docs:
        for shape in doc["shapes"]:
            if shape.get("status") == "ok":
                out[(regime_mode_of(doc), doc["model"]["preset"], shape["seq"], shape["micro_batch"],
                     shape.get("microbatches", 1))].append(shape)
    return dict(out)


def main(argv: list[str]) -> int:
    bundle = Path(argv[0]) if argv else BUNDLE
    if not (bundle / "runs").is_dir():
        print(f"{bundle}: no runs/ folder (unpack runs.tgz there)", file=sys.stderr)
        return 1
    try:
        table = sorted(groups(bundle).items())
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        print(f"{bundle}: a run document without what this study reads ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 1
    if not table:
        print(f"{bundle}: no run with a timed shape", file=sys.stderr)
        return 1
    own_host = bundle / "runs" / "host" if (bundle / "runs" / "host").is_dir() else None
    print(f"{'mode, shape':34} {'process medians (ms)':>28} {'spread':>7} {'cv':>5} {'in-process':>10} {'model':>7} "
          f"{'errors (+ = slower)':>22}" + ("   own-lease fit, error of the mean" if own_host else ""))
    for (mode, preset, seq, mb, m), shapes in table:
        try:
            medians = [s["median_step_s"] * 1e3 for s in shapes]
            within = statistics.mean(max(s["step_times_s"]) / min(s["step_times_s"]) - 1 for s in shapes)
            pred = regime_predict(preset, mb, mode, "h200", microbatches=m if m > 1 else None, seq=seq)["step_ms"]
            own = regime_predict(preset, mb, mode, "h200", own_host, m if m > 1 else None, seq)["step_ms"] if own_host else None
        except (KeyError, TypeError, ValueError, ZeroDivisionError, statistics.StatisticsError) as exc:
            print(f"{bundle}: {mode} {preset} {seq}:{mb}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        errs = [pred / x - 1 for x in medians]
        cv = statistics.stdev(medians) / statistics.mean(medians) if len(medians) > 1 else float("nan")
        print(f"{mode + ' ' + preset + f' {seq}:{mb}' + (f' x{m}' if m > 1 else ''):34} "
              f"{' / '.join(f'{x:.1f}' for x in medians):>28} {max(medians) / min(medians) - 1:7.1%} {cv:5.1%} "
              f"{within:10.1%} {pred:7.1f} {' / '.join(f'{e:+.1%}' for e in errs):>22}"
              + (f"   {own:.1f} ms, {own / statistics.mean(medians) - 1:+.1%}" if own is not None else ""))
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=1, usage="[BUNDLE]")
    sys.exit(main(sys.argv[1:]))
