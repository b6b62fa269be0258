"""Held-out fidelity of the collective models on 2 x H200 (prints a table; not a test).

The NCCL-primitives card is fitted on all_reduce alone (CUDA-graph and host-launched rounds, plus
NCCL's tuning log); every other collective is predicted and compared with the median of its rounds,
timed as CUDA graphs (GPU time) and host-launched (what plain nccl-tests prints). The chunked ring
model fitted on the same all_reduce rounds is shown for comparison.

    python bench/collective_fidelity.py
"""

from pathlib import Path

from simcluster.collectives.schedule import OPS
from simcluster.fit import collective as fit_collective
from simcluster.fit.validate import summary, validate
from simcluster.traces import nccl_tests, nccl_tuning

ROOT = Path(__file__).resolve().parents[1] / "calibration"
GRAPH = ROOT / "h200x2-graph-2026-11-22" / "nccl-tests"
HOSTED = ROOT / "h200x2-rounds-2026-11-22" / "nccl-tests"


def rounds(folder: Path, op: str) -> list:
    return [nccl_tests.parse(p / "stdout.txt") for p in sorted(folder.glob(f"{op}-r[0-9]*"))]


def fitted_cards():
    tuning = nccl_tuning.parse(HOSTED / "all_reduce-tuning" / "stdout.txt")
    ar = rounds(GRAPH, "all_reduce") + rounds(HOSTED, "all_reduce")
    primitives, _ = fit_collective.fit_card(ar, tuning)
    chunked, _ = fit_collective.fit_card(rounds(GRAPH, "all_reduce"))
    return primitives, chunked


def mean_error(params, folder: Path, op: str) -> float:
    return summary(validate(params, nccl_tests.median_trace(rounds(folder, op))))["sizes_ge_1024B"]["mean_abs_error_pct"]


def main():
    primitives, chunked = fitted_cards()
    print("mean |error| over sizes >= 1 KiB, median of rounds; fitted on all_reduce only")
    print(f"{'op':>15} {'primitives/graph':>17} {'primitives/host':>16} {'chunked/graph':>14}")
    for op in OPS:
        print(f"{op:>15} {mean_error(primitives, GRAPH, op):16.2f}% {mean_error(primitives, HOSTED, op):15.2f}% "
              f"{mean_error(chunked, GRAPH, op):13.2f}%")


if __name__ == "__main__":
    main()
