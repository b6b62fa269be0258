"""The expectation's op count for calibration/h200x1-mcrouter50-2026-12-01 (issue 44, session 50): torch.profiler's leaf
aten ops per call (the ops that launch a kernel on a GPU; views, empties and other metadata ops left out) of moeker50's
torch router chain (studies/moe_router_device.Layer.router) and of Megatron-Core's own TopKRouter
(studies/mcore_router_device.mcore_router), forward and forward + backward, on each moerouter_grid layer at quick shapes
on the CPU. A proxy for the GPU's kernel count, said before the run: on the torch chain it gives 20 / 48 where moeker50's
profiler counted 19 / 48 kernels on the H200 (the softmax layers). Needs torch and megatron-core (not in the project's
venv):

    PYTHONPATH=/tmp/mc:. python studies/mcore_router_ops.py      # megatron-core's wheel unpacked in /tmp/mc
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.script_args import ArgumentParser  # noqa: E402

METADATA = ("aten::empty", "aten::view", "aten::as_strided", "aten::t", "aten::transpose", "aten::expand", "aten::reshape",
            "aten::_reshape_alias", "aten::unsqueeze", "aten::squeeze", "aten::select", "aten::slice", "aten::detach",
            "aten::empty_like", "aten::empty_strided", "aten::resize_", "aten::_unsafe_view", "aten::alias",
            "aten::lift_fresh", "aten::result_type", "aten::permute", "aten::split", "aten::narrow", "aten::unbind")


def leaf_ops(torch, fn) -> int:
    """Leaf aten ops of one call of fn (after one unprofiled call), metadata ops left out."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(1 for e in prof.events() if e.name.startswith("aten::") and not e.cpu_children and e.name not in METADATA)


def main(argv=None) -> int:
    ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    try:
        import torch
    except ImportError:
        print("mcore_router_ops.py: needs torch (and megatron-core beside it): not installed here", file=sys.stderr)
        return 2
    from mcore_router_device import mcore_router, megatron
    from moe_router_device import Layer

    from simcluster.runner.moerouter_grid import GRID

    mods, note = megatron(torch, "cpu")
    if mods is None:
        print(f"mcore_router_ops: megatron-core {note}", file=sys.stderr)
        return 2
    print(f"# leaf aten ops per call, quick shapes on the CPU (torch {torch.__version__}, megatron-core {note})")
    for row in GRID:
        lay = Layer(torch, row, "cpu", torch.float32, True)
        counts = []
        for impl, fn in (("torch", lay.router), ("mcore", mcore_router(torch, mods, lay, "cpu", torch.float32))):
            counts.append(f"{impl} fwd {leaf_ops(torch, lambda fn=fn: fn(False))} fwdbwd {leaf_ops(torch, lambda fn=fn: fn(True))}")
        print(f"{lay.name}: " + "; ".join(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
