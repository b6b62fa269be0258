"""Predicted vs measured 1-GPU Llama-shaped training steps, held out (not a test).

Every `llm-step` run (mode single) of the bundles below is predicted from its architecture, sequence length
and micro-batch alone, on the GPU card of the GPU it ran on, with the torch-amp framework (the runner's own:
fp32 weights under bf16 autocast, fused AdamW; simcluster.llm.framework.TORCH_AMP). The GPU cards are fitted on
gpu-micro micro-benchmarks only (their provenance is printed), never on these steps, and the eager host cost
per kernel on separate hidden-128 decoders of 2-32 layers (calibration/llm-host-2026-11-23, the same kind of
machine), so every row is held out. The GPU-only column drops the host model, to show what it adds.
Step time: the median of the timed steps; memory: torch.cuda.max_memory_allocated against the model's
allocated peak (no CUDA context or workspaces). Shapes that ran out of memory are listed with the
prediction's `fits`.
    python validation/llm_single_gpu.py [--clock duty] [BUNDLE ...]
--clock duty runs each step at its own power-limited clock (llm/clock.py) instead of the card's reference clock.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm import host  # noqa: E402
from simcluster.llm.comm import Network  # noqa: E402
from simcluster.llm.framework import TORCH_AMP, FrameworkSpec  # noqa: E402
from simcluster.llm.memory import GiB, memory_per_gpu  # noqa: E402
from simcluster.llm.predict import predict_llm  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

# The eager torch step runs its GEMMs between memory-bound kernels: the cards fitted on GEMMs timed that way
# (gpu-micro's interleaved condition, docs/models/gpu.md), not the back-to-back cards Megatron-style runs use.
H100, H200 = "models/gpu/h100-sxm-interleaved.yaml", "models/gpu/h200-sxm-interleaved.yaml"
BUNDLES = {"calibration/h100x1-gpu-2026-11-23": (H100, "h100"),
           "calibration/h200x1-gpu-2026-11-23": (H200, "h200"),
           "calibration/h200x1-gpu-2026-11-23/rep2": (H200, "h200"),
           "calibration/h100x1-llm-shapes-2026-11-23": (H100, "h100"),
           "calibration/h200x1-llm-shapes-2026-11-23": (H200, "h200"),
           "calibration/h200x2-llm-2gpu-sealed-2026-11-23": (H200, "h200")}   # its mode-single runs (session 20, sealed)
HOST = ROOT / "calibration" / "llm-host-2026-11-23"   # eager host cost, measured on hidden-128 decoders (device_run.sh)


def host_framework(label: str) -> tuple[FrameworkSpec, str]:
    """TORCH_AMP with the host cost per kernel and per step fitted on this GPU machine's tiny-decoder steps
    (2-32 layers, hidden 128: GPU work negligible); none of the validated shapes is among them."""
    points, kernels = [], None
    for path in sorted(HOST.glob(f"{label}-L*.json")):
        doc = json.loads(path.read_text())
        for shape in doc["shapes"]:
            if shape["status"] == "ok":
                tiny = model_of(doc, shape["seq"])
                kernels = host.layer_kernels(tiny, ParallelSpec(), BatchSpec(shape["micro_batch"], shape["micro_batch"]), TORCH_AMP)
                points.append((doc["model"]["layers"], shape["median_step_s"]))
    if not points:
        return TORCH_AMP, "no host measurement: GPU-bound only"
    c, a = host.fit_host(points, kernels)
    return replace(TORCH_AMP, host_kernel_s=c, host_step_s=a), f"host {c * 1e6:.1f} us/kernel + {a * 1e3:.2f} ms/step ({len(points)} tiny steps)"


def runs(bundle: Path) -> list[dict]:
    """The llm-step documents of a bundle (each run's stdout is one JSON document; a bundle made by calling the
    runner directly keeps them as *.json at its top)."""
    out = []
    logs = sorted((bundle / "llm-step").glob("*/stdout.txt")) if (bundle / "llm-step").is_dir() else sorted(bundle.glob("*.json"))
    for stdout in logs:
        text = stdout.read_text().strip()
        if not text:
            continue
        start = text.find("{")
        try:
            doc = json.loads(text[start:])
        except json.JSONDecodeError as exc:
            print(f"{stdout}: not an llm-step JSON document ({exc.msg}), skipped", file=sys.stderr)
            continue
        if doc.get("mode") == "single":
            out.append(doc)
    return out


def model_of(doc: dict, seq: int) -> TransformerSpec:
    m = doc["model"]
    return TransformerSpec(m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["vocab"], seq,
                           tied_embeddings=bool(m["tied"]))


def rows(bundle: Path, card: Path, fw: FrameworkSpec, clock_model: str = "fixed") -> list[dict]:
    gpu, _ = load_gpu(card)
    net = Network(None, 1)
    out = []
    for doc in runs(bundle):
        if "fp32 weights" not in str(doc.get("precision", "")):
            print(f"{bundle}: a run with precision {doc.get('precision')!r} is not the torch-amp framework, skipped", file=sys.stderr)
            continue
        for shape in doc["shapes"]:
            seq, mb = shape["seq"], shape["micro_batch"]
            model = model_of(doc, seq)
            batch = BatchSpec(mb, mb, "bf16")
            preset = doc["model"].get("preset") or f"{model.layers}L/h{model.hidden}"
            row = {"gpu": gpu.name, "preset": preset, "params_B": model.parameter_count() / 1e9,
                   "seq": seq, "mb": mb, "status": shape["status"]}
            mem = memory_per_gpu(model, ParallelSpec(), batch, gpu.hbm_capacity_bytes, fw)
            row["pred_mem_GiB"], row["fits"] = mem.allocated / GiB, mem.fits
            if shape.get("max_memory_allocated_bytes"):
                row["meas_mem_GiB"] = shape["max_memory_allocated_bytes"] / GiB
            if shape["status"] == "ok":
                r = predict_llm(model, ParallelSpec(), batch, gpu, net, 1, trace=False, framework=fw, clock_model=clock_model)
                gpu_only = predict_llm(model, ParallelSpec(), batch, gpu, net, 1, trace=False,
                                       framework=replace(fw, host_kernel_s=0.0, host_step_s=0.0), clock_model=clock_model)
                row["pred_ms"], row["meas_ms"] = r.step_time_s * 1e3, shape["median_step_s"] * 1e3
                row["gpu_only_ms"] = gpu_only.step_time_s * 1e3
            out.append(row)
    return out


def pct(pred: float, meas: float) -> float:
    return (pred - meas) / meas * 100


def main(argv: list[str]) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundles", nargs="*", metavar="BUNDLE", help=f"one of {', '.join(BUNDLES)} (default: all)")
    ap.add_argument("--clock", choices=("fixed", "duty"), default="fixed",
                    help="fixed: the card's reference clock (default); duty: each step at its own power-limited clock")
    args = ap.parse_args([a.rstrip("/") for a in argv])
    clock_model = args.clock
    unknown = [b for b in args.bundles if b not in BUNDLES]
    if unknown:
        ap.error(f"unknown bundle {unknown[0]!r}: one of {', '.join(BUNDLES)}")
    chosen = {b: BUNDLES[b] for b in args.bundles} if args.bundles else BUNDLES
    by_gpu: dict[str, dict] = {}
    for name, (card, label) in chosen.items():
        bundle, card = ROOT / name, ROOT / card
        if not runs(bundle):
            print(f"{bundle.relative_to(ROOT) if bundle.is_relative_to(ROOT) else bundle}: no llm-step runs (not measured yet)\n")
            continue
        prov = load_gpu(card)[1].get("provenance", {})
        fw, how = host_framework(label)
        print(f"== {bundle.name} on card {card.relative_to(ROOT)} (card provenance: {json.dumps(prov)[:200]})")
        print(f"   framework torch-amp, {how}")
        print(f"{'model':>9} {'params':>7} {'seq':>5} {'mb':>3} {'meas ms':>9} {'pred ms':>9} {'err %':>7} {'GPU-only':>9} {'err %':>7} "
              f"{'meas GiB':>9} {'pred GiB':>9} {'err %':>7}")
        t_err, g_err, m_err = [], [], []
        for r in rows(bundle, card, fw, clock_model):
            if r["status"] == "ok":
                by_gpu.setdefault(label, {}).setdefault((r["preset"], r["seq"], r["mb"]), (r["meas_ms"], r["pred_ms"]))
            if r["status"] != "ok":
                print(f"{r['preset']:>9} {r['params_B']:>6.2f}B {r['seq']:>5} {r['mb']:>3} {'OOM':>9} {'':>9} {'':>7} {'':>9} {'':>7} "
                      f"{r.get('meas_mem_GiB', float('nan')):>9.2f} {r['pred_mem_GiB']:>9.2f} predicted fits: {r['fits']}")
                continue
            te, ge = pct(r["pred_ms"], r["meas_ms"]), pct(r["gpu_only_ms"], r["meas_ms"])
            g_err.append(abs(ge))
            me = pct(r["pred_mem_GiB"], r["meas_mem_GiB"]) if "meas_mem_GiB" in r else float("nan")
            t_err.append(abs(te))
            if me == me:
                m_err.append(abs(me))
            print(f"{r['preset']:>9} {r['params_B']:>6.2f}B {r['seq']:>5} {r['mb']:>3} {r['meas_ms']:>9.1f} {r['pred_ms']:>9.1f} {te:>+7.1f} "
                  f"{r['gpu_only_ms']:>9.1f} {ge:>+7.1f} "
                  f"{r.get('meas_mem_GiB', float('nan')):>9.2f} {r['pred_mem_GiB']:>9.2f} {me:>+7.1f}")
        if t_err:
            print(f"step time: mean |error| {statistics.mean(t_err):.1f}%, max {max(t_err):.1f}% over {len(t_err)} shapes (held out); "
                  f"GPU-bound only (no host model): mean {statistics.mean(g_err):.1f}%, max {max(g_err):.1f}%")
        if m_err:
            print(f"memory:    mean |error| {statistics.mean(m_err):.1f}%, max {max(m_err):.1f}% over {len(m_err)} shapes (held out)")
        print()
    cross(by_gpu)
    return 0


def cross(by_gpu: dict[str, dict]) -> None:
    """The what-if across GPUs: H100 time / H200 time of each shape measured on both, predicted vs measured."""
    if not {"h100", "h200"} <= set(by_gpu):
        return
    common = sorted(set(by_gpu["h100"]) & set(by_gpu["h200"]), key=lambda k: (k[0], k[1] * k[2], k[1]))
    print("== H100 -> H200: step time ratio H100 / H200 of the same shape (each GPU on its own card and host)")
    print(f"{'model':>9} {'seq':>5} {'mb':>3} {'measured':>9} {'predicted':>9} {'err %':>7}")
    errs = []
    for key in common:
        (m1, p1), (m2, p2) = by_gpu["h100"][key], by_gpu["h200"][key]
        err = pct(p1 / p2, m1 / m2)
        errs.append(abs(err))
        print(f"{key[0]:>9} {key[1]:>5} {key[2]:>3} {m1 / m2:>9.3f} {p1 / p2:>9.3f} {err:>+7.1f}")
    print(f"speed-up ratio: mean |error| {statistics.mean(errs):.1f}%, max {max(errs):.1f}% over {len(errs)} shapes")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
