"""Megatron-Core 24bad8e6's unfused TopKRouter on Moonlight 16B's MoE layer in the Megatron-Bridge recipe's router
configuration, on one GPU (issue 44, session 52 moonrouter52; calibration/h200x1-moonrouter52-2026-12-01). One JSON
document on stdout: {"device": {...}, "quick": bool, "mcore": version or why not, "records": [{"layer", "tokens",
"piece": "router", "pass", "impl", "clock": "kernels" | "events" | "host", "time_s", "samples", ...}, ...]}, read by
validation/moonrouter52.py.

    PYTHONPATH=/tmp/mc24:. python studies/moonrouter52_device.py          # on the H200 (megatron/core of 24bad8e6 in /tmp/mc24)
    PYTHONPATH=/tmp/mc24:. python studies/moonrouter52_device.py --device cpu --quick    # the dry run: tiny shapes, float32

The layer: moonlight-ep8 of simcluster/runner/moerouter_grid.GRID (64 experts, hidden 2048, top-6, sigmoid with the
expert bias) at the tokens every Moonlight row routes (2,048: heldout/moerouter.layer_keys of the skills file, rows 0-5).
Implementations (impl): the three configurations of studies/moe52_router_count.CONFIGS, built by its make_router (not
copied): `mcore-recipe` (Megatron-Bridge 600d069b's Moonlight recipe: seq_aux_loss 1e-3, moe_router_dtype fp32,
pre_softmax, groups 1 / 1, top-k scaling 2.446; the set's rules judge it), `mcore-recipe-nogroups` (the same, groups
unset) and `mcore-mcrouter50` (mcrouter50's configuration: aux_loss 1e-2, router dtype None), each with the activations
and parameters in bf16 as Megatron's Float16Module holds them; and `torch`, moeker50's plain-torch chain
(studies/moe_router_device.py's Layer), this lease's reference. Megatron set up as studies/mcore_router_device.megatron
does (world size 1), imported. Clocks: `kernels` and `events` as studies/mcore_router_device.records_of takes them
(torch.profiler's device durations summed per call, with the kernel count; CUDA events around back-to-back calls);
`host` = perf_counter around one call with the device drained before it and not waited for after it (the seconds the
host takes to issue the call), one sample per repeat. Megatron 24bad8e6 compiles _apply_expert_bias with torch.compile
(megatron/core/jit.py's jit_fuser); a failed compile falls back to eager (torch._dynamo's suppress_errors) and
torch._dynamo's counters are recorded in device["dynamo"]. On the CPU (the dry run) moe52's stand-ins are placed
(studies/moe52_router_count.stub_triton)."""

from __future__ import annotations

import json
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcore_router_device import megatron, records_of  # noqa: E402
from moe52_router_count import CONFIGS, make_router, stub_triton  # noqa: E402
from moe_kernel_device import stop  # noqa: E402
from moe_router_device import Layer  # noqa: E402

from simcluster.runner.moerouter_grid import GRID  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

LAYER = "moonlight-ep8"
IMPLS = {"mcrouter50": "mcore-mcrouter50", "recipe": "mcore-recipe", "recipe, groups unset": "mcore-recipe-nogroups"}


def host_samples(torch, fn, dev: str, warmup: int, repeats: int) -> list[float]:
    """Seconds the host takes to issue one call of fn (the device drained before each; not waited for after)."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        if dev == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    if dev == "cuda":
        torch.cuda.synchronize()
    return out


def measure(torch, name: str, tokens: int, impl: str, fn, dev: str, args) -> list[dict]:
    """records_of's events and kernels records of fn(backward) and the host record, both passes, tagged with tokens."""
    out = records_of(torch, name, impl, fn, dev, args.warmup, args.repeats, args.prof_repeats)
    for pas, bwd in (("fwd", False), ("fwdbwd", True)):
        hs = host_samples(torch, lambda bwd=bwd: fn(bwd), dev, args.warmup, args.repeats)
        out.append({"layer": name, "piece": "router", "pass": pas, "impl": impl, "clock": "host",
                    "time_s": statistics.median(hs), "samples": hs})
    return [{**r, "tokens": tokens} for r in out]


