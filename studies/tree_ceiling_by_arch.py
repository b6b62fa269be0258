"""Counterfactual, not the model (issue 41, session 48, helper nccl48): the held-out-systems check with NCCL's plain-tree
ceiling (collectives/tree_kernel.py, tuning.cc perChMaxTreeBws x the tree graph's channels) kept on Blackwell only.

Why asked: two held-out Hopper 2-node systems ran NCCL's tree above that ceiling (in nccl-tests busbw, tree algbw =
ceiling / 2, busbw = algbw x 2(n-1)/n): 2 x 8 H100 over 4 x 400G RoCE (drobotics, 353.85 GB/s against 8 channels x 41.4
= 310.5) and Snellius 2 x 4 H100 over 4 x 200G IB (156.1 from 512 MiB against 4 x 41.4 = 144.9). The ceiling was judged
(session 42, treereg) on 8-GPU / 8-NIC B200 nodes under NCCL 2.28-2.29 only; the Hopper and Ampere rows of the same
table were never checked apart. NCCL runs a tree call on all its collective channels (enqueue.cc topoGetAlgoInfo,
v2.27.7-1: nc = comm->nChannels; the tree always NCCL_MAX_NTHREADS threads), twice the tree graph's channels the tuner
multiplies on every system here, B200 and Hopper alike, so the channel count does not tell them apart.

Variants: "shipped" (the model); "no Hopper/Ampere ceiling" (the ceiling kept where the cluster's architecture is
Blackwell, dropped elsewhere). Everything else, the eta / t0 fit per NIC family included, as `simcluster validate
--published nccl --held-out-systems` runs it. The rows were all seen before this was run (session 48's table of the
misses): every system it moves is development for it, none is a held-out test of it.

    python studies/tree_ceiling_by_arch.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.collectives import fabric  # noqa: E402
from simcluster.reference.nccl_held_out import _headline, held_out_systems, load_systems  # noqa: E402

SHIPPED = fabric.ALGORITHM_MODELS


class BlackwellOnlyTree(fabric.Tree):
    """The shipped tree; on a non-Blackwell cluster its kernel ceiling term is dropped (NVLink and NIC terms kept)."""

    def data_s(self, call, protocol="Simple"):
        data, terms = super().data_s(call, protocol)
        if call.cluster.arch == "blackwell":
            return data, terms
        links = {k: v for k, v in terms.items() if "tree limit" not in k}
        return max(links.values()), links


def results(tree=None):
    try:
        if tree is not None:
            fabric.ALGORITHM_MODELS = tuple(tree if m.name == "tree" else m for m in SHIPPED)
        return held_out_systems(systems=load_systems())
    finally:
        fabric.ALGORITHM_MODELS = SHIPPED


def main() -> int:
    before, after = results(), results(BlackwellOnlyTree())
    print(f"{'system (moved by the variant)':42s} {'shipped':>8s} {'variant':>8s}  {'held out':>8s} {'variant':>8s}")
    for b, a in zip(before, after, strict=True):
        if not (math.isclose(b.shipped_pct, a.shipped_pct, abs_tol=0.05) and math.isclose(b.held_out_pct, a.held_out_pct, abs_tol=0.05)):
            mark = ("*" if b.outlier else "") + ("^" if b.development else "")
            print(f"{(b.system + mark)[:42]:42s} {b.shipped_pct:7.1f}% {a.shipped_pct:7.1f}%  {b.held_out_pct:7.1f}% {a.held_out_pct:7.1f}%")
    for name, res in (("shipped", before), ("no Hopper/Ampere ceiling", after)):
        met, rows, mean, shipped = _headline(res)
        print(f"{name}: {met} of {len(res)} systems within 10% held out; {rows} rows {mean:.1f}% (shipped cards {shipped:.1f}%)")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    raise SystemExit(main())
