"""Published multi-node nccl-tests: every system the held-out check leaves over 10%, given one cause category by a rule
on its own rows (issue 41, session 35, helper fab). Descriptive only: nothing is fitted, tuned or changed.

The rule, applied in this order to a system whose held-out mean |error| is over 10% (`simcluster validate --published
nccl --held-out-systems`, the row errors with eta and t0 fitted on the other systems of its NIC family):

    outlier        the validator's own flag: the scenario's cards miss its median row by more than 1.5x (the issue threads
                   about slow clusters, docs/models/fabric.md); left alone unless a source explains them
    nvls-carry     some rows run NVLS or the NVLS tree inside an NVLink domain of more than 8 GPUs (the NVLS card carried
                   past the 8-GPU boards it was derived from) and those rows still miss by more than 10% at >= 4 GiB,
                   where a per-call cost no longer matters
    protocol-ramp  rows below and at or above 1 GiB, and the mean |error| below 1 GiB exceeds the mean at >= 1 GiB by at
                   least 10 points: the miss is a per-call or per-step cost that large calls amortise
    source-facts   anything else (one size, peaks without a size, an offset that does not shrink with size, or one that
                   grows with it): what would explain it is a fact the source does not give

A row compared as a peak (no size given) counts as neither below nor above 1 GiB. The categories name where the miss
sits, not its physics: the causes per system are in docs/models/fabric-findings.md, session 35.

`--families` (session 48, helper nccl48) prints, per system over 10%, what a mechanism would have to share: the NIC
family the held-out fit put it in, the link (the row's trust regime: rdma-ib, rdma-roce, rdma-efa, nvlink-*), GPU,
node counts, the algorithm / protocol the model ran, the sign of the miss (+ = predicted faster; "+/-" both), and how
it moves with size and with the node count: the mean change of the signed held-out error per doubling, over pairs of
rows of one op and algorithm that differ in size only (or in nodes only); "-" where no such pair exists. Descriptive,
nothing fitted; the grouping by mechanism is docs/models/collectives-findings.md, session 48 nccl48.

    python studies/nccl_miss_triage.py [--families]
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GiB = 2**30
TARGET_PCT = 10.0
RAMP_POINTS = 10.0           # |error| below 1 GiB minus |error| at >= 1 GiB, in points, for a ramp
PLATEAU_BYTES = 4 * GiB      # NVLS rows at or above this size: the plateau
BOARD_GPUS = 8               # the NVLS cards' measured / derived boards
NVLS_ALGORITHMS = ("nvls", "nvls-tree")   # what the model runs for NCCL's NVLS (one domain) and NVLSTree (reference/nccl.Ran)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def category(rows: list[tuple[int | None, float, bool]], outlier: bool) -> str:
    """One system's cause category from its rows (size in bytes or None for a peak, held-out error %, whether the row
    runs NVLS / the NVLS tree in an NVLink domain of more than 8 GPUs) and the validator's outlier flag."""
    if outlier:
        return "outlier"
    nvls = [abs(e) for size, e, big in rows if big and size is not None and size >= PLATEAU_BYTES]
    if nvls and _mean(nvls) > TARGET_PCT:
        return "nvls-carry"
    small = [abs(e) for size, e, _ in rows if size is not None and size < GiB]
    large = [abs(e) for size, e, _ in rows if size is not None and size >= GiB]
    if small and large and _mean(small) - _mean(large) >= RAMP_POINTS:
        return "protocol-ramp"
    return "source-facts"


def over_target(path: str | Path | None = None):
    """(held-out system, its result, its published file read) for every system over the target held out."""
    from simcluster.published import published_files
    from simcluster.reference import nccl
    from simcluster.reference.nccl_held_out import held_out_systems, load_systems

    systems = load_systems(path)
    results = {r.system: r for r in held_out_systems(systems=systems)}
    files = {Path(f).stem: f for f in published_files(path, "nccl-")}
    for s in systems:
        if results[s.name].held_out_pct > TARGET_PCT:
            yield s, results[s.name], nccl.read_nccl_file(files[s.name])


def triage(path: str | Path | None = None) -> list[dict]:
    """Every system over the target held out: its rows' shape and category."""
    from simcluster.reference import nccl
    from simcluster.scenario import load_variants

    out = []
    for s, r, ref in over_target(path):
        ran = {row.run: what for row, what in nccl.system_runs(ref)}   # what the validator ran, as data
        scenario = ref.file("scenario")
        rows = []
        for row, err in zip(s.rows, r.row_errors_pct, strict=True):
            run = ref.runs[row.run]
            nodes = nccl.run_nodes(ref, run)
            domain = load_variants(scenario, nodes)[0][1].machine.domain_gpus
            big = ran[row.run].algorithm in NVLS_ALGORITHMS and domain > BOARD_GPUS
            rows.append((None if row.peak else max(row.sizes), err, big))
        small = [e for size, e, _ in rows if size is not None and size < GiB]
        large = [e for size, e, _ in rows if size is not None and size >= GiB]
        sizes = [size for size, _, _ in rows if size is not None]
        out.append({"system": s.name + ("*" if r.outlier else ""), "held_out_pct": r.held_out_pct, "rows": len(rows),
                    "sizes": (min(sizes), max(sizes)) if sizes else None, "below_1GiB_pct": _mean(small),
                    "from_1GiB_pct": _mean(large), "below_1GiB_abs_pct": _mean([abs(e) for e in small]),
                    "from_1GiB_abs_pct": _mean([abs(e) for e in large]), "nvls_big_rows": sum(big for _, _, big in rows),
                    "category": category(rows, r.outlier)})
    return out


