"""The `collective one node` error band's coverage, source by source (issue 41, session 42, helper onenode).

Reads the shipped error-band table (simcluster/trust/error_bands.json; or the table named by --table) and checks every
row of the family against the band its answer would get with its source left out (trust/build.source_coverage: the
rule `simcluster validate --error-bands` uses), without rebuilding the table. Prints:

1. per source: rows, covered, mean signed error (predicted / measured - 1, + = the model slow), mean |error|, and
   whether the band came from the regime's own rows or the family's pooled rows;
2. the machines' rows by launch mode (CUDA-graph rounds vs host-launched ones) and size band, and the coverage by source
   had the machines' regimes been keyed by launch mode too (a counterfactual, not adopted);
3. the published NVLS rows against NCCL's NVLS chunk rule (the chunk each size runs at, the measured marginal rate
   between neighbouring sizes, a line T = a + S / B per chunk size and what of a a fill of 2 loops would leave): a
   diagnostic on the rows that prompted it (development), nothing here is adopted;
4. with --fill: the OCI NVLS rows' error with that fill (f = 2 loops at the NVLS card's rate, not fitted) added to
   the model's time, and how many of them the band they are judged by covers before and after (collectives-findings
   session 42: 11.6 -> 7.2%, 4 -> 1 of 10). Not adopted here; session 44 adopted the fill above 8 GPUs only, so the
   model prices these 8-GPU rows without it and --fill adds it once (it refuses if the model ever prices a fill at
   their GPU count). Since session 44 the OCI file is development (held_out false): once the error-band table is
   regenerated its rows are no longer in it, and --fill says so.

    python studies/onenode_by_source.py [--table PATH] [--floors] [--fill]
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.cards import load_nvls  # noqa: E402
from simcluster.collectives.nvls_domain import domain_fill_s, nvls_chunk_bytes  # noqa: E402
from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402
from simcluster.trust.build import source_coverage  # noqa: E402
from simcluster.trust.table import Table, load_table  # noqa: E402

FAMILY = "collective one node"
KIB = 1024
FILL_LOOPS = 2      # fill and drain of NCCL's 3-stage NVLS pipeline at its bound (studies/gb200_nvls_ramp.py)
# NVLS sweeps to read against the chunk rule: file, NVLS channels C of the NCCL version that ran it (nvls.cc:
# NVLS_NCHANNELS_SM100 32 in 2.25-2.26; 24 on one clique from 2.27), NVLS heads H = min(ranks, 32)
NVLS_SWEEPS = (("nccl-oci-gb200-x2-mnnvl-oke.yaml", 32, "2.26.6"),
               ("nccl-gb200-nvl72-coreweave.yaml", 32, "2.25.1"))
FILL_SOURCE = "nccl-oci-gb200-x2-mnnvl-oke"      # the held-out NVLS sweep (C = 32 channels in 2.26.6, H = 8 heads)
FILL_CARD = ROOT / "models" / "nvswitch" / "gb200-nvl72-nvls-derived.yaml"   # its scenario's nvls card


def mode(check) -> str:
    """A machine row's launch mode from its bundle (the row label's first word): CUDA-graph rounds or host-launched."""
    bundle = check.row.row.split()[0]
    return "graph" if "graph" in bundle else "host-launched"


def error_pct(check) -> float:
    """predicted / measured - 1 in percent (+: the model slow)."""
    return 100 * (1 / check.row.rho - 1)


def source_lines(by_source: dict) -> list[str]:
    out = [f"{'source':42s} {'rows':>5s} {'covered':>8s} {'signed':>7s} {'|err|':>6s}  band from"]
    for source, checks in by_source.items():
        covered = sum(c.covered for c in checks) / len(checks)
        errors = [error_pct(c) for c in checks]
        own = sum(c.own_band for c in checks)
        band = "own regime" if own == len(checks) else "family pool" if own == 0 else f"own {own}, pool {len(checks) - own}"
        out.append(f"{source:42s} {len(checks):5d} {100 * covered:7.1f}% {statistics.fmean(errors):+6.1f}% "
                   f"{statistics.fmean(abs(e) for e in errors):5.1f}%  {band}")
    means = [sum(c.covered for c in v) / len(v) for v in by_source.values()]
    rows = [c for v in by_source.values() for c in v]
    out.append(f"{'all':42s} {len(rows):5d} {100 * sum(c.covered for c in rows) / len(rows):7.1f}%   each source "
               f"weighing one {100 * statistics.fmean(means):.1f}%")
    return out


def machine_lines(by_source: dict) -> list[str]:
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for source, checks in by_source.items():
        if source.startswith("machine "):
            for c in checks:
                groups[(mode(c), c.row.regime.split("|")[3].strip())].append(c)
    out = [f"{'mode':14s} {'size band':10s} {'rows':>5s} {'covered':>8s} {'|err|':>6s}"]
    for (m, band), checks in sorted(groups.items()):
        out.append(f"{m:14s} {band:10s} {len(checks):5d} {100 * sum(c.covered for c in checks) / len(checks):7.1f}% "
                   f"{statistics.fmean(abs(error_pct(c)) for c in checks):5.1f}%")
    return out


def by_mode_lines(table: Table) -> list[str]:
    """Counterfactual, not adopted: the machines' one-node regimes keyed by launch mode too (graph / host-launched)."""
    rows = [replace(r, regime=f"{r.regime} | {'graph' if 'graph' in r.row.split()[0] else 'host'}")
            if r.family == FAMILY and r.source.startswith("machine ") else r for r in table.residuals]
    by_source = source_coverage(Table(rows), FAMILY)
    out = [f"  {source:42s} {100 * sum(c.covered for c in v) / len(v):5.1f}%" for source, v in by_source.items()]
    means = [sum(c.covered for c in v) / len(v) for v in by_source.values()]
    return out + [f"  each source weighing one {100 * statistics.fmean(means):.1f}%"]


OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")
FLOOR_MAX_BYTES = 64 * KIB


def floor_lines(pattern: str = "calibration/h200x2-*") -> list[str]:
    """Host-launched bundles of `validate --held-out-machines`: each op's measured floor (median time of its sizes <=
    64 KiB, us) beside the machine card's floor F (the prediction there)."""
    import glob

    from simcluster.machine_validation import validate_held_out_machines

    out = [f"  {'bundle':34s} " + " ".join(f"{op[:10]:>10s}" for op in OPS) + f" {'F':>6s}"]
    for m in validate_held_out_machines(sorted(glob.glob(str(ROOT / pattern)))).machines:
        if "graph" in m.bundle:
            continue
        ops = {op.op: [r for r in op.rows if r.size_bytes <= FLOOR_MAX_BYTES] for op in m.ops}
        cells = [f"{statistics.median(r.measured_s for r in ops[op]) * 1e6:10.1f}" if ops.get(op) else f"{'-':>10s}"
                 for op in OPS]
        predicted = statistics.median(r.predicted_s for rows in ops.values() for r in rows) * 1e6
        out.append(f"  {m.bundle.split('calibration/')[-1]:34s} "
                   + " ".join(cells) + f" {predicted:6.1f}")
    return out


def nvls_chunk(total_bytes: float, channels: int, heads: int) -> int:
    """NCCL's NVLS all_reduce chunk (enqueue.cc calcCollChunking; collectives/nvls_domain.nvls_chunk_bytes)."""
    return int(nvls_chunk_bytes(total_bytes, channels, heads))


def nvls_lines(folder: Path) -> list[str]:
    out = []
    for name, channels, version in NVLS_SWEEPS:
        runs = yaml.safe_load((folder / name).read_text())["runs"]
        ranks = runs[0]["ranks"]
        heads = min(ranks, 32)
        out.append(f"{name}: {ranks} ranks, NCCL {version}, C = {channels}, H = {heads}")
        out.append(f"  {'bytes':>12s} {'chunk':>7s} {'time us':>9s} {'algbw GB/s':>10s} {'marginal GB/s':>13s}")
        previous = None
        for r in runs:
            size, time = float(r["bytes"]), r["time_us"] * 1e-6
            chunk = nvls_chunk(size, channels, heads)
            marginal = "" if previous is None else f"{(size - previous[0]) / (time - previous[1]) / 1e9:13.0f}"
            out.append(f"  {int(size):12d} {chunk // KIB:5d}Ki {time * 1e6:9.1f} {size / time / 1e9:10.1f} {marginal}")
            previous = (size, time)
        out += chunk_fit_lines(runs, channels, heads)
    return out


