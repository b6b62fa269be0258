"""In-network aggregation as a tree: a 64 KiB and a 1 GiB all_reduce from 2 to 16,384 nodes (issue 41).

    python bench/in_network_scale.py

The machine is scenarios/whatif/in-network-aggregation.yaml's in-network variant (8 H200 per node, one 100 Gb/s RoCE
NIC, a leaf-spine of 16-port leaves, 100 ns links, 600 ns switches, the streaming aggregation card
models/switch/sharp-streaming-100g.yaml) at each node count; the fabric takes the fewest switch tiers that hold it
(32-port spines). For each size it prints the time, the aggregation tree's levels and what binds the time, and the
wall time of the whole point (platform, ring flows and prediction, the fastest of 3). docs/models/fabric.md quotes
the output.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from simcluster.collectives.fabric import predict_fabric
from simcluster.machine_models import build_cluster
from simcluster.network.builders import fabric_tiers
from simcluster.scenario import load_variants

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "whatif" / "in-network-aggregation.yaml"
NODES = (2, 16, 128, 1024, 16384)


def main() -> None:
    _, sc = next((label, s) for label, s in load_variants(SCENARIO) if label == "in-network")
    print(f"{'nodes':>6} {'GPUs':>7} {'tiers':>5} {'levels':>6} {'64 KiB':>10}  {'binds':<28} {'1 GiB':>10}  {'binds':<44} {'wall ms':>7}")
    for nodes in NODES:
        machine = dataclasses.replace(sc.machine, nodes=nodes)
        wall = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            cluster = build_cluster(machine)
            small = predict_fabric(cluster, "all_reduce", 64 << 10, "in-network")
            large = predict_fabric(cluster, "all_reduce", 1 << 30, "in-network")
            wall = min(wall, time.perf_counter() - t0)
        print(f"{nodes:6d} {nodes * machine.gpus_per_node:7d} {fabric_tiers(cluster.platform.fabric):5d} "
              f"{small.breakdown['tree_levels']:6d} {small.time_s * 1e6:8.2f}us  {small.breakdown['binding_limit'][:28]:<28} "
              f"{large.time_s * 1e3:8.3f}ms  {large.breakdown['binding_limit'][:44]:<44} {wall * 1e3:7.1f}")


if __name__ == "__main__":
    from simcluster.script_args import check

    check()   # no arguments: an unknown one is one line, before the run
    main()
