"""A MoE layer's router, the dispatcher's permutations and the token-count sync, timed on one GPU on the held-out
published MoE rows' own layers (simcluster/runner/moerouter_grid.GRID; issue 44, session 49 moerouter). One JSON document
on stdout: {"device": {...}, "quick": bool, "records": [{"layer", "piece", "pass", "impl", "time_s"}, ...]}, read by
simcluster/heldout/moerouter.py.

    python studies/moe_router_device.py                     # on the H200 (calibration/h200x1-moerouter-2026-12-01)
    python studies/moe_router_device.py --device cpu --quick  # the dry run: tiny shapes, float32, any machine

Written in plain torch from the documented algorithms (no Megatron on the device; nothing copied), modelled on
NVIDIA/Megatron-LM megatron/core/transformer/moe/ at d98e8a64 (the stored snapshot, as llm/moe_graphs.py reads it):
  router   (router.py TopKRouter.forward / routing, moe_utils.py topk_softmax_with_capacity, group_limited_topk,
           switch_load_balancing_loss_func): logits = x W^T in the row's activation dtype (bf16), cast to fp32; scores
           softmax (softmax models) or sigmoid plus the expert bias used for the choice (DeepSeek-V3 architecture);
           group-limited top-k where the model has expert groups (the group score = the sum of its top 2 scores, the
           group_topk best groups kept); top-k; the k probabilities normalised to sum 1; the routing map (T x E);
           tokens per expert (its column sum); the switch aux loss E * sum_e (tokens_e / (T k)) * mean_t score_te.
           Not run: the z-loss (off by default, moe_z_loss_coeff None), the random logits of force balancing (one
           normal_ of T x E). pass fwd: all of it; fwdbwd: then backward of (probs . g).sum() + aux into x and W.
  permute  (moe_utils.py permute / unpermute, non-fused, map_type mask): the token index of each routed row
           (arange(T) masked by the transposed routing map), index_select of the T k rows; where the row has local
           experts > 1 and ep > 1, the sort of the received chunks by local expert (token_dispatcher.py
           sort_chunks_by_idxs: split into ep x local chunks, cat in local-expert order) and its inverse before the
           combine; unpermute: the rows times their probabilities, index_add into T tokens. fwdbwd: backward of the
           output's sum into x and the probabilities. masked_select waits for the GPU (its output's size), as it
           does in the dispatcher's torch form.
  te       the same permute / sort / unpermute by Transformer Engine's fused kernels (transformer_engine.pytorch
           moe_permute / moe_sort_chunks_by_index / moe_unpermute, map_type mask), where it imports; the device record
           says which ran ("te": version, or why not).
  sync     a loop of LOOP_LAYERS layers, each router forward + the routed rows gathered in expert order (a sort of the
           top-k indices: no sync of its own) + one (T k x h) x (h x h) GEMM standing in for the experts; wall seconds
           per layer with the token counts copied to the host each layer (.tolist(), as the dispatcher's split sizes
           are) minus the same loop without the copy: the host stalls until the GPU drains, then refills its queue.
           pass "loop_sync" and "loop_nosync" are each loop's wall per layer.
Timing: CUDA events around INNER calls, WARMUP calls first, the median of REPEATS (perf_counter on the CPU)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.runner.moerouter_grid import GRID  # noqa: E402

INNER, LOOP_LAYERS = 5, 8


class Layer:
    """One GRID layer's tensors on the device (quick: T / 64, h / 16, E kept)."""

    def __init__(self, torch, row, dev, dtype, quick: bool):
        name, T, E, h, k, sf, local, ep, rows, groups, gtop = row
        if quick:
            T, h = max(64, T // 64), max(64, h // 16)
        self.torch, self.name, self.T, self.E, self.h, self.k, self.sf = torch, name, T, E, h, k, sf
        self.local, self.ep, self.groups, self.gtop = local, ep, groups, gtop
        g = torch.Generator(device="cpu").manual_seed(49)
        self.x = torch.randn(T, h, generator=g).to(dev, dtype).requires_grad_(True)
        self.w = (torch.randn(E, h, generator=g) / h ** 0.5).to(dev, dtype).requires_grad_(True)
        self.bias = torch.zeros(E, device=dev)
        self.grad = torch.randn(T, k, generator=g).to(dev)
        self.filler = (torch.randn(h, h, generator=g) / h ** 0.5).to(dev, dtype)
        self.chunks = ep * local if local > 1 and ep > 1 else 0
        # the received chunks (ep ranks x local experts) in rank-major order, sorted to local-expert-major, and back
        self.order = [r * local + e for e in range(local) for r in range(ep)] if self.chunks else []
        self.back = sorted(range(len(self.order)), key=self.order.__getitem__) if self.chunks else []

    def route(self):
        """(probs T x k, routing map T x E bool, tokens per expert, aux loss): the router after its GEMM."""
        torch = self.torch
        logits = (self.x @ self.w.t()).float()
        if self.sf == "sigmoid":
            scores = torch.sigmoid(logits)
            choice = scores + self.bias
        else:
            scores = torch.softmax(logits, dim=-1)
            choice = scores
        if self.groups:
            grouped = choice.view(self.T, self.groups, -1)
            gscore = grouped.topk(2, dim=-1).values.sum(-1)
            gidx = gscore.topk(self.gtop, dim=-1).indices
            gmask = torch.zeros_like(gscore).scatter_(1, gidx, 1.0)
            choice = choice.masked_fill(~gmask.bool().repeat_interleave(self.E // self.groups, dim=1), float("-inf"))
        idx = choice.topk(self.k, dim=-1).indices
        probs = scores.gather(1, idx)
        probs = probs / (probs.sum(-1, keepdim=True) + 1e-20)
        rmap = torch.zeros(self.T, self.E, dtype=torch.bool, device=logits.device).scatter_(1, idx, True)
        counts = rmap.sum(0)
        aux = self.E * ((counts.float() / (self.T * self.k)) * scores.mean(0)).sum()
        return probs, idx, rmap, counts, aux

    def router(self, backward: bool):
        probs, _, _, _, aux = self.route()
        if backward:
            ((probs * self.grad).sum() + 1e-2 * aux).backward()

    def permute(self, backward: bool, te=None, counts_host=None, routed=None):
        """permute -> (sort -> unsort) -> unpermute of the routed rows, torch (te None) or TE's fused kernels; routed: a
        route() result (default: one routing made once, so the permute's time holds no router)."""
        torch = self.torch
        if routed is None:
            if not hasattr(self, "_routed"):
                with torch.no_grad():
                    self._routed = self.route()
            routed = self._routed
        probs, idx, rmap, counts, _ = routed
        probs = probs.detach().clone()
        probs = probs.requires_grad_(backward)
        rows = self.T * self.k
        sizes = counts_host if counts_host is not None else [rows // max(1, self.chunks)] * self.chunks
        if self.chunks and len(sizes) != self.chunks:   # the measured counts per expert, folded to ep x local chunks
            sizes = [rows // self.chunks] * self.chunks
        sizes[-1:] = [rows - sum(sizes[:-1])] if sizes else []
        if te is not None:
            pmap = torch.zeros(self.T, self.E, device=probs.device, dtype=probs.dtype).scatter(1, idx, probs)
            out, row_map = te.moe_permute(self.x, rmap.int(), num_out_tokens=rows, map_type="mask")   # mask: int32 T x E
            if self.chunks:
                split = torch.tensor(sizes, dtype=torch.int32, device=out.device)
                out = te.moe_sort_chunks_by_index(out, split, torch.tensor(self.order, device=out.device))
                out = te.moe_sort_chunks_by_index(out, split[self.order], torch.tensor(self.back, device=out.device))
            y = te.moe_unpermute(out, row_map, merging_probs=pmap, restore_shape=self.x.shape, map_type="mask")
        else:
            tok = torch.arange(self.T, device=self.x.device).unsqueeze(0).expand(self.E, -1).masked_select(rmap.t())
            pperm = probs.new_zeros(self.T, self.E).scatter(1, idx, probs).t().masked_select(rmap.t())
            out = self.x.index_select(0, tok)
            if self.chunks:
                parts = torch.split(out, sizes)
                out = torch.cat([parts[i] for i in self.order])
                parts = torch.split(out, [sizes[i] for i in self.order])
                out = torch.cat([parts[i] for i in self.back])
            y = torch.zeros_like(self.x).index_add(0, tok, out * pperm.unsqueeze(1).to(out.dtype))
        if backward:
            y.float().sum().backward()
        return y

    def loop(self, sync: bool) -> None:
        """LOOP_LAYERS layers, each the router forward, the routed rows gathered in expert order by a sort of the top-k
        indices (no host sync of its own: the torch permute's masked_select waits for the GPU, so it is not used here)
        and the stand-in expert GEMM on them; sync: the counts copied to the host (.tolist()) after the router."""
        torch = self.torch
        with torch.no_grad():
            for _ in range(LOOP_LAYERS):
                _, idx, _, counts, _ = self.route()
                if sync:
                    counts.tolist()
                rows = self.x.index_select(0, torch.div(idx.flatten().argsort(stable=True), self.k, rounding_mode="floor"))
                rows @ self.filler


def timer(torch, dev: str, warmup: int, repeats: int, wall: bool = False):
    """fn -> the median over `repeats` of seconds per call after `warmup` calls: CUDA events around INNER calls (the
    CPU: perf_counter); wall: host wall seconds of one call, the device drained before and after (the sync loop's clock)."""
    cuda = dev == "cuda"

    def drain() -> None:
        if cuda:
            torch.cuda.synchronize()

    def run(fn) -> float:
        for _ in range(warmup):
            fn()
        out, inner = [], 1 if wall else INNER
        for _ in range(repeats):
            drain()
            if cuda and not wall:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            if cuda and not wall:
                b.record()
            drain()
            out.append((a.elapsed_time(b) / 1e3 if cuda and not wall else time.perf_counter() - t0) / inner)
        return statistics.median(out)
    return run


def te_module():
    """(transformer_engine.pytorch or None, the version or why not)."""
    try:
        import transformer_engine
        import transformer_engine.pytorch as tep
        for fn in ("moe_permute", "moe_unpermute", "moe_sort_chunks_by_index"):
            getattr(tep, fn)
        return tep, str(getattr(transformer_engine, "__version__", "unknown"))
    except Exception as exc:   # not installed, or an API without these functions: recorded, the torch form still runs
        return None, f"not run: {type(exc).__name__}: {str(exc)[:120]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--quick", action="store_true", help="tiny shapes (T / 64, h / 16): a dry run")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--layers", default="", help="comma-separated GRID names (default: all)")
    args = ap.parse_args(argv)
    import torch

    dev = args.device
    if dev == "cuda" and not torch.cuda.is_available():
        print("moe_router_device: --device cuda but torch sees no CUDA device (use --device cpu --quick for a dry run)", file=sys.stderr)
        return 2
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    te, te_note = te_module() if dev == "cuda" else (None, "not run: cpu")
    name = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"
    device = {"name": name, "torch": torch.__version__, "cuda": torch.version.cuda, "te": te_note, "dtype": str(dtype)}
    keep = set(args.layers.split(",")) if args.layers else None
    t, w = timer(torch, dev, args.warmup, args.repeats), timer(torch, dev, args.warmup, args.repeats, wall=True)
    records = []
    for row in GRID:
        if keep and row[0] not in keep:
            continue
        lay = Layer(torch, row, dev, dtype, args.quick)
        for piece, fn in (("router", lay.router), ("permute", lay.permute)):
            for pas, bwd in (("fwd", False), ("fwdbwd", True)):
                records.append({"layer": lay.name, "piece": piece, "pass": pas, "impl": "torch",
                                "time_s": t(lambda fn=fn, bwd=bwd: fn(bwd))})
        if te is not None:
            for pas, bwd in (("fwd", False), ("fwdbwd", True)):
                try:
                    s = t(lambda lay=lay, bwd=bwd: lay.permute(bwd, te=te))
                    records.append({"layer": lay.name, "piece": "permute", "pass": pas, "impl": "te", "time_s": s})
                except Exception as exc:   # an API mismatch: recorded, the torch form stands
                    device["te"] = f"{te_note}; failed: {type(exc).__name__}: {str(exc)[:160]}"
        for pas, sync in (("loop_sync", True), ("loop_nosync", False)):
            records.append({"layer": lay.name, "piece": "sync", "pass": pas, "impl": "torch",
                            "time_s": w(lambda lay=lay, sync=sync: lay.loop(sync)) / LOOP_LAYERS})
    json.dump({"device": device, "quick": args.quick, "loop_layers": LOOP_LAYERS, "records": records}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
