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

Per-op profiles (collectives/profile.py): a profile measured on one 2-rank machine (every op, against its own
all_reduce card) carried by another machine's all_reduce-fitted card, both ways, as CUDA graphs (the first machine
and calibration/h200x2-graph2-2026-11-22) and host-launched (the first machine and the third session), next to
copying the reference's measured times; and a 2-rank profile forced onto 4 ranks (why a card does not do that).

    python studies/collective_fidelity.py
"""

import functools
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
GRAPH_B = ROOT / "h200x2-graph2-2026-11-22" / "nccl-tests"


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
    """op -> mean |error| (sizes >= 1 KiB) in the 200-iteration session ("host C"), card fitted on its all_reduce."""
    traces, card = _machines()["host C"]
    return {op: summary(validate(card, trace))["sizes_ge_1024B"]["mean_abs_error_pct"] for op, trace in traces.items()}


def iteration_count_effect() -> float:
    """Largest relative busbw difference (sizes >= 4 MiB) between all_reduce with 20 and 200 iterations."""
    rows = [{r.size_bytes: r.busbw_Bps for r in nccl_tests.parse(N200 / d / "nccl-tests" / "all_reduce" / "stdout.txt").rows}
            for d in ("n20", "n200")]
    return max(abs(rows[1][s] / rows[0][s] - 1) for s in rows[0] if s >= 4 * 2**20)


@functools.cache
def _machines() -> dict:
    """2-rank machines with every op: name -> (op -> median trace, card fitted on that machine's all_reduce alone)."""
    def graph(folder):
        return {op: nccl_tests.median_trace(rounds(folder, op)) for op in OPS}
    n200 = N200 / "n200" / "nccl-tests"
    logs = {"graph A": (graph(GRAPH), tuning(HOSTED)), "graph B": (graph(GRAPH_B), tuning(GRAPH_B)),
            "host A": ({op: nccl_tests.median_trace(rounds(HOSTED, op)) for op in OPS}, tuning(HOSTED)),
            "host C": ({op: nccl_tests.parse(n200 / op / "stdout.txt") for op in OPS}, tuning(n200))}
    return {name: (traces, fit_collective.fit_card([traces["all_reduce"]], [tun])[0]) for name, (traces, tun) in logs.items()}


def profile_transfer() -> dict[tuple[str, str], dict[str, tuple[float, float, float]]]:
    """(reference, target) -> op -> mean |error| (sizes >= 1 KiB) on the target of: its all_reduce-fitted card
    alone, that card with the reference's per-op profile, and the reference's own measured times copied."""
    from simcluster.collectives.profile import Profiled
    from simcluster.fit.profile import learn

    machines = _machines()
    out = {}
    for ref, target in (("graph B", "graph A"), ("graph A", "graph B"), ("host C", "host A"), ("host A", "host C")):
        (ref_traces, ref_card), (traces, card) = machines[ref], machines[target]
        profiled = Profiled(card, learn(ref_card, list(ref_traces.values()), ref))
        out[ref, target] = {}
        for op, trace in traces.items():
            copied = {r.size_bytes: r.time_s for r in ref_traces[op].rows}
            scored = [r for r in trace.rows if r.size_bytes >= 1024]
            out[ref, target][op] = (
                summary(validate(card, trace))["sizes_ge_1024B"]["mean_abs_error_pct"],
                summary(validate(profiled, trace))["sizes_ge_1024B"]["mean_abs_error_pct"],
                round(100 * sum(abs(copied[r.size_bytes] / r.time_s - 1) for r in scored) / len(scored), 2))
    return out


def profile_across_ranks() -> dict[str, tuple[float, float]]:
    """op -> (card alone, card with a 2-rank profile forced onto 4 ranks): mean |error| at 4 ranks, CUDA graphs."""
    from dataclasses import replace

    from simcluster.collectives.profile import Profiled
    from simcluster.fit.profile import learn

    traces, ref_card = _machines()["graph B"]
    two = learn(ref_card, list(traces.values()), "graph B")[0]
    card = fit_collective.fit_card(rounds(GRAPH4, "all_reduce"), [tuning(GRAPH4)])[0]
    forced = Profiled(card, (replace(two, ranks=4),))
    return {op: (mean_error(card, GRAPH4, op), mean_error(forced, GRAPH4, op)) for op in OPS}


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
    print("\n2 ranks, per-op profile from another machine: mean |error| over sizes >= 1 KiB on the target;")
    print("target card fitted on the target's all_reduce alone; 'copy' = the reference's measured times")
    for (ref, target), errors in profile_transfer().items():
        print(f"{ref} -> {target}: {'op':>15} {'card alone':>11} {'+ profile':>10} {'copy':>8}")
        for op, (alone, profiled, copied) in errors.items():
            print(f"{'':>{len(ref + target) + 6}}{op:>15} {alone:10.2f}% {profiled:9.2f}% {copied:7.2f}%")
    print("\n4 ranks (x4 graph machine): the 2-rank profile forced onto 4 ranks, mean |error| (card alone -> with it)")
    for op, (alone, forced) in profile_across_ranks().items():
        print(f"{op:>15} {alone:6.2f}% -> {forced:6.2f}%")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
