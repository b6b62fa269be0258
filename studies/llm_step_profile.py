"""Where the 1-GPU step error sits: measured GPU kernel time per op class vs the model's, and the run-to-run spread
(not a test).

calibration/h100x1-step-profile-2026-11-23 (device_run.sh there): torch.profiler kernels of the runner's 3B and 1B
steps on an H100 (3 profiled steps, per-step time per kernel name), the same steps timed in three fresh processes
each, and one GEMM timed back to back (gpu-micro's way) vs interleaved with memory-bound copies, with nvidia-smi's
SM clock and power sampled meanwhile. Kernels are classed by name (cuDNN, flash SDPA = attention; nvjet, cutlass,
gemm = GEMM; the fused AdamW = optimizer; the rest memory-bound); the model's classes are the op lists of
simcluster.llm.ops with the torch-amp framework on the H100 card, GPU time only (no host).
    python studies/llm_step_profile.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm import host, ops, vocab_ops  # noqa: E402
from simcluster.llm.framework import TORCH_AMP  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec  # noqa: E402

BUNDLE = ROOT / "calibration" / "h100x1-step-profile-2026-11-23"
CARD = ROOT / "models" / "gpu" / "h100-sxm-interleaved.yaml"   # the card validation/llm_single_gpu.py uses for eager steps
CLASSES = ("gemm", "attention", "memory", "optimizer")
PROFILED_STEPS = 3   # kernel_profile.py profiles 3 steps; its counts are their sum, its times per step


def kernel_class(name: str) -> str:
    low = name.lower()
    if any(k in low for k in ("flash", "fmha", "sdpa", "attention", "cudnn")):   # cuDNN SDPA's helper kernels too
        return "attention"
    if any(k in low for k in ("gemm", "nvjet", "cutlass", "xmma", "cublas")):
        return "gemm"
    if "fusedopti" in low.replace("_", "") or "adam" in low:
        return "optimizer"
    return "memory"


def predicted_classes(arch: dict, seq: int, micro: int, gpu) -> tuple[dict[str, float], dict[str, float]]:
    """GPU time and kernels per op class of one torch-amp step (the ops llm/work.py times, summed without the host model)."""
    model = TransformerSpec(arch["layers"], arch["hidden"], arch["ffn"], arch["heads"], arch["kv_heads"], arch["vocab"], seq,
                            tied_embeddings=arch["tied"])
    par, batch, fw = ParallelSpec(), BatchSpec(micro, micro), TORCH_AMP
    layer = ops.layer_forward(model, par, batch, fw) + ops.layer_backward(model, par, batch, fw)
    ends = (vocab_ops.embedding_forward(model, par, batch, fw) + vocab_ops.embedding_backward(model, par, batch, fw)
            + vocab_ops.head_forward(model, par, batch, fw) + vocab_ops.head_backward(model, par, batch, fw))
    out, kernels = dict.fromkeys(CLASSES, 0.0), dict.fromkeys(CLASSES, 0.0)
    for op in layer * arch["layers"] + ends:
        kind = "memory" if op.kind == "upcast" else op.kind   # a bf16 -> fp32 copy is a memory-bound kernel here
        out[kind] += ops.op_time_s(gpu, op, "bf16")
        kernels[kind] += op.count
    params = model.parameter_count()
    casts = host.weight_matrices(model, fw) * arch["layers"] + 1           # one per weight matrix and the embedding
    out["memory"] += casts * (gpu.memory_time_s(fw.cast_bytes / 2 * params / casts)      # forward casts
                              + gpu.upcast_time_s(fw.cast_bytes / 2 * params / casts))   # backward up-casts
    kernels["memory"] += 2 * casts
    out["optimizer"], kernels["optimizer"] = gpu.memory_time_s(fw.adam_bytes * params), 1
    return out, kernels


def main() -> int:
    gpu = load_gpu(CARD)[0]
    presets = {json.loads(p.read_text())["model"]["preset"]: json.loads(p.read_text())["model"] for p in sorted(BUNDLE.glob("rep*_1.json"))}
    print("GPU kernel time per step by op class, measured (torch.profiler) vs predicted (H100 interleaved card, GPU only)")
    print("(kernels per step: the profile's counts over its 3 steps / 3, memsets left out; the inventory was checked against")
    print(" the 3b seq 2048 mb 2 kernel list only: the other two rows are held out for it)")
    print(f"{'model':>5} {'seq':>5} {'mb':>3} {'class':<10} {'measured ms':>11} {'predicted ms':>12} {'error':>7} {'kernels meas':>12} {'pred':>6}")
    for run in json.loads((BUNDLE / "kernels.json").read_text()):
        measured, count = dict.fromkeys(CLASSES, 0.0), dict.fromkeys(CLASSES, 0.0)
        for name, (n, us) in run["kernels_us_per_step"].items():
            measured[kernel_class(name)] += us * 1e-6
            count[kernel_class(name)] += 0 if name.startswith("Memset") else n / PROFILED_STEPS
        pred, pred_count = predicted_classes(presets[run["preset"]], run["seq"], run["micro_batch"], gpu)
        for c in (*CLASSES, "total"):
            m = sum(measured.values()) if c == "total" else measured[c]
            p = sum(pred.values()) if c == "total" else pred[c]
            n, pn = (sum(count.values()), sum(pred_count.values())) if c == "total" else (count[c], pred_count[c])
            print(f"{run['preset']:>5} {run['seq']:>5} {run['micro_batch']:>3} {c:<10} {m * 1e3:11.2f} {p * 1e3:12.2f} "
                  f"{100 * (p / m - 1):+6.1f}% {n:12.0f} {pn:6.0f}")
    print("\nrun-to-run: median step time (ms) in fresh processes")
    for preset in sorted(presets):
        per_shape: dict[tuple, list[float]] = {}
        for path in sorted(BUNDLE.glob(f"rep{preset}_*.json")):
            for s in json.loads(path.read_text())["shapes"]:
                per_shape.setdefault((s["seq"], s["micro_batch"]), []).append(s["median_step_s"] * 1e3)
        for (seq, mb), times in per_shape.items():
            spread = (max(times) - min(times)) / statistics.fmean(times) * 100
            print(f"{preset:>5} {seq:>5} {mb:>3}  {', '.join(f'{t:.1f}' for t in times)}  (max - min = {spread:.1f}% of the mean)")
    print("\none GEMM back to back vs interleaved with 3 fp32->bf16 copies of 50 MB (median us, SM clock MHz / power W mid-run)")
    for r in json.loads((BUNDLE / "duty.json").read_text()):
        m, n, k = r["shape"]
        mid = r["clocks_power"][len(r["clocks_power"]) // 2] if r["clocks_power"] else "n/a"
        print(f"  {m}x{n}x{k} {r['phase']:<27} {r['median_ms'] * 1e3:7.1f} us  {2 * m * n * k / r['median_ms'] / 1e9:6.0f} TFLOP/s  {mid}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
