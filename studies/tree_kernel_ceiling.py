"""Counterfactual, not the model: every published nccl row that runs NCCL's plain Tree across nodes (forced or NCCL's
choice), priced as shipped and with NCCL's per-channel tree ceiling added as one more bandwidth term (issue 41,
session 41, engineer treeib). Nothing is fitted; the ceiling is NCCL's tuner's own (src/graph/tuning.cc): the tree's
all_reduce busbw at most the tree graph's channels x perChMaxTreeBws[arch][1 node, 2 nodes, 3+] (Blackwell 70.0 / 42.8 /
24.0 GB/s, the model's NCCL 2.28 table; Hopper 38.7 / 41.4 / 36.0; Ampere 24.0 / 23.6 / 17.8), LL128 also x 120/128 and
at most perChMaxTreeLL128Bws; NCCL's tree algbw is half its busbw, so the time floor is 2 S / that ceiling. The shipped
tree's data term (collectives/fabric.py, Tree.data_s: max(2 S / B_nvl, w_N S / B_net) / f_p) becomes max(that,
2 S / ceiling). Two variants: "ceiling" applies the model's one table (2.28) to every row; "by version" applies the
2.26-2.27 Blackwell table (2 x Hopper's, 77.4 / 82.8 / 72.0) to rows whose published file states NCCL < 2.28
(system.nccl), the 2.28 table otherwise, and marks a row whose file states no version ("n/s", priced on 2.28's);
LL128 likewise (2.26-2.27 Blackwell 2 x Hopper's, 73.4 / 73.4 / 58.0). Hopper / Ampere tables are the same in both.
Tables read in the stored NVIDIA/nccl mirror at tags v2.26.2-1, v2.27.3-1 (2 x Hopper) and v2.28.3-1 (the first 2.28
tag there: 70.0 / 42.8 / 24.0, LL128 55.6 / 31.67 / 20.0), session 41 mendC41.
docs/models/collectives-findings.md, "Session 41 (issue 41, engineer treeib)", says why neither was adopted then.
Session 42 (treereg): the version-keyed form was judged on 24 published rows it had not seen
(studies/tree_ceiling_registered.py, registered before the comparison) and adopted into the model
(simcluster/collectives/tree_kernel.py, keyed by the scenario's machine.nccl, else the file's system.nccl). Since then
the "shipped" column below is the model with the keyed ceiling, "by version" adds the same floor again (no change), and
"ceiling" adds the 2.28 table's floor to every row (what a model of one NCCL version would price).

    python studies/tree_kernel_ceiling.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.collectives import fabric  # noqa: E402
from simcluster.collectives.nccl_search import graphs  # noqa: E402
from simcluster.collectives.nccl_versions import NcclRelease, stated_release  # noqa: E402
from simcluster.collectives.tree_kernel import MODEL_NCCL, per_channel_GBps  # noqa: E402
from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.reference import nccl  # noqa: E402


def nccl_version(source: str) -> tuple[int, int] | None:
    """(major, minor) of NCCL as the published file's system.nccl states it; None where it states none."""
    doc = yaml.safe_load((ROOT / "calibration/published" / f"{source}.yaml").read_text())
    return (stated_release(((doc or {}).get("system") or {}).get("nccl")) or ())[:2] or None


def ceiling_bus_Bps(cluster, protocol: str, version: tuple[int, int] | None = None) -> float:
    """NCCL's tree busbw ceiling on this cluster, bytes/s (tuning.cc: channels x per-channel maximum, the model's
    collectives/tree_kernel.py tables); a version below 2.28 takes the 2.26-2.27 Blackwell table, None the model's."""
    channels = graphs(cluster.nccl_topology)["Tree"].channels
    per_ch = per_channel_GBps(cluster.arch, cluster.nodes, protocol, NcclRelease(version or MODEL_NCCL))
    return channels * per_ch * 1e9 if channels else math.inf


class CeilingTree(fabric.Tree):
    """The shipped tree with 2 S / ceiling as one more data term; by_version: the ceiling of the row's NCCL."""

    version: tuple[int, int] | None = None

    def __init__(self, by_version: bool = False):
        self.by_version = by_version

    def data_s(self, call, protocol="Simple"):
        data, terms = super().data_s(call, protocol)
        version = self.version if self.by_version else None
        kernel = 2 * call.size_bytes / ceiling_bus_Bps(call.cluster, protocol, version)
        return max(data, kernel), {**terms, "tree_ceiling_s": kernel}


def tree_rows(models) -> dict:
    """{(source, run): row} of every published Tree row, priced with models (a CeilingTree among them learns each
    file's stated NCCL version)."""
    out = {}
    try:
        fabric.ALGORITHM_MODELS = models
        for path in sorted((ROOT / "calibration/published").glob("nccl-*.yaml")):
            for m in models:
                if isinstance(m, CeilingTree):
                    m.version = nccl_version(path.stem)
            try:
                rows = nccl.system_rows(nccl.read_nccl_file(path))
            except SimclusterError:
                continue
            for r in rows:
                if r.predicted is not None and (r.detail or "").startswith("tree/"):
                    out[(r.source, r.run)] = r
    finally:
        fabric.ALGORITHM_MODELS = SHIPPED
    return out


SHIPPED = fabric.ALGORITHM_MODELS


def with_tree(tree) -> tuple:
    return tuple(tree if m.name == "tree" else m for m in SHIPPED)


def summary(name: str, rows: dict) -> str:
    errs = [abs(r.error) for k, r in rows.items() if r.held_out and "together" not in k[0]]
    gb200 = [r.error for k, r in sorted(rows.items()) if "nccl1801" in k[0]]
    return (f"{name}: held-out Tree rows other than the Together file: {len(errs)}, mean |error| "
            f"{100 * sum(errs) / len(errs):.1f}%, within 10%: {sum(e <= 0.10 for e in errs)}; nccl#1801 GB200 forced "
            f"Tree: {' / '.join(f'{100 * e:+.1f}%' for e in gb200)}")


def main() -> int:
    before = tree_rows(SHIPPED)
    after = tree_rows(with_tree(CeilingTree()))
    keyed = tree_rows(with_tree(CeilingTree(by_version=True)))
    print(f"{'source':40s} {'run':>3s}  {'configuration':50s} {'NCCL':>5s} {'measured':>8s} {'shipped':>8s} "
          f"{'ceiling':>8s} {'by vers.':>8s}  held out")
    for key in sorted(before):
        b, a, v = before[key], after[key], keyed[key]
        version = nccl_version(key[0])
        stated = "n/s" if version is None else ".".join(map(str, version))
        print(f"{b.source:40s} {b.run:3d}  {b.configuration[:50]:50s} "
              f"{stated:>5s} {b.measured / 1e9:8.1f} {b.error * 100:+7.1f}% "
              f"{a.error * 100:+7.1f}% {v.error * 100:+7.1f}%  {'yes' if b.held_out else 'no'}")
    for name, rows in (("shipped", before), ("with the ceiling (2.28 table)", after),
                       ("with the ceiling by stated version", keyed)):
        print(summary(name, rows))
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    raise SystemExit(main())
