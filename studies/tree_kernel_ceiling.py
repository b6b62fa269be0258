"""Counterfactual, not the model: every published nccl row that runs NCCL's plain Tree across nodes (forced or NCCL's
choice), priced as shipped and with NCCL's per-channel tree ceiling added as one more bandwidth term (issue 41,
session 41, engineer treeib). Nothing is fitted; the ceiling is NCCL's tuner's own (src/graph/tuning.cc, 2.28.3 -
2.30.7): the tree's all_reduce busbw at most the tree graph's channels x perChMaxTreeBws[arch][1 node, 2 nodes, 3+]
(Blackwell 70.0 / 42.8 / 24.0 GB/s; Hopper 38.7 / 41.4 / 36.0; Ampere 24.0 / 23.6 / 17.8), LL128 also x 120/128 and at
most perChMaxTreeLL128Bws; NCCL's tree algbw is half its busbw, so the time floor is 2 S / that ceiling. The shipped
tree (collectives/fabric.py, Tree) is T = latency + max(2 S / B_nvl, w_N S / B_net) / f_p + fill; here its data term
becomes max(that, 2 S / ceiling). docs/models/collectives-findings.md, "Session 41 (issue 41, engineer treeib)", says
why it is not adopted: it meets the Together B200 rows (development) and the Ampere / Hopper EFA rows that chose Tree,
and misses the two Blackwell forced-Tree rows of nccl#1801 (GB200, NCCL 2.27.3) by -25% and -62%.

    python studies/tree_kernel_ceiling.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.collectives import fabric  # noqa: E402
from simcluster.collectives.nccl_constants import PER_CH_TREE, PER_CH_TREE_LL128  # noqa: E402
from simcluster.collectives.nccl_search import graphs  # noqa: E402
from simcluster.collectives.schedule import tree_node_load  # noqa: E402
from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.reference import nccl  # noqa: E402


def ceiling_bus_Bps(cluster, protocol: str) -> float:
    """NCCL's tree busbw ceiling on this cluster, bytes/s (tuning.cc: channels x per-channel maximum)."""
    i2 = 0 if cluster.nodes <= 1 else 1 if cluster.nodes == 2 else 2
    per_ch = PER_CH_TREE[cluster.arch][i2]
    if protocol == "LL128":
        per_ch = min(per_ch * 120 / 128, PER_CH_TREE_LL128[cluster.arch][i2])
    channels = graphs(cluster.nccl_topology)["Tree"].channels
    return channels * per_ch * 1e9 if channels else math.inf


class CeilingTree(fabric.Tree):
    def time(self, call, protocol="Simple"):
        t, detail = super().time(call, protocol)
        links = {fabric.NVLINK: 2 * call.size_bytes / call.b_nvl,
                 fabric.network_name(call): tree_node_load(call.nodes) * call.size_bytes / call.b_net}
        data, _ = fabric.protocol_terms(call, links, 2 * call.size_bytes, protocol)
        kernel = 2 * call.size_bytes / ceiling_bus_Bps(call.cluster, protocol)
        return t - data + max(data, kernel), {**detail, "tree_ceiling_s": kernel}


def tree_rows(models) -> dict:
    fabric.ALGORITHM_MODELS = models
    out = {}
    for path in sorted((ROOT / "calibration/published").glob("nccl-*.yaml")):
        try:
            rows = nccl.system_rows(nccl.read_nccl_file(path))
        except SimclusterError:
            continue
        for r in rows:
            if r.predicted is not None and (r.detail or "").startswith("tree/"):
                out[(r.source, r.run)] = r
    return out


def main() -> int:
    shipped = fabric.ALGORITHM_MODELS
    before = tree_rows(shipped)
    after = tree_rows(tuple(CeilingTree() if m.name == "tree" else m for m in shipped))
    fabric.ALGORITHM_MODELS = shipped
    print(f"{'source':40s} {'run':>3s}  {'configuration':55s} {'measured':>8s} {'shipped':>8s} {'ceiling':>8s}  held out")
    for key in sorted(before):
        b, a = before[key], after[key]
        print(f"{b.source:40s} {b.run:3d}  {b.configuration[:55]:55s} {b.measured / 1e9:8.1f} {b.error * 100:+7.1f}% "
              f"{a.error * 100:+7.1f}%  {'yes' if b.held_out else 'no'}")
    for name, rows in (("shipped", before), ("with the ceiling", after)):
        errs = [abs(r.error) for k, r in rows.items() if r.held_out and "together" not in k[0]]
        print(f"{name}: held-out Tree rows other than the Together file: {len(errs)}, mean |error| "
              f"{100 * sum(errs) / len(errs):.1f}%, within 10%: {sum(e <= 0.10 for e in errs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
