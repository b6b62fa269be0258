"""Held-out fidelity of the collective models on H200 NVLink nodes (prints tables; not a test).

2 ranks (calibration/h200x2-*): the NCCL-primitives card is fitted on all_reduce alone (CUDA-graph and
host-launched rounds, plus NCCL's tuning log); every other collective is predicted and compared with
the median of its rounds, timed as CUDA graphs (GPU time) and host-launched (what plain nccl-tests
prints). The chunked ring model fitted on the same all_reduce rounds is shown for comparison.

4 ranks (calibration/h200x4-graph-*, another machine of the same kind, CUDA graphs): every op at 4 ranks
predicted from a card fitted on all_reduce at 4 ranks, at 2 ranks only (a prediction across rank counts:
NCCL's tuning table at 4 ranks decides the protocol, nothing timed at 4 ranks is used), and at 2 + 4 ranks
(which identifies the step latencies).

A third 2-rank session (calibration/h200x2-n200-2026-11-22, another machine, host-launched, 200 iterations):
the card fitted on its own all_reduce predicts its six other collectives; and the same all_reduce with 20
and 200 iterations, which says whether the bandwidth ramp with size depends on run length (GPU clocks).

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
GRAPH4 = ROOT / "h200x4-graph-2026-11-22" / "nccl-tests"
GRAPH4_2 = ROOT / "h200x4-graph-2ranks-2026-11-22" / "nccl-tests"
N200 = ROOT / "h200x2-n200-2026-11-22"


def rounds(folder: Path, op: str) -> list:
    return [nccl_tests.parse(p / "stdout.txt") for p in sorted(folder.glob(f"{op}-r[0-9]*"))]


def tuning(folder: Path):
    return nccl_tuning.parse(folder / "all_reduce-tuning" / "stdout.txt")


def fitted_cards():
    ar = rounds(GRAPH, "all_reduce") + rounds(HOSTED, "all_reduce")
    primitives, _ = fit_collective.fit_card(ar, [tuning(HOSTED)])
    chunked, _ = fit_collective.fit_card(rounds(GRAPH, "all_reduce"))
    return primitives, chunked


def fitted_cards_4():
    """name -> card for the 4-rank comparison (the second machine)."""
    t2, t4 = tuning(GRAPH4_2), tuning(GRAPH4)
    ar2, ar4 = rounds(GRAPH4_2, "all_reduce"), rounds(GRAPH4, "all_reduce")
    return {"fit at 4": fit_collective.fit_card(ar4, [t4])[0],
            "fit at 2": fit_collective.fit_card(ar2, [t2, t4])[0],
            "fit at 2+4": fit_collective.fit_card(ar2 + ar4, [t2, t4])[0],
            "chunked at 4": fit_collective.fit_card(ar4)[0]}


def mean_error(params, folder: Path, op: str) -> float:
    return summary(validate(params, nccl_tests.median_trace(rounds(folder, op))))["sizes_ge_1024B"]["mean_abs_error_pct"]


def third_session() -> dict[str, float]:
    """op -> mean |error| (sizes >= 1 KiB) in the 200-iteration session, card fitted on its all_reduce."""
    log = N200 / "n200" / "nccl-tests"
    card, _ = fit_collective.fit_card([nccl_tests.parse(log / "all_reduce" / "stdout.txt")],
                                      [nccl_tuning.parse(log / "all_reduce-tuning" / "stdout.txt")])
    return {op: summary(validate(card, nccl_tests.parse(log / op / "stdout.txt")))["sizes_ge_1024B"]["mean_abs_error_pct"]
            for op in OPS}


def iteration_count_effect() -> float:
    """Largest relative busbw difference (sizes >= 4 MiB) between all_reduce with 20 and 200 iterations."""
    rows = [{r.size_bytes: r.busbw_Bps for r in nccl_tests.parse(N200 / d / "nccl-tests" / "all_reduce" / "stdout.txt").rows}
            for d in ("n20", "n200")]
    return max(abs(rows[1][s] / rows[0][s] - 1) for s in rows[0] if s >= 4 * 2**20)


def main():
    primitives, chunked = fitted_cards()
    print("2 ranks: mean |error| over sizes >= 1 KiB, median of rounds; fitted on all_reduce only")
    print(f"{'op':>15} {'primitives/graph':>17} {'primitives/host':>16} {'chunked/graph':>14}")
    for op in OPS:
        print(f"{op:>15} {mean_error(primitives, GRAPH, op):16.2f}% {mean_error(primitives, HOSTED, op):15.2f}% "
              f"{mean_error(chunked, GRAPH, op):13.2f}%")
    cards = fitted_cards_4()
    print("\n4 ranks, CUDA graphs: mean |error| over sizes >= 1 KiB; primitives fitted on all_reduce at the ranks named")
    print(f"{'op':>15}" + "".join(f"{name:>14}" for name in cards))
    for op in OPS:
        print(f"{op:>15}" + "".join(f"{mean_error(card, GRAPH4, op):13.2f}%" for card in cards.values()))
    print("\n2 ranks, a third session (h200x2-n200, host-launched, 200 iterations), fitted on its own all_reduce")
    for op, err in third_session().items():
        print(f"{op:>15} {err:16.2f}%")
    print(f"all_reduce with 20 vs 200 iterations: busbw differs by at most {iteration_count_effect() * 100:.1f}% "
          "at sizes >= 4 MiB")


if __name__ == "__main__":
    main()
