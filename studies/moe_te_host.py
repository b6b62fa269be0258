"""Derive framework `megatron`'s host seconds per modelled kernel after each MoE dispatcher sync
(FrameworkSpec.moe_sync_kernel_s, llm/moe_sync.py) from one measured GPU-idle figure, no step time (issue 44, moepub).

Source: Megatron-Bridge 067f987 skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md L60-87 (recorded in
calibration/published/llm-megatron-bridge-skills-qwen3-30b-h100-bf16.yaml, row 0: Qwen3 30B-A3B, 16 H100, BF16, EP 16
HybridEP, no EP overlap, CUDA graphs over router and preprocess): step 24.7138 s, rank 0's Nsight GPU-active interval
union 22.821 s, so 1.893 s of the step the GPU ran nothing (a lower bound: a profiled step is at least as long). The
host per modelled kernel c is the value at which the model's MoE sync term adds that idle to the row's predicted step
(bisection). The idle is the step's whole GPU idle (optimizer, data, loss included), so c is an upper estimate for the MoE
layers alone. Printed with the c that +-25% of the idle would give (its sensitivity).
    python studies/moe_te_host.py
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.cards import load_collective  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm.predict import network_for, predict_llm  # noqa: E402
from simcluster.machine_models import build_cluster  # noqa: E402
from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import framework_of, llm_usage, machine_for, spec_of  # noqa: E402

SOURCE = ROOT / "calibration" / "published" / "llm-megatron-bridge-skills-qwen3-30b-h100-bf16.yaml"
STEP_S, GPU_ACTIVE_S = 24.7138, 22.821     # SKILL.md L70 (EP overlap off) and L85 (GPU-active interval union, overlap off)
IDLE_S = STEP_S - GPU_ACTIVE_S


def row0_step(c: float) -> float:
    return row_result(0, c).step_time_s


def row_result(i: int, c: float):
    """The source's row i predicted with moe_sync_kernel_s = c (framework megatron otherwise)."""
    ref = read_published(SOURCE, "published-llm-run")
    usage, run = llm_usage(ref), ref.runs[i]
    (model, par, batch), _, _ = spec_of(run, usage.assumptions)
    machine = machine_for(usage, run["gpus"])
    intra = load_collective(machine.card)[0]
    net = network_for(machine, intra, build_cluster(machine, intra) if machine.domains > 1 else None)
    fw = replace(framework_of(ref, run), moe_sync_kernel_s=c)
    return predict_llm(model, par, batch, load_gpu(machine.gpu_card)[0], net, run["gpus"], "megatron", trace=False,
                       framework=fw)


def derive(idle_s: float = IDLE_S) -> float:
    """c (seconds per modelled kernel) at which the term adds idle_s to row 0's predicted step."""
    base, lo, hi = row0_step(0.0), 0.0, 200e-6
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if row0_step(mid) - base < idle_s else (lo, mid)
    return (lo + hi) / 2


def main() -> None:
    c = derive()
    print(f"GPU idle {IDLE_S:.3f} s of the {STEP_S} s step -> c = {1e6 * c:.1f} us per modelled kernel")
    for k in (0.75, 1.25):
        print(f"  idle x{k}: c = {1e6 * derive(k * IDLE_S):.1f} us")


if __name__ == "__main__":
    main()
