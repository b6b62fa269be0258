"""Megatron-Core's own token permutations (megatron.core.transformer.moe.moe_utils permute / sort_chunks_by_idxs /
unpermute, megatron-core 0.14.0, the non-fused path: no Transformer Engine) against moeker50's plain-torch form
(studies/moe_router_device.py's Layer.permute) on the 7 layers of simcluster/runner/moerouter_grid.GRID, forward and
forward + backward, in one process on one GPU (issue 44, session 50 mcperm50; calibration/h200x1-mcperm50-2026-12-01).
One JSON document on stdout: {"device": {...}, "quick": bool, "mcore": version or why not, "records": [{"layer",
"piece": "permute", "pass", "impl": "mcore" | "torch", "clock": "kernels" | "events", "time_s", "samples", ...}]},
read by validation/mcperm50.py.

    PYTHONPATH=/tmp/mc:. python studies/mcore_perm_device.py                 # on the H200 (megatron-core unpacked in /tmp/mc)
    PYTHONPATH=. python studies/mcore_perm_device.py --device cpu --quick    # the dry run: tiny shapes, float32

Clocks and setup are imported, not copied: moeker50's clocks (studies/mcore_router_device.records_of over
studies/moe_kernel_device.profile_kernels and moe_router_device.timer) and mcrouter50's Megatron setup
(studies/mcore_router_device.megatron: world size 1, parallel_state's groups of size 1). The routing is the torch
chain's own (Layer.route, made once, outside the timed call), so both forms permute the same tokens.
impl mcore, as megatron-core 0.14.0's MoEAlltoAllTokenDispatcher calls it with moe_permute_fusion False and no drop:
permute(x, routing_map, probs=dense T x E probs, num_out_tokens=T k) -> where the layer has local experts > 1 and ep > 1,
sort_chunks_by_idxs(tokens, ep x local chunk sizes, the rank-major -> local-major order, probs) -> the rows times their
permuted probabilities (where the experts apply them; the torch form's unpermute does the same product) -> where sorted,
sort_chunks_by_idxs back (restore order, no probs) -> unpermute(rows, sorted_indices, x's shape, routing_map=routing
map). fwdbwd: backward of the output's sum (in fp32) into x and the probabilities, as Layer.permute does. Chunk sizes
are the torch form's (equal chunks, the last taking the rest), held in CPU tensors as the dispatcher holds them after
its device-to-host copy. Where megatron-core does not import, the torch form is still timed and "mcore" says why."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcore_router_device import megatron, records_of  # noqa: E402
from moe_kernel_device import stop  # noqa: E402
from moe_router_device import Layer  # noqa: E402

from simcluster.runner.moerouter_grid import GRID  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402


def mcore_permute(torch, lay, dev: str):
    """fn(backward) running Megatron's permute -> (sort -> restore) -> unpermute on one Layer's routing."""
    from megatron.core.transformer.moe.moe_utils import permute, sort_chunks_by_idxs, unpermute

    with torch.no_grad():
        probs_k, idx, rmap, _, _ = lay.route()
        dense = torch.zeros(lay.T, lay.E, device=probs_k.device, dtype=torch.float32).scatter(1, idx, probs_k.float())
    rows = lay.T * lay.k
    sizes = [rows // max(1, lay.chunks)] * lay.chunks
    sizes[-1:] = [rows - sum(sizes[:-1])] if sizes else []
    split = torch.tensor(sizes, dtype=torch.long)
    order, back = torch.tensor(lay.order, dtype=torch.long), torch.tensor(lay.back, dtype=torch.long)
    split_back = split[order] if lay.chunks else split

    def fn(backward: bool):
        probs = dense.detach().clone().requires_grad_(backward)
        out, pprobs, sorted_idx = permute(lay.x, rmap, probs=probs, num_out_tokens=rows, fused=False)
        if lay.chunks:
            out, pprobs = sort_chunks_by_idxs(out, split, order, probs=pprobs, fused=False)
        out = out * pprobs.unsqueeze(-1).to(out.dtype)
        if lay.chunks:
            out, _ = sort_chunks_by_idxs(out, split_back, back, fused=False)
        y = unpermute(out, sorted_idx, restore_shape=lay.x.shape, routing_map=rmap, fused=False)
        if backward:
            y.float().sum().backward()
        return y
    return fn


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
        print("mcore_perm_device: --device cuda but torch sees no CUDA device (use --device cpu --quick for a dry run)", file=sys.stderr)
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
            pieces = [("torch", lay.permute)]
            if mods is not None:
                try:
                    pieces.append(("mcore", mcore_permute(torch, lay, dev)))
                except Exception as exc:   # an API mismatch: recorded, the torch form stands
                    device.setdefault("mcore_failed", {})[lay.name] = f"{type(exc).__name__}: {str(exc)[:200]}"
            for impl, fn in pieces:
                try:
                    recs = records_of(torch, lay.name, impl, fn, dev, args.warmup, args.repeats, args.prof_repeats)
                except Exception as exc:   # a failed call: recorded, the rest stands
                    device.setdefault("mcore_failed", {})[f"{lay.name} {impl}"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                    continue
                records += [{**r, "piece": "permute"} for r in recs]
    except TimeoutError as exc:
        device["stopped"] = f"{exc} after {len(records)} records"
    json.dump({"device": device, "quick": args.quick, "mcore": note, "records": records}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
