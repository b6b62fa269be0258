"""Benchmark: one all_reduce (and one alltoall) across a rail-optimized fat-tree, 16 to 16,384 GPUs.

    python bench/fabric_scale.py [--max-gpus 16384] [--repeat 5]

For each size it builds the platform (8 GPUs and 8 x 400 Gb/s RoCE NICs per node, rail-optimized,
1:1), solves the steady-state ring flows (max-min over every NIC and spine link) and predicts the
all_reduce for 1 MiB and 1 GiB, then a 1 GiB alltoall (its point-to-point pattern routed and loaded on the same
fabric, collectives/alltoall.py: at most 2^18 flows, node shifts sampled beyond that). Prints the wall time of
that whole point (the fastest of --repeat runs, each
building the platform anew; NCCL's decision is memoised after the first), peak memory (ru_maxrss) and the work
done: flow-link crossings routed and solved (the steady-state form has no events; the DES lines count real
events). At 16 and 128 GPUs it also runs the chunk-level DES of one rail ring on the same fabric and prints how
far the two forms are apart.
"""

from __future__ import annotations

import dataclasses
import resource
import time
from pathlib import Path

from simcluster.cards import load_collective, load_nic
from simcluster.collectives import des
from simcluster.collectives.chunked_ring import ChunkedRingParams
from simcluster.collectives.cluster import Cluster
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.ring_flows import ring_flows
from simcluster.engine import Simulation
from simcluster.network.builders import FabricSpec, machine_platform

ROOT = Path(__file__).resolve().parent.parent
INTRA = ROOT / "models" / "collective" / "h200x4-nvlink.yaml"
NIC = ROOT / "models" / "nic" / "seed000-roce-100g.yaml"


def chunk_level_ring_s(cluster: Cluster, spec: FabricSpec, size: int) -> tuple[float, float, int]:
    """Chunk-level DES of one rail's ring all_reduce over the cluster's platform (its fabric without link and switch
    latency, as the closed form below has none), vs the same ring's closed form."""
    p = cluster.platform
    platform = machine_platform(p.nodes, p.gpus_per_node, 0.0, dataclasses.replace(spec, link_latency_s=0.0, switch_latency_s=0.0))
    ranks = [f"n{i}.nic0" for i in range(p.nodes)]
    rate = cluster.nic.wire_limit_Bps
    params = ChunkedRingParams(rate, {"Simple": dataclasses.replace(cluster.intra.protocols["Simple"], bandwidth_fraction=1.0,
                                                                    base_latency_s=0.0)})
    sim = Simulation(0, record=False)
    result = des.simulate(params, platform, "all_reduce", size, "Simple", ranks=ranks, sim=sim)
    from simcluster.collectives.model import predict

    closed = predict(params, "all_reduce", size, len(ranks), "Simple")
    return result.time_s, closed.time_s, sim.events_processed


def main() -> None:
    from simcluster.script_args import ArgumentParser  # a bad argument: one line

    parser = ArgumentParser()
    parser.add_argument("--max-gpus", type=int, default=16384)
    parser.add_argument("--repeat", type=int, default=5, help="runs per point; the fastest is printed")
    args = parser.parse_args()
    intra, _ = load_collective(INTRA)
    nic, _ = load_nic(NIC)
    nic = dataclasses.replace(nic, line_rate_Bps=400e9 / 8)
    print(f"{'gpus':>6} {'size':>5} {'algorithm':>12} {'time':>10} {'busbw GB/s':>10} {'wall ms':>7} {'flow-links':>10} "
          f"{'links/s':>10} {'peak MiB':>8}")
    for gpus in (16, 128, 1024, 4096, 16384):
        if gpus > args.max_gpus:
            break
        for op, size, label in (("all_reduce", 2**20, "1MiB"), ("all_reduce", 2**30, "1GiB"), ("alltoall", 2**30, "1GiB")):
            wall = float("inf")
            for _ in range(max(1, args.repeat)):
                t0 = time.perf_counter()
                spec = FabricSpec(gpus // 8, 8, nic.line_rate_Bps, "rail-optimized", down_ports=32, spines=16,
                                  link_latency_s=50e-9, switch_latency_s=600e-9)
                cluster = Cluster(intra, nic, machine_platform(gpus // 8, 8, intra.link_bandwidth_Bps, spec), 8, 112.0)
                flows = ring_flows(cluster)
                pred = predict_fabric(cluster, op, size, flows=flows)
                wall = min(wall, time.perf_counter() - t0)
            routed = cluster.platform._cache.get(("alltoall crossings", gpus // 8, True), 0)
            events = len(flows.flow_rates_Bps) * (flows.max_hops + 1) + routed
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{gpus:6d} {label:>5} {pred.algorithm:>12} {pred.time_s * 1e3:8.3f}ms {pred.busbw_Bps / 1e9:10.1f} "
                  f"{wall * 1e3:7.2f} {events:10d} {events / wall:10.0f} {peak:8.0f}")
        if gpus <= 128:
            for size in (2**20, 2**26):
                t0 = time.perf_counter()
                chunk, closed, ev = chunk_level_ring_s(cluster, spec, size)
                wall = time.perf_counter() - t0
                print(f"       chunk-level DES, one rail ring of {gpus // 8} NICs, {size >> 20} MiB: {chunk * 1e3:.3f} ms vs "
                      f"steady state {closed * 1e3:.3f} ms ({(chunk / closed - 1) * 100:+.2f}%), {ev} events in {wall:.2f} s")


if __name__ == "__main__":
    main()