def mcore_fn(torch, mods, lay, cfg: tuple, dev: str, dtype):
    """fn(backward) of make_router's router for the layer `lay` in one configuration: router(x) on the layer's own
    input [T, 1, h]; backward of (probs . g).sum(), g a fixed T x E fp32 tensor (as mcore_router_device.mcore_router)."""
    r = make_router(torch, mods, (lay.T, lay.E, lay.h, lay.k), *cfg, act=dtype, dev=dev)
    x = lay.x.view(lay.T, 1, lay.h)
    g = torch.randn(lay.T, lay.E, generator=torch.Generator(device="cpu").manual_seed(52)).to(dev)

    def fn(backward: bool) -> None:
        probs, _ = r(x)
        if backward:
            (probs.float() * g).sum().backward()
    return fn


def setup(torch, dev: str):
    """megatron()'s modules and version after 24bad8e6's names and, on the CPU, moe52's stand-ins (a triton for the
    imports where none is installed, torch.cuda.current_device answering 'cpu' for the router's buffers)."""
    if dev == "cpu":
        stub_triton(torch)
    try:
        from megatron.core.transformer.moe import moe_utils
    except Exception as exc:   # recorded: the torch chain still runs
        return None, f"not run: {type(exc).__name__}: {str(exc)[:200]}"
    if not hasattr(moe_utils, "get_default_model_comm_pgs"):   # megatron() reads 0.14's name
        moe_utils.get_default_model_comm_pgs = moe_utils.get_default_pg_collection
    import torch._dynamo

    torch._dynamo.config.suppress_errors = True   # a failed compile of _apply_expert_bias runs it eagerly
    return megatron(torch, dev)


def main(argv=None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--quick", action="store_true", help="tiny shapes (T / 64, h / 16): a dry run")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10, help="events and host samples per record")
    ap.add_argument("--prof-repeats", type=int, default=3, help="profiled runs per kernels record")
    args = ap.parse_args(argv)
    import torch

    dev = args.device
    if dev == "cuda" and not torch.cuda.is_available():
        print("moonrouter52_device: --device cuda but torch sees no CUDA device (use --device cpu --quick for a dry run)", file=sys.stderr)
        return 2
    if dev == "cuda":
        torch.cuda.set_device(0)
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    device = {"name": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu", "torch": torch.__version__,
              "cuda": torch.version.cuda, "dtype": str(dtype)}
    mods, note = setup(torch, dev)
    records: list[dict] = []
    signal.signal(signal.SIGTERM, stop)   # timeout's signal: the records measured so far are still written
    try:
        lay = Layer(torch, next(r for r in GRID if r[0] == LAYER), dev, dtype, args.quick)
        records += measure(torch, LAYER, lay.T, "torch", lay.router, dev, args)
        for name, *cfg in (CONFIGS if mods is not None else ()):
            impl = IMPLS[name]
            try:
                records += measure(torch, LAYER, lay.T, impl, mcore_fn(torch, mods, lay, tuple(cfg), dev, dtype), dev, args)
            except Exception as exc:   # a config Megatron refuses or a failed call: recorded, the rest stands
                device.setdefault("mcore_failed", {})[impl] = f"{type(exc).__name__}: {str(exc)[:200]}"
    except TimeoutError as exc:
        device["stopped"] = f"{exc} after {len(records)} records"
    if "torch._dynamo" in sys.modules:
        from torch._dynamo.utils import counters
        device["dynamo"] = {k: {str(a): int(b) for a, b in v.items()} for k, v in counters.items() if v}
    json.dump({"device": device, "quick": args.quick, "mcore": note, "records": records}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