def _trend(rows: list[dict], vary: str, keep: tuple[str, ...]) -> float | None:
    """Mean change of the signed error (points) per doubling of `vary` over row pairs equal in `keep` and differing in
    `vary` only (consecutive values at least 1.5x apart: 1 MiB steps near 128 MiB are noise); None where no pair exists."""
    series: dict[tuple, list[tuple[float, float]]] = {}
    for r in rows:
        if r[vary] is not None and all(r[k] is not None for k in keep):
            series.setdefault(tuple(r[k] for k in keep), []).append((r[vary], r["error"]))
    steps = []
    for points in series.values():
        points.sort()
        steps += [(e2 - e1) / math.log2(v2 / v1) for (v1, e1), (v2, e2) in itertools.pairwise(points) if v2 >= 1.5 * v1]
    return _mean(steps)


def families(path: str | Path | None = None) -> list[dict]:
    """Every system over the target held out, with what a shared mechanism would have to share (module docstring)."""
    from simcluster.reference import nccl

    out = []
    for s, r, ref in over_target(path):
        ref_rows = {row.run: (row, ran) for row, ran in nccl.system_runs(ref)}   # what the validator ran, as data
        rows = []
        for row, err in zip(s.rows, r.row_errors_pct, strict=True):
            run, (shown, ran) = ref.runs[row.run], ref_rows[row.run]
            nodes = nccl.run_nodes(ref, run)
            rows.append({"op": run["op"], "algo": f"{ran.algorithm}/{ran.protocol}", "nodes": nodes, "error": err,
                         "size": None if row.peak else max(row.sizes), "link": ran.link, "gpu": shown.gpu})
        errs = [x["error"] for x in rows]
        out.append({"system": s.name + ("*" if r.outlier else ""), "held_out_pct": r.held_out_pct,
                    "family": s.family or "-", "links": sorted({x["link"] for x in rows}),
                    "gpus": sorted({x["gpu"] for x in rows}), "nodes": sorted({x["nodes"] for x in rows}),
                    "algos": sorted({f"{x['op']}:{x['algo']}" for x in rows}),
                    "sign": "+" if min(errs) > 0 else "-" if max(errs) < 0 else "+/-",
                    "per_size_doubling": _trend(rows, "size", ("op", "algo", "nodes")),
                    "per_node_doubling": _trend(rows, "nodes", ("op", "algo", "size"))})
    return out


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}"


def _abs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _size(n: int) -> str:
    return f"{n / GiB:g}G" if n >= GiB else f"{n / 2**20:g}M"


def print_families() -> None:
    rows = families()
    print(f"{'system (held out > 10%)':42s} {'held out':>8s} {'family':10s} {'link':12s} {'GPU':6s} {'nodes':9s} "
          f"{'sign':4s} {'/2x size':>8s} {'/2x nodes':>9s}  ops:algorithm/protocol the model ran")
    for r in rows:
        nodes = f"{r['nodes'][0]}-{r['nodes'][-1]}" if len(r["nodes"]) > 1 else str(r["nodes"][0])
        print(f"{r['system'][:42]:42s} {r['held_out_pct']:7.1f}% {r['family']:10s} {','.join(r['links']):12s} "
              f"{','.join(r['gpus']):6s} {nodes:9s} {r['sign']:4s} {_fmt(r['per_size_doubling']):>8s} "
              f"{_fmt(r['per_node_doubling']):>9s}  {' '.join(r['algos'])}")
    print("/2x size, /2x nodes: mean change of the signed held-out error (points) per doubling of the size (same op, "
          "algorithm, nodes) or of the node count (same op, algorithm, size); + = predicted faster")


def main() -> None:
    if "--families" in sys.argv[1:]:
        print_families()
        return
    rows = triage()
    print(f"{'system (held out > 10%)':42s} {'held out':>8s} {'rows':>4s} {'sizes':>11s} {'<1GiB':>7s} {'>=1GiB':>7s} "
          f"{'|<1GiB|':>7s} {'|>=1GiB|':>8s} {'NVLS>8':>6s}  category")
    for r in rows:
        sizes = f"{_size(r['sizes'][0])}-{_size(r['sizes'][1])}" if r["sizes"] else "peak"
        print(f"{r['system'][:42]:42s} {r['held_out_pct']:7.1f}% {r['rows']:4d} {sizes:>11s} {_fmt(r['below_1GiB_pct']):>7s} "
              f"{_fmt(r['from_1GiB_pct']):>7s} {_abs(r['below_1GiB_abs_pct']):>7s} {_abs(r['from_1GiB_abs_pct']):>8s} "
              f"{r['nvls_big_rows']:6d}  {r['category']}")
    counts = {}
    for r in rows:
        counts[r["category"]] = counts.get(r["category"], 0) + 1
    print(f"{len(rows)} systems over 10%: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print("<1GiB / >=1GiB: mean signed held-out error (%) of the rows below / at or above 1 GiB (+ = predicted faster); "
          "|..|: mean |error|, the rule's inputs")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--families",))
    main()
