"""Development check of EFA's rendezvous (collectives/rendezvous.py) against the measurements that bound an EFA step.

Prints predicted vs measured call times with the NIC card's `eager_max_size` as shipped (unset: no rendezvous) and
set to aws-ofi-nccl's default (8 KiB) on the RDMA-protocol cards (p5 / p5en / p6), the cards edited in memory only:
p5 x 2 all_reduce 1-16 MiB, the HyperPod p5 all_gather at 32 and 64 MiB on 2-32 nodes (one latency chain),
dstack#3961's 8 B all_reduce on 2 x p6-b200. Measured times (us) are read from the published files
(calibration/published/: `time_us`, or bytes / algbw where the source prints no time);
these rows are development rows for the term, not held out. Then `--held-out-systems` (busbw at >= 64 MiB) with the
key unset and set on the two RDMA-protocol cards, in a temporary copy of models/, scenarios/ and calibration/published/:
the AWS files' figures, and the sources within 10% as that command counts them.

    python validation/efa_rendezvous_check.py
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path

import yaml

from simcluster.collectives.fabric import predict_fabric
from simcluster.reference.nccl import _cluster, read_nccl_file
from simcluster.reference.nccl_held_out import TARGET_PCT, held_out_systems, sources
from simcluster.script_args import check

ROOT = Path(__file__).resolve().parent.parent
EAGER_MAX_SIZE = 8192.0   # aws-ofi-nccl OFI_NCCL_EAGER_MAX_SIZE default (v1.7-v1.21, not v1.14)
RDMA_PROTOCOL_CARDS = ("efa-multirail-400g", "efa-400g")   # p5 / p5en, p6 (platform-aws.cpp default_protocol RDMA)
CHECKS = [   # (scenario, published file, nodes, op, size bytes, label)
    *[("aws-p5-48xlarge-x2", "nccl-aws-p5-48xlarge-x2.yaml", 2, "all_reduce", s << 20, "p5 x2") for s in (1, 2, 4, 8, 16)],
    *[("aws-p5-hyperpod-x32", "nccl-aws-p5-hyperpod-x2-x32-gpucomm.yaml", n, "all_gather", s << 20, "HyperPod")
      for n in (2, 4, 8, 16, 32) for s in (32, 64)],
    ("aws-p6-b200-x4", "nccl-aws-p6-b200-x2-dstack3961.yaml", 2, "all_reduce", 8, "dstack#3961"),
]


def measured_us(published: str, nodes: int, op: str, size: int) -> float:
    """The published out-of-place call time (us) of one run, read with the published nccl reader: the file's `time_us`
    where the source prints it, else bytes / algbw (the HyperPod CSV has no time column)."""
    ref = read_nccl_file(ROOT / "calibration" / "published" / published)
    for run in ref.runs:
        if run["op"] == op and int(run["bytes"]) == size and int(run.get("nodes", ref.system["nodes"])) == nodes:
            return float(run["time_us"]) if "time_us" in run else int(run["bytes"]) / float(run["algbw_GBps"]) / 1e3
    raise KeyError(f"{published}: no {op} run at {size} B on {nodes} nodes")


def _with_eager(cluster, eager: float):
    return dataclasses.replace(cluster, nic=dataclasses.replace(cluster.nic, eager_max_size_bytes=eager))


def held_out(eager: float | None) -> dict[str, tuple[float, float]]:
    """{system: (shipped-card %, held-out %)} of every published nccl system, the key set on the RDMA cards (None: as
    shipped), and under key 'within' the sources within 10% and the sources, counted as `--held-out-systems` counts
    them since session 50 (a source_group once, its files' rows pooled: nccl_held_out.sources)."""
    with tempfile.TemporaryDirectory() as tmp:
        for part in ("models", "scenarios", "calibration/published"):
            shutil.copytree(ROOT / part, Path(tmp) / part)
        for card in RDMA_PROTOCOL_CARDS if eager else ():
            path = Path(tmp) / "models" / "nic" / f"{card}.yaml"
            doc = yaml.safe_load(path.read_text())
            doc["params"]["eager_max_size"] = f"{eager:.0f}B"
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
        results = held_out_systems(Path(tmp) / "calibration" / "published")
    out = {r.system: (r.shipped_pct, r.held_out_pct) for r in results}
    groups = sources(results)
    out["within"] = (sum(g.held_out_pct <= TARGET_PCT for g in groups), len(groups))
    return out


def main() -> None:
    print(f"{'system':10s} {'op':10s} {'nodes':>5s} {'size':>9s} {'measured':>9s} {'as shipped':>11s} {'rendezvous':>11s}  ran")
    for scenario, published, nodes, op, size, label in CHECKS:
        measured = measured_us(published, nodes, op, size)
        cluster = _cluster(ROOT / "scenarios" / "published" / f"{scenario}.yaml", nodes)
        before = predict_fabric(cluster, op, size)
        after = predict_fabric(_with_eager(cluster, EAGER_MAX_SIZE), op, size)
        print(f"{label:10s} {op:10s} {nodes:5d} {size:9d} {measured:8.0f}u {before.time_s * 1e6:10.0f}u "
              f"{after.time_s * 1e6:10.0f}u  {after.algorithm}/{after.protocol}")
    before, after = held_out(None), held_out(EAGER_MAX_SIZE)
    print("\n--held-out-systems, mean |busbw error| % (shipped cards / held out): as shipped -> rendezvous on")
    for system in sorted(k for k in before if "aws" in k):
        print(f"{system[:40]:40s} {before[system][0]:6.1f} / {before[system][1]:5.1f} -> "
              f"{after[system][0]:6.1f} / {after[system][1]:5.1f}")
    print(f"sources within 10% held out (as --held-out-systems counts them): {before['within'][0]:.0f} -> "
          f"{after['within'][0]:.0f} of {before['within'][1]:.0f}")


if __name__ == "__main__":
    check()   # takes no argument: anything else is one line, before the study runs
    main()
