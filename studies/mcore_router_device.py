"""Megatron-Core's own MoE router (megatron.core.transformer.moe.router.TopKRouter, megatron-core 0.14.0, no Transformer
Engine) against moeker50's plain-torch re-implementation of its chain (studies/moe_router_device.py's Layer), on the 7
layers of simcluster/runner/moerouter_grid.GRID, forward and forward + backward, in one process on one GPU (issue 44,
session 50 mcrouter50; calibration/h200x1-mcrouter50-2026-12-01). One JSON document on stdout: {"device": {...},
"quick": bool, "mcore": version or why not, "records": [{"layer", "piece": "router", "pass", "impl": "mcore" | "torch",
"clock": "kernels" | "events", "time_s", "samples", ...}, ...]}, read by validation/mcrouter50.py.

    PYTHONPATH=/tmp/mc:. python studies/mcore_router_device.py                 # on the H200 (megatron-core unpacked in /tmp/mc)
    PYTHONPATH=. python studies/mcore_router_device.py --device cpu --quick    # the dry run: tiny shapes, float32

Clocks: moeker50's, imported from studies/moe_kernel_device.py (not copied): `kernels` = torch.profiler's device-side
durations summed per call (profile_kernels; n_kernels, span_s, gemm_s beside), `events` = CUDA events around eager calls
(moe_router_device.timer; host launch gaps inside), one sample per repeat.

Megatron's router, set up on one process: torch.distributed at world size 1 (NCCL; gloo on the CPU), parallel_state's
model-parallel groups all of size 1, TransformerConfig per layer (E experts, hidden h, top-k k, score function, expert
groups / group top-k where the layer has them, the expert bias where the score is a sigmoid (DeepSeek-V3 architecture),
load balancing "aux_loss" with coefficient 1e-2 as the torch chain's, moe_router_pre_softmax False (Megatron's default),
moe_router_dtype None (the GEMM in the activation dtype, bf16, as the torch chain's), no fusion (no TE)); the router in
training mode, layer number 1 (the aux-loss tracker logs, as in a model). Input [T, 1, h] bf16 (sequence-major as
Megatron's layers pass it), the same tensor as the torch chain's. pass fwd: router(x) (probs T x E dense, routing map);
fwdbwd: then backward of (probs . g).sum() (g a fixed random T x E in fp32) into x and the gate weight; the aux loss's
gradient rides on the probabilities (MoEAuxLossAutoScaler), as in Megatron. Where megatron-core does not import (the CPU
dry run here), the torch chain is still timed and "mcore" says why."""

from __future__ import annotations

import json
import os
import signal
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from moe_kernel_device import profile_kernels, stop  # noqa: E402
from moe_router_device import Layer, timer  # noqa: E402

from simcluster.runner.moerouter_grid import GRID  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

AUX_COEFF = 1e-2   # the torch chain's aux weight (moe_router_device.Layer.router)
IMPLS = (("mcore", None), ("mcore-fp32", "fp32"))   # Megatron's default (GEMM and routing in bf16) and moe_router_dtype fp32


def megatron(torch, dev: str):
    """(the megatron.core modules needed, version) after a world-size-1 process group and parallel_state's groups; or
    (None, why not)."""
    try:
        import torch.distributed as dist
        from megatron.core import parallel_state
        from megatron.core.transformer.moe import moe_utils

        for name in ("te_general_gemm",):   # megatron-core 0.14 reads it unguarded when Transformer Engine is absent
            if not hasattr(moe_utils, name):
                setattr(moe_utils, name, None)
        import megatron.core
        from megatron.core.transformer.moe.router import TopKRouter
        from megatron.core.transformer.transformer_config import TransformerConfig

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        if not dist.is_initialized():
            dist.init_process_group("nccl" if dev == "cuda" else "gloo", rank=0, world_size=1)
        parallel_state.initialize_model_parallel(tensor_model_parallel_size=1, pipeline_model_parallel_size=1)
        mods = {"TopKRouter": TopKRouter, "TransformerConfig": TransformerConfig, "pgs": moe_utils.get_default_model_comm_pgs,
                "gating_linear": moe_utils.router_gating_linear}
        return mods, str(getattr(megatron.core, "__version__", "unknown"))
    except Exception as exc:   # not installed / an API mismatch: recorded, the torch chain still runs
        return None, f"not run: {type(exc).__name__}: {str(exc)[:200]}"


