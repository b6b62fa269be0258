"""The shape of the HyperPod p5 miss (issue 41, session 43, engineer efa): the 100 held-out rows of
calibration/published/nccl-aws-p5-hyperpod-x2-x32-gpucomm.yaml tabulated by collective x node count x size, each cell
the held-out error (%) and the protocol the model runs (L = LL128, S = Simple; the algorithm per row below), with the
eta and t0 that `simcluster validate --published nccl --held-out-systems` fits for this system on the other EFA
systems. Then, per row, the measured time less the predicted one, and that excess per network step of the algorithm
(ring: 2(N-1) for all_reduce, N-1 for all_gather; tree: 2 ceil(log2 N) stages; alltoall: per remote peer, n - G).
Descriptive only: nothing is fitted or changed.

    python studies/efa_hyperpod_shape.py
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FILE = ROOT / "calibration" / "published" / "nccl-aws-p5-hyperpod-x2-x32-gpucomm.yaml"


def network_steps(op: str, algorithm: str, nodes: int, ranks: int, per_node: int) -> tuple[int, str]:
    """(how many network steps the call's critical path holds, what they are) for the per-step excess."""
    if algorithm == "alltoall":
        return ranks - per_node, "remote peers"
    if algorithm in ("tree", "nvls-tree"):
        return 2 * math.ceil(math.log2(nodes)), "tree stages"
    return (2 * (nodes - 1) if op == "all_reduce" else nodes - 1), "ring steps"


def rows():
    from simcluster.collectives.fabric import predict_fabric
    from simcluster.reference import nccl
    from simcluster.reference import nccl_held_out as ho

    ref = nccl.read_nccl_file(FILE)
    result = next(r for r in ho.held_out_systems() if r.system == ref.name)
    system = ho._system(ref)
    per_node = int(ref.system["gpus_per_node"])
    out = []
    for row, error in zip(system.rows, system.errors_pct(result.eta, result.call_setup_s), strict=True):
        run = ref.runs[row.run]
        nodes, size = int(run["nodes"]), row.sizes[0]
        cluster = nccl._stated_nccl(nccl._cluster(ref.file("scenario"), nodes), ref)
        cluster = dataclasses.replace(cluster, nic=dataclasses.replace(cluster.nic, efficiency=result.eta, call_setup_s=0.0))
        algorithm, protocol = nccl.split_choice(nccl._forced(run) or nccl.chooser_algorithm(ref, nodes * per_node, size, run["op"]))
        p = predict_fabric(cluster, run["op"], size, algorithm, None, protocol)
        measured_s = row.bus_bytes[0] / row.measured_Bps
        steps, what = network_steps(run["op"], p.algorithm, nodes, nodes * per_node, per_node)
        excess = measured_s - p.time_s - result.call_setup_s
        out.append((run["op"], nodes, size, p.algorithm, p.protocol, error, measured_s, excess, steps, what))
    return result, out


def main() -> int:
    result, table = rows()
    print(f"# {FILE.name}: held out, eta {result.eta:.2f}, t0 {result.call_setup_s * 1e6:.0f} us (fitted on the other EFA "
          f"systems); mean |error| {result.held_out_pct:.1f}% over {result.rows} rows")
    for op in ("all_reduce", "all_gather", "alltoall"):
        sizes = sorted({s for o, _, s, *_ in table if o == op})
        print(f"\n{op}: held-out error % (protocol L = LL128, S = Simple; algorithm: r ring, t tree, n nvls-tree, a alltoall)")
        print("nodes " + " ".join(f"{s >> 20:>11d}M" for s in sizes))
        for nodes in sorted({n for o, n, *_ in table if o == op}):
            cells = {s: (a, p, e) for o, n, s, a, p, e, *_ in table if o == op and n == nodes}
            print(f"{nodes:5d} " + " ".join(f"{cells[s][2]:+8.1f} {cells[s][0][0]}{cells[s][1][0]:1s}" for s in sizes))
    print("\nper row: measured - predicted time, and per network step of the algorithm (us)")
    for op, nodes, size, algorithm, protocol, error, measured_s, excess, steps, what in table:
        per = excess / steps if steps else float("nan")
        print(f"{op:10s} {nodes:3d} nodes {size >> 20:5d} MiB {algorithm:9s} {protocol:6s} {error:+7.1f}%  measured "
              f"{measured_s * 1e6:8.0f}  excess {excess * 1e6:+7.0f}  {per * 1e6:+6.1f} per {what[:-1]} ({steps})")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    raise SystemExit(main())
