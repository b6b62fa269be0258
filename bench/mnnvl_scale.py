"""Wall time of multi-node NVLink machines at scale (not a test): GB200 NVL72 racks (machine.nvlink_domain).

    python bench/mnnvl_scale.py

1. One all_reduce (1 MiB, 1 GiB) across 228 NVL72 racks (16,416 GPUs, 72 x 400G NICs per rack, rail-optimized),
   the GB200 machine of the MoE scenario below with full 72-GPU racks: the platform built, the ring step solved, the call
   predicted (fastest of 3 runs of the whole point).
2. One LLM iteration of the MoE scenario (scenarios/llm/gb200-nvl72-vs-hgx-b200.yaml: EP64 inside 64-GPU domains,
   TP1 PP4) on 16,384 GPUs, DP 4096, 16 micro-batches per replica, against the same on HGX B200 nodes.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.collectives.fabric import predict_fabric  # noqa: E402
from simcluster.collectives.ring_flows import ring_flows  # noqa: E402
from simcluster.machine_models import build_cluster  # noqa: E402
from simcluster.scenario import load_variants  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from llm_scale import timed_step  # noqa: E402

LLM = ROOT / "scenarios" / "llm" / "gb200-nvl72-vs-hgx-b200.yaml"


def collective() -> None:
    rack = dict(load_variants(LLM))["gb200-nvl72"].machine
    machine = dataclasses.replace(rack, nodes=228 * 18, nvlink_domain=72, nvls_card=None)
    for size in (2**20, 2**30):
        best = None
        for _ in range(3):
            t0 = time.perf_counter()
            cluster = build_cluster(machine)
            p = predict_fabric(cluster, "all_reduce", size, None, ring_flows(cluster))
            wall = time.perf_counter() - t0
            best = wall if best is None else min(best, wall)
        print(f"all_reduce {size >> 20:>5} MiB on {p.nranks} GPUs ({machine.domains} NVL72 racks): {p.algorithm}/{p.protocol} "
              f"busbw {p.busbw_Bps / 1e9:.1f} GB/s, wall {best * 1e3:.1f} ms")


def llm() -> None:
    for label, sc in load_variants(LLM):
        dp, r, wall = timed_step(sc.machine, sc.jobs[0], 16384)
        print(f"LLM {label:<12} 16,384 GPUs, dp {dp}: step {r.step_time_s:.3f} s, {r.tflops_per_gpu:.1f} TFLOP/s per GPU, "
              f"{r.events} events, wall {wall:.2f} s")


if __name__ == "__main__":
    from simcluster.script_args import check

    check()   # no arguments: an unknown one is one line, before the run
    collective()
    llm()
