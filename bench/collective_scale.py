"""Benchmark: wall time, events and events/s of one chunk-level DES all_reduce against ring size.

    python bench/collective_scale.py [--max-gpus 64]

Runs the calibrated H200 card's protocols on a single NVSwitch domain of n GPUs (the only
topology built so far; multi-node fabrics and 16k-GPU scale are the fabric issue's work).
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

from simcluster.cards import load_collective
from simcluster.collectives import des
from simcluster.collectives.model import predict
from simcluster.engine import Simulation
from simcluster.network.builders import single_node

CARD = Path(__file__).resolve().parent.parent / "models" / "collective" / "h200x2-nvlink.yaml"


def main() -> None:
    from simcluster.script_args import ArgumentParser  # a bad argument: one line

    parser = ArgumentParser()
    parser.add_argument("--max-gpus", type=int, default=64)
    args = parser.parse_args()
    params, _ = load_collective(CARD)
    print(f"{'gpus':>6} {'size':>8} {'protocol':>8} {'sim time':>10} {'closed':>10} {'wall s':>8} {'events':>9} {'ev/s':>10} {'peak MiB':>9}")
    n = 2
    while n <= args.max_gpus:
        for size in (2**20, 2**26):
            closed = predict(params, "all_reduce", size, n)
            sim = Simulation(record=False)
            t0 = time.perf_counter()
            result = des.simulate(params, single_node(n, params.link_bandwidth_Bps), "all_reduce", size, closed.protocol, sim=sim)
            wall = time.perf_counter() - t0
            events = sim.events_processed
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{n:6d} {size >> 20:6d}Mi {closed.protocol:>8} {result.time_s * 1e6:8.1f}us {closed.time_s * 1e6:8.1f}us "
                  f"{wall:8.3f} {events:9d} {events / wall:10.0f} {peak:9.0f}")
        n *= 2


if __name__ == "__main__":
    main()
