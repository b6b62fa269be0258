"""Published multi-node nccl-tests runs (calibration/published/nccl-*.yaml) against the fabric model (issue 23).

    python validation/nccl_published.py

Each system has a scenario in scenarios/published/ built from the source's configuration and cards made from
published port speeds (nothing in them was fitted to these numbers). For every published row at >= 64 MiB the
fabric model predicts busbw with the algorithm and protocol NCCL's decision model picks for the topology (or the
algorithm the source forced), and the table prints predicted vs measured busbw and the error, then the mean
|error| per system. Rows whose size the source does not give (Voltage Park) are compared with the model's peak
busbw over 64 MiB..16 GiB, as the source calls its figures peaks. Target: <= 10% per system.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import yaml

from simcluster.build import build_cluster
from simcluster.collectives.fabric import predict_fabric, ring_flows
from simcluster.scenario import load_variants

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "calibration" / "published"
SCENARIOS = ROOT / "scenarios" / "published"
MIN_BYTES = 64 * 2**20
PEAK_SIZES = [2**k for k in range(26, 35)]

# published file -> (scenario, held out?, note)
SYSTEMS = {
    "nccl-aws-p5-48xlarge-x2.yaml": (SCENARIOS / "aws-p5-48xlarge-x2.yaml", True, ""),
    "nccl-aws-p4de-24xlarge-x2.yaml": (SCENARIOS / "aws-p4de-24xlarge-x2.yaml", True, "A100 priced on the H200 NVLink card"),
    "nccl-aws-p5en-x4.yaml": (SCENARIOS / "aws-p5en-x4.yaml", True, "'default' ran AWS's ofi tuner plugin"),
    "nccl-aws-p6-b200-x4.yaml": (SCENARIOS / "aws-p6-b200-x4.yaml", True, "no B200 NVLink / NVLS card: H200 / H100 cards"),
    "nccl-voltagepark-h100-x4.yaml": (SCENARIOS / "voltagepark-h100-x4.yaml", True, "size not given: peak vs peak"),
    "nccl-h100-roce-x2-x4-nccl1221.yaml": (SCENARIOS / "nccl1221-h100-roce-x4.yaml", True, "2-node NVLS row already cited"),
    "nccl-h200-x248-nccltests283.yaml": (SCENARIOS / "nccltests283-h200-x248.yaml", True, "prose ~350 GB/s, NIC rate assumed"),
    "nccl-oci-bm-gpu-h100-8x2.yaml": (ROOT / "scenarios" / "oci-bm-gpu-h100-8x2.yaml", False, "not held out (fabric.md)"),
}
NOT_PREDICTED = {"nccl-gcp-a3mega-x2-unverified.yaml": "system unidentified (no NIC count, rate or transport in the source)"}
FORCED = {"NCCL_ALGO=allreduce:ring (forced)": "ring", "NCCL_ALGO=allreduce:nvlstree (forced)": "nvls-tree"}


@dataclass(frozen=True)
class Row:
    system: str
    op: str
    size: str
    nodes: int
    choice: str
    predicted_GBps: float
    measured_GBps: float
    held_out: bool

    @property
    def error(self) -> float:
        return self.predicted_GBps / self.measured_GBps - 1


def _cluster(scenario: Path, nodes: int | None):
    return build_cluster(load_variants(scenario, nodes)[0][1].machine)


def _busbw(cluster, op: str, sizes: list[int], algorithm: str | None = None) -> tuple[float, str]:
    """Mean predicted busbw (GB/s) over sizes, and the algorithm/protocol of the last."""
    flows = ring_flows(cluster)
    preds = [predict_fabric(cluster, op, s, algorithm, flows) for s in sizes]
    return sum(p.busbw_Bps for p in preds) / len(preds) / 1e9, f"{preds[-1].algorithm}/{preds[-1].protocol}"


def _peak(cluster, op: str) -> tuple[float, str]:
    flows = ring_flows(cluster)
    best = max((predict_fabric(cluster, op, s, None, flows) for s in PEAK_SIZES), key=lambda p: p.busbw_Bps)
    return best.busbw_Bps / 1e9, f"{best.algorithm}/{best.protocol}@{best.size_bytes >> 20}MiB"


def system_rows(name: str) -> list[Row]:
    scenario, held_out, _ = SYSTEMS[name]
    doc = yaml.safe_load((PUBLISHED / name).read_text())
    default_nodes = doc["system"]["nodes"]
    out = []
    clusters: dict = {}
    for run in doc["runs"]:
        nodes = run.get("nodes") or (run["ranks"] // doc["system"]["gpus_per_node"] if run.get("ranks") else default_nodes)
        if nodes not in clusters:
            clusters[nodes] = _cluster(scenario, nodes)
        cluster = clusters[nodes]
        if run.get("nvls") is False:
            cluster = dataclasses.replace(cluster, nvls=None)
        size = run.get("bytes")
        if size is None and run.get("size") is None:
            predicted, choice = _peak(cluster, run["op"])
            label = "peak"
        else:
            sizes = [size] if size else [4 * 2**30, 8 * 2**30]     # nccl#1221: "4GiB-8GiB"
            if min(sizes) < MIN_BYTES:
                continue
            predicted, choice = _busbw(cluster, run["op"], sizes, FORCED.get(run.get("algorithm", "")))
            label = run["size"] + (f" ({run['algorithm'].split(' (')[0]})" if run.get("algorithm") else "")
            label += "" if run.get("nvls") is None else f" nvls {run['nvls']}"
        out.append(Row(name.removeprefix("nccl-").removesuffix(".yaml"), run["op"], label, nodes, choice, predicted,
                       float(run["busbw_GBps"]), held_out))
    return out


def all_rows() -> list[Row]:
    return [r for name in SYSTEMS for r in system_rows(name)]


def summary(rows: list[Row]) -> dict[str, tuple[float, float, bool]]:
    """system -> (mean |error|, worst |error|, held out)."""
    out = {}
    for system in dict.fromkeys(r.system for r in rows):
        errs = [abs(r.error) for r in rows if r.system == system]
        out[system] = (sum(errs) / len(errs), max(errs), next(r.held_out for r in rows if r.system == system))
    return out


def main() -> None:
    rows = all_rows()
    print(f"{'system':<32} {'op':<11} {'size':<30} {'nodes':>5} {'chosen':<22} {'pred GB/s':>9} {'meas GB/s':>9} {'error':>7}")
    for r in rows:
        print(f"{r.system:<32} {r.op:<11} {r.size:<30} {r.nodes:>5} {r.choice:<22} {r.predicted_GBps:9.1f} "
              f"{r.measured_GBps:9.1f} {r.error * 100:+6.1f}%")
    print("\nper system (busbw at >= 64 MiB; target <= 10%):")
    for system, (mean, worst, held_out) in summary(rows).items():
        note = SYSTEMS["nccl-" + system + ".yaml"][2]
        print(f"  {system:<32} mean |error| {mean * 100:5.1f}%  max {worst * 100:5.1f}%  "
              f"{'held out' if held_out else 'NOT held out'}{'; ' + note if note else ''}")
    for name, why in NOT_PREDICTED.items():
        print(f"  {name.removeprefix('nccl-').removesuffix('.yaml'):<32} not predicted: {why}")


if __name__ == "__main__":
    main()
