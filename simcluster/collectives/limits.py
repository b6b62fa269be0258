"""What bounds a multi-node collective's time, by name (issue 41): every algorithm of collectives/fabric.py and
collectives/in_network.py prices its call as fixed terms (launch, steps, hops, tree levels) plus bandwidth terms,
one per link or engine the bytes cross, and `binding` names the one that sets the time. docs/models/fabric.md,
"Hardware limits and what binds"."""

from __future__ import annotations

NVLINK = "NVLink (per GPU, the intra card's all_reduce rate)"
NVLS = "NVLink SHARP (the NVLS card's all_reduce rate)"
NVLS_TREE_KERNEL = "NVLS-tree kernel (SMs of its channels, NCCL's per-channel rate)"
PIPELINE_FILL = "pipeline fill (a tree's first chunk through every stage but the slowest)"


def binding(latency_s: float, bandwidth_s: dict[str, float]) -> str:
    """What bounds a call's time: the bandwidth term that takes longest, or 'latency' where the fixed terms (launch,
    steps, hops, tree levels) take longer than every bandwidth term."""
    if not bandwidth_s:
        return "latency"
    name, t = max(bandwidth_s.items(), key=lambda kv: kv[1])
    return "latency" if latency_s >= t else name