def mcore_router(torch, mods, lay, dev: str, dtype, router_dtype=None):
    """Megatron's TopKRouter for one Layer (its E, h, k, score function, groups), on `dev` in `dtype` (router_dtype: its
    moe_router_dtype), and fn(backward). On the CPU (the dry run) Megatron's gating would move the weight to CUDA: its
    own router_gating_linear is called instead, the rest of the chain as on the GPU."""
    sig = lay.sf == "sigmoid"
    cfg = mods["TransformerConfig"](
        num_layers=1, hidden_size=lay.h, num_attention_heads=8, num_moe_experts=lay.E, moe_router_topk=lay.k,
        moe_router_score_function=lay.sf, moe_router_num_groups=lay.groups or None, moe_router_group_topk=lay.gtop or None,
        moe_router_enable_expert_bias=sig, moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=AUX_COEFF,
        moe_router_pre_softmax=False, moe_router_fusion=False, moe_router_dtype=router_dtype, add_bias_linear=False, bf16=dtype == torch.bfloat16,
        params_dtype=dtype, use_cpu_initialization=True)
    router = mods["TopKRouter"](cfg, model_comm_pgs=mods["pgs"]()).to(dev)
    router.set_layer_number(1)
    router.train()
    if dev != "cuda":
        router.gating = lambda inp: mods["gating_linear"](inp, router.weight, inp.dtype)
    x = lay.x.view(lay.T, 1, lay.h)
    g = torch.randn(lay.T, lay.E, generator=torch.Generator(device="cpu").manual_seed(50)).to(dev)

    def fn(backward: bool) -> None:
        probs, _ = router(x)
        if backward:
            (probs.float() * g).sum().backward()
    return fn


def records_of(torch, name: str, impl: str, fn, dev: str, warmup: int, repeats: int, prof_repeats: int) -> list[dict]:
    out = []
    one = timer(torch, dev, 0, 1)
    for pas, bwd in (("fwd", False), ("fwdbwd", True)):
        def call(bwd=bwd):
            fn(bwd)
        timer(torch, dev, warmup, 1)(call)
        ev = [one(call) for _ in range(repeats)]
        ks = profile_kernels(torch, call, dev, warmup, prof_repeats)
        base = {"layer": name, "piece": "router", "pass": pas, "impl": impl}
        out.append({**base, "clock": "events", "time_s": statistics.median(ev), "samples": ev})
        out.append({**base, "clock": "kernels", "time_s": statistics.median(k["busy_s"] for k in ks),
                    "samples": [k["busy_s"] for k in ks], "n_kernels": statistics.median(k["n"] for k in ks),
                    "span_s": statistics.median(k["span_s"] for k in ks), "gemm_s": statistics.median(k["gemm_s"] for k in ks)})
    return out


def main(argv=None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--quick", action="store_true", help="tiny shapes (T / 64, h / 16): a dry run")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10, help="events samples per record")
    ap.add_argument("--prof-repeats", type=int, default=3, help="profiled runs per kernels record")
    ap.add_argument("--layers", default="", help="comma-separated GRID names (default: all)")
    args = ap.parse_args(argv)
    import torch

    dev = args.device
    if dev == "cuda" and not torch.cuda.is_available():
        print("mcore_router_device: --device cuda but torch sees no CUDA device (use --device cpu --quick for a dry run)", file=sys.stderr)
        return 2
    if dev == "cuda":
        torch.cuda.set_device(0)
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    device = {"name": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu", "torch": torch.__version__,
              "cuda": torch.version.cuda, "dtype": str(dtype)}
    mods, note = megatron(torch, dev)
    keep = set(args.layers.split(",")) if args.layers else None
    records: list[dict] = []
    signal.signal(signal.SIGTERM, stop)   # timeout's signal: the records measured so far are still written
    try:
        for row in GRID:
            if keep and row[0] not in keep:
                continue
            lay = Layer(torch, row, dev, dtype, args.quick)
            records += records_of(torch, lay.name, "torch", lay.router, dev, args.warmup, args.repeats, args.prof_repeats)
            if mods is not None:
                for impl, rdt in IMPLS:
                    try:
                        fn = mcore_router(torch, mods, lay, dev, dtype, rdt)
                        records += records_of(torch, lay.name, impl, fn, dev, args.warmup, args.repeats, args.prof_repeats)
                    except Exception as exc:   # a config Megatron refuses or a failed call: recorded, the rest stands
                        device.setdefault("mcore_failed", {})[f"{lay.name} {impl}"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    except TimeoutError as exc:
        device["stopped"] = f"{exc} after {len(records)} records"
    json.dump({"device": device, "quick": args.quick, "mcore": note, "records": records}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
