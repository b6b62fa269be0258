"""Session 54 (issue 44, moeterm54; final read 54 item 3): the MoE serial host floor (llm/moe_host_floor.py, OFF) on the 70
DEVELOPMENT MoE rows (heldout/registration.moe_rows_then: the MoE files the router term's rule priced), floor off and on
at the registered ratio. These rows are development for the floor (printed after its registration, nothing tuned on them);
the held-out judgement is validation/moeterm54.py's rule, not this print.

    PYTHONPATH=. python studies/moeterm54_dev.py > studies/moeterm54_dev.txt

Prints per moved row: file, row, graphed router / preprocess (the recipe's moe_graphs), validate's signed error off ->
on (+ = predicted fast), then the count moved and the mean |error| off -> on. "graphed" is the recipe's moe_graphs as the
model reads it (the skills Qwen3-30B file leaves rows 3-4, run without graphs, at the default: captured)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def table() -> tuple[list[tuple], float, float]:
    """([(source, run, error off, error on)] of the 70 rows, mean |error| off, on) at moe_host_floor.SERIAL_RATIO."""
    from simcluster.heldout.registration import moe_rows_then
    from simcluster.llm import moe_host_floor
    from simcluster.reference.llm import validate_published_llm

    off = moe_rows_then(validate_published_llm().rows)
    with moe_host_floor.switched_on(moe_host_floor.SERIAL_RATIO):
        on = {(r.source, r.run): r.error for r in moe_rows_then(validate_published_llm().rows)}
    rows = [(r.source, r.run, r.error, on[(r.source, r.run)]) for r in off]
    return rows, statistics.mean(abs(a) for *_, a, _ in rows), statistics.mean(abs(b) for *_, b in rows)


def graphed(source: str, run: int) -> bool:
    from moe_rows import predict_row

    return predict_row(source, run).framework.moe_graphs


def main() -> int:
    sys.path.insert(0, str(ROOT / "studies"))
    rows, before, after = table()
    print("# moeterm54: the MoE serial host floor on the 70 DEVELOPMENT MoE rows (moe_rows_then), off -> on at ratio 1.559")
    print("# file, row, router / preprocess CUDA-graphed, signed error off -> on (+ = predicted fast); rows that move only")
    moved = [r for r in rows if abs(r[3] - r[2]) > 5e-4]
    for source, run, a, b in moved:
        print(f"{source:52} {run:>3}  {'graphed  ' if graphed(source, run) else 'ungraphed'}  {100 * a:+7.1f}% -> {100 * b:+7.1f}%")
    print(f"# {len(rows)} rows, {len(moved)} move; mean |error| {100 * before:.2f}% -> {100 * after:.2f}%")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
