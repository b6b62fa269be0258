"""The rows and pairs of studies/fabnoise52.py (moved out of it in session 55, mendB55, to keep it under 400 lines):
every multi-node row the held-out check judges, with its machine kind and configuration key (the study's matching
rule), and every two rows of one configuration."""

import dataclasses
from collections import defaultdict
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT / "calibration" / "published"
FAMILY = {"rdma-efa": "EFA", "rdma-ib": "InfiniBand", "rdma-roce": "RoCE"}


@dataclasses.dataclass(frozen=True)
class Row:
    file: str
    source: str
    run: int
    kind: tuple            # (gpu, link, node NIC Gb/s, gpus per node)
    key: tuple             # (nodes, op, peak, sizes, forced algorithm, nvls, protocol)
    busbw_GBps: float
    model_pct: float       # the held-out check's error for this row, %
    outlier: bool
    approximate: bool
    regime: str = ""       # the error-band table's regime of the row (validate --published nccl's ReferenceRow.regime)

    @property
    def config(self) -> tuple:
        return self.kind + self.key


@dataclasses.dataclass(frozen=True)
class Pair:
    a: Row
    b: Row

    @property
    def relation(self) -> str:
        return "same file" if self.a.file == self.b.file else "same source" if self.a.source == self.b.source else "different sources"

    @property
    def spread_pct(self) -> float:
        return (max(self.a.busbw_GBps, self.b.busbw_GBps) / min(self.a.busbw_GBps, self.b.busbw_GBps) - 1) * 100

    @property
    def outlier(self) -> bool:
        return self.a.outlier or self.b.outlier


def kind_label(kind: tuple) -> str:
    gpu, link, bw, per_node = kind
    net = f"{FAMILY.get(link, link)} {bw}G/node" if bw else f"{link} (one NVLink domain)"
    return f"{gpu} x{per_node} {net}"


def family_of(kind: tuple) -> str:
    return f"{FAMILY.get(kind[1], kind[1])} {kind[0]}"


def machine_kind(ref, nodes: int) -> tuple:
    """(gpu, link across nodes, node NIC bandwidth in Gb/s, gpus per node) from the file's system and its scenario's stated machine."""
    from simcluster.machine_models import machine_nic, network_link
    from simcluster.reference import source_gpu
    from simcluster.scenario import load_variants

    machine = load_variants(ref.file("scenario"), nodes)[0][1].machine
    bw = 0
    if machine.nic is not None and machine.domains > 1:
        nic, _ = machine_nic(machine)
        bw = round(machine.nic.per_node * nic.line_rate_Bps * 8 / 1e9)
    return (source_gpu(ref) or "?", network_link(machine), bw, int(ref.system["gpus_per_node"]))


def row_key(ref, run: dict, nodes: int, sizes: list[int], peak: bool) -> tuple:
    from simcluster.collectives.schedule import canonical_op
    from simcluster.reference import nccl

    return (nodes, canonical_op(run["op"]), peak, tuple(sizes), nccl._forced(run), run.get("nvls"), run.get("protocol"))


def collect(drop: tuple[str, ...] = ()) -> list[Row]:
    """Every multi-node row the held-out check judges (files named in `drop` left out, of the fit too), with its error."""
    from simcluster.reference import nccl
    from simcluster.reference.nccl_held_out import held_out_systems, load_systems

    systems = [s for s in load_systems() if s.name not in drop]
    results = held_out_systems(systems=systems)
    rows = []
    for system, result in zip(systems, results, strict=True):
        ref = nccl.read_nccl_file(PUBLISHED / f"{system.name}.yaml")
        kinds, regimes = {}, {row.run: row.regime or "" for row in nccl.system_rows(ref)}
        for r, err in zip(system.rows, result.row_errors_pct, strict=True):
            run = ref.runs[r.run]
            nodes = nccl.run_nodes(ref, run)
            if nodes < 2:
                continue
            kinds[nodes] = kinds.get(nodes) or machine_kind(ref, nodes)
            rows.append(Row(system.name, system.source, r.run, kinds[nodes], row_key(ref, run, nodes, r.sizes, r.peak),
                            r.measured_Bps / 1e9, float(err), system.outlier, bool(run.get("approximate")), regimes.get(r.run, "")))
    return rows


def pairs_of(rows: list[Row]) -> list[Pair]:
    """Every two rows of one configuration (the matching rule), in the rows' order."""
    by = defaultdict(list)
    for r in rows:
        by[r.config].append(r)
    return [Pair(a, b) for group in by.values() for a, b in combinations(group, 2)]


def main() -> None:
    """The counts studies/fabnoise52.py reads (its own print gives the rows and pairs themselves)."""
    rows = collect()
    print(f"{len(rows)} multi-node rows, {len({r.file for r in rows})} files, {len({r.source for r in rows})} sources; "
          f"{len(pairs_of(rows))} pairs of one configuration")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before anything is read
    study_args.check()
    main()