def chunk_fit_lines(runs: list[dict], channels: int, heads: int) -> list[str]:
    """Per chunk size with >= 3 rows: the least-squares line T = a + S / B, and what of `a` a pipeline fill of
    FILL_LOOPS loops of L = C H chunk bytes at B would leave (a - 2 L / B)."""
    groups: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for r in runs:
        groups[nvls_chunk(float(r["bytes"]), channels, heads)].append((float(r["bytes"]), r["time_us"] * 1e-6))
    out = []
    for chunk, rows in sorted(groups.items()):
        if len(rows) < 3:
            continue
        design = np.array([[1.0, s] for s, _ in rows])
        times = np.array([t for _, t in rows])
        (a, inv_b), *_ = np.linalg.lstsq(design, times, rcond=None)
        worst = float(np.max(np.abs(design @ np.array([a, inv_b]) - times) / times))
        loop = channels * heads * chunk
        out.append(f"  chunk {chunk // KIB} KiB, {len(rows)} rows: T = a + S/B, a = {a * 1e6:.1f} us, B = {1 / inv_b / 1e9:.1f} "
                   f"GB/s algbw (worst {worst:.1%}); L = {loop / 2**20:.0f} MiB, a - {FILL_LOOPS} L/B = "
                   f"{(a - FILL_LOOPS * loop * inv_b) * 1e6:.1f} us")
    return out


def fill_lines(by_source: dict, folder: Path, channels: int = 32) -> list[str]:
    """The OCI NVLS rows with a pipeline fill of FILL_LOOPS loops of L = C H chunk(S) at the card's algbw added to the
    model's time (measured / rho): each row's error before and after, the mean |error| and how many of the rows the
    band they are judged by (their leave-one-source-out band) covers, before and after."""
    checks = by_source.get(FILL_SOURCE, [])
    if not checks:
        return [f"  no {FILL_SOURCE} rows in the table"]
    runs = yaml.safe_load((folder / f"{FILL_SOURCE}.yaml").read_text())["runs"]
    rate = load_nvls(FILL_CARD)[0]
    out, before, after, covered = [f"  {'size':>6s} {'error':>7s} {'+ fill':>7s}  band (time)"], [], [], [0, 0]
    for c in checks:
        run = runs[int(c.row.row.split("]")[0].split("[")[1])]
        ranks, measured = run["ranks"], run["time_us"] * 1e-6
        if domain_fill_s(float(run["bytes"]), ranks, channels, rate[ranks]) > 0:
            return [f"  the model already prices the NVLS fill at {ranks} GPUs: --fill would count it twice"]
        predicted = measured / c.row.rho
        filled = predicted + FILL_LOOPS * channels * min(ranks, 32) * nvls_chunk(float(run["bytes"]), channels,
                                                                              min(ranks, 32)) / rate[ranks]
        before.append(predicted / measured - 1)
        after.append(filled / measured - 1)
        covered[0] += c.covered
        covered[1] += c.band[0] <= measured / filled <= c.band[1]
        out.append(f"  {run['size']:>6s} {100 * before[-1]:+6.1f}% {100 * after[-1]:+6.1f}%  "
                   f"{c.band[0]:.3f}..{c.band[1]:.3f}")
    out.append(f"  mean |error| {100 * statistics.fmean(map(abs, before)):.1f}% -> {100 * statistics.fmean(map(abs, after)):.1f}%; "
               f"covered by their band {covered[0]} -> {covered[1]} of {len(checks)}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", help="an error-band table (default: the shipped one)")
    parser.add_argument("--published", default=str(ROOT / "calibration" / "published"))
    parser.add_argument("--floors", action="store_true", help="also the host-launched floors per op (validate "
                        "--held-out-machines, ~10 s)")
    parser.add_argument("--fill", action="store_true", help="also the OCI NVLS rows with a 2-loop pipeline fill added")
    args = parser.parse_args(argv)
    if args.table and not Path(args.table).is_file():
        raise SystemExit(f"error: --table {args.table}: no such file")
    try:
        table = load_table(args.table)
    except SimclusterError as exc:
        raise SystemExit(f"error: {exc}") from None
    by_source = source_coverage(table, FAMILY)
    if not by_source:
        raise SystemExit(f"no `{FAMILY}` rows in the table {args.table or 'simcluster/trust/error_bands.json'}")
    print("\n".join(source_lines(by_source)))
    print("\nmachines' rows by launch mode and size band:")
    print("\n".join(machine_lines(by_source)))
    print("\ncounterfactual (not adopted): the machines' regimes keyed by launch mode too")
    print("\n".join(by_mode_lines(table)))
    if args.floors:
        print("\nhost-launched floors per op, us (median of sizes <= 64 KiB) and the machine card's F:")
        print("\n".join(floor_lines()))
    print("\nNVLS sweeps against NCCL's chunk rule (diagnostic):")
    print("\n".join(nvls_lines(Path(args.published))))
    if args.fill:
        print(f"\nthe OCI NVLS rows with a {FILL_LOOPS}-loop pipeline fill at the card's rate (a counterfactual: the model "
              "prices 8 GPUs without it, collectives/nvls_domain.py adopts it above 8 GPUs only; development rows):")
        print("\n".join(fill_lines(by_source, Path(args.published))))


if __name__ == "__main__":
    main()
