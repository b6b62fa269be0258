"""Megatron-Core's own MoE decoder layer at the per-rank shapes of AWS's Qwen3-30B-A3B cells, one layer a call on ONE GPU,
beside moe54's plain-torch layer in the same process (issue 44, session 54 moe54c; calibration/h200x1-moe54c-2026-12-01).
One JSON document on stdout: {"device": {...}, "quick": bool, "mcore": version or why not, "records": [{"impl": "mcore" |
"torch", "cell", "pass", "clock", "time_s", "samples", ...}, ...]}, read by validation/moe54c.py.

    PYTHONPATH=/tmp/mc:. python studies/moe54c_device.py                  # on the H200 (megatron-core unpacked in /tmp/mc)
    PYTHONPATH=/tmp/mc:. python studies/moe54c_device.py --device cpu --quick   # the dry run: tiny shapes, float32

impl "mcore": megatron-core 0.14.0's TransformerLayer built from its local layer spec (get_gpt_layer_local_spec: no
Transformer Engine, no Apex; torch RMSNorm, qk-norm, unfused DotProductAttention with its torch softmax, the alltoall
token dispatcher with moe_permute_fusion off, SequentialMLP experts, the TopKRouter with the aux loss), world size 1, TP /
EP / PP 1 (mcore_router_device.megatron's setup, imported). Its submodules are called in moe54's order with moe54's two
stand-ins for the sequence-parallel collectives (not Megatron's own TransformerLayer.forward, whose bias-dropout-add is a
residual add here): x = the rank's sequence shard [S/8, mb, 2048]; input_layernorm; the shard repeated 8 times (SP's
all-gather: [S, mb, 2048]); self_attention (4 query heads, 1 key/value group, head dim 128: a TP-8 rank's heads; rotary
embedding from Megatron's RotaryEmbedding, computed once outside the call; causal mask type); the 8 token blocks summed
(SP's reduce-scatter); the residual; pre_mlp_layernorm; mlp (MoELayer); the residual.
What EP 1 on one GPU can be of the AWS cells (128 experts, top-8, EP 16 / 32, balanced):
  EP 16: the layer has the rank's L = 8 local experts and routes top-8 of 8, so every shard token goes to every expert: the
    rank's 8 T rows, T an expert, exactly its balanced received rows and expert GEMM shapes (T = 512 mb tokens).
  EP 32: L = 4 local experts, top-4 of 4, on the shard repeated twice (2 T tokens; the two MoE outputs summed): 8 T rows,
    2 T an expert, again the balanced received rows and GEMM shapes.
  Not emulated: the router's 128-expert scores and routing map (here T x 8 / 2T x 4: the router GEMM 2048 -> 8 / 4, a
    smaller top-k), the EP all-to-alls and the count exchange (no collective: EP 1 skips them and their host calls, and
    sort_chunks_by_idxs of the ep x local chunks, which runs only at EP > 1), SP's collectives (the stand-ins above), TE.
impl "torch": moe54's plain-torch layer (studies/moe54_device.py's RankLayer and clocks, imported), the lease's bridge.
Passes as moe54's: fwd; fwdbwd (forward + backward of a fixed gradient); recompute (a no_grad forward, then forward +
backward: one layer a micro-batch under full recompute). Clocks as moe54's: events (CUDA events around 5 eager calls,
one sample a repeat) and kernels (torch.profiler's device busy time a call, kernel count, GEMM time)."""

from __future__ import annotations

import json
import signal
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import moe54_device  # noqa: E402  (moe54's plain-torch layer, cells and events clock, imported)
from mcore_router_device import megatron  # noqa: E402  (world-size-1 process group and parallel_state's groups)
from moe_kernel_device import profile_kernels, stop  # noqa: E402

from simcluster.script_args import ArgumentParser  # noqa: E402

HIDDEN, HEADS, KV, HEAD_DIM, FFN, TP, SEQ = (moe54_device.HIDDEN, moe54_device.HEADS_RANK, moe54_device.KV_RANK,
                                             moe54_device.HEAD_DIM, moe54_device.FFN, moe54_device.TP, moe54_device.SEQ)
CELLS, PASSES = moe54_device.CELLS, moe54_device.PASSES
AUX_COEFF = 1e-3   # Qwen3-30B-A3B recipes' aux-loss coefficient (Megatron-Bridge's qwen3 MoE recipe)


def cpu_shim(torch) -> None:
    """The CPU dry run only: the torch.cuda calls megatron-core 0.14's layer makes unconditionally (the dispatcher's
    device-to-host stream and event, the router's weight moved to the current CUDA device, the causal mask made on
    "cuda", attention dropout's CUDA RNG fork) answered on the CPU, so that
    the layer's own Python runs; never on the GPU run."""
    import contextlib

    from megatron.core import tensor_parallel  # attention dropout's CUDA RNG fork (dropout 0 here)
    from megatron.core.fusions import fused_softmax  # its causal mask is made on "cuda"

    class Stream:   # one stream: the current one and the dispatcher's are the same, so nothing records across them
        def __new__(cls, *a, **k):
            if not hasattr(cls, "one"):
                cls.one = object.__new__(cls)
            return cls.one

        def wait_stream(self, other):
            pass

        def record_event(self):
            return type("Event", (), {"synchronize": lambda self: None})()

    torch.cuda.Stream, torch.cuda.current_stream = Stream, lambda *a: Stream()
    torch.cuda.stream = lambda s: contextlib.nullcontext()
    torch.cuda.current_device = lambda: "cpu"
    fused_softmax.get_default_causal_mask = lambda sq: torch.triu(torch.ones(sq, sq), diagonal=1).bool()
    tensor_parallel.get_cuda_rng_tracker().fork = lambda *a, **k: contextlib.nullcontext()


class McoreLayer:
    """Megatron-Core's local-spec layer at one cell's per-rank shapes (quick: hidden / 16, sequence / 32, head dim / 4,
    ffn / 16, 2 local experts top-2)."""

    def __init__(self, torch, ep: int, mb: int, dev: str, dtype, quick: bool):
        import torch.nn.functional as F
        from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
        from megatron.core.transformer.spec_utils import build_module
        from megatron.core.transformer.transformer_config import TransformerConfig

        self.torch = torch
        if dev != "cuda":
            cpu_shim(torch)
        h, seq, hd, ffn = HIDDEN, SEQ, HEAD_DIM, FFN
        if quick:
            h, seq, hd, ffn = h // 16, seq // 32, hd // 4, ffn // 16
        self.local = 2 if quick else 128 // ep
        self.dup = 2 if ep == 32 else 1                            # EP 32: the shard twice (8 T rows, 2 T an expert)
        self.mb, self.T, self.h, self.ep = mb, seq // TP, h, ep
        cfg = TransformerConfig(
            num_layers=1, hidden_size=h, num_attention_heads=HEADS, num_query_groups=KV, kv_channels=hd,
            ffn_hidden_size=ffn, num_moe_experts=self.local, moe_router_topk=self.local, moe_ffn_hidden_size=ffn,
            moe_token_dispatcher_type="alltoall", moe_grouped_gemm=False, moe_router_load_balancing_type="aux_loss",
            moe_aux_loss_coeff=AUX_COEFF, moe_permute_fusion=False, moe_router_pre_softmax=False, add_bias_linear=False,
            gated_linear_unit=True, activation_func=F.silu, normalization="RMSNorm", qk_layernorm=True,
            bf16=dtype == torch.bfloat16, params_dtype=dtype, hidden_dropout=0.0, attention_dropout=0.0,
            bias_dropout_fusion=False, apply_rope_fusion=False, gradient_accumulation_fusion=False,
            masked_softmax_fusion=False, persist_layer_norm=False, use_cpu_initialization=dev != "cuda")
        spec = get_gpt_layer_local_spec(num_experts=self.local, moe_grouped_gemm=False, qk_layernorm=True, normalization="RMSNorm")
        self.layer = build_module(spec, config=cfg, layer_number=1).to(device=dev, dtype=dtype)
        self.layer.train()
        self.rope = RotaryEmbedding(kv_channels=hd, rotary_percent=1.0).to(dev)(seq)
        g = torch.Generator(device="cpu").manual_seed(54)
        self.x = torch.randn(self.T, mb, h, generator=g).to(dev, dtype).requires_grad_(True)
        self.grad = torch.randn(self.T, mb, h, generator=g).to(dev, dtype)

    def forward(self):
        torch, lay = self.torch, self.layer
        ln = lay.input_layernorm(self.x)
        out, _ = lay.self_attention(torch.cat([ln] * TP), attention_mask=None, rotary_pos_emb=self.rope)
        h1 = self.x + out.view(TP, self.T, self.mb, self.h).sum(0)          # SP's reduce-scatter stand-in
        ln2 = lay.pre_mlp_layernorm(h1)
        y, _ = lay.mlp(torch.cat([ln2] * self.dup) if self.dup > 1 else ln2)
        if self.dup > 1:
            y = y.view(self.dup, self.T, self.mb, self.h).sum(0)
        return h1 + y

    def call(self, pas: str) -> None:
        torch = self.torch
        if pas == "recompute":
            with torch.no_grad():
                self.forward()
        y = self.forward()
        if pas != "fwd":   # gradients accumulate call after call, as in moe54's layer (no zeroing inside the timed call)
            torch.autograd.backward(y, self.grad)


def records_of(torch, args, impl: str, name: str, ep: int, mb: int, call, timer, extra: dict) -> list[dict]:
    out = []
    for pas in PASSES:
        def fn(pas=pas):
            call(pas)
        s = timer(fn)
        base = {"impl": impl, "cell": name, "ep": ep, "micro_batch": mb, "pass": pas}
        out.append({**base, "clock": "events", "time_s": statistics.median(s), "samples": s, **extra})
        ks = profile_kernels(torch, fn, args.device, min(1, args.warmup), args.prof_repeats)
        out.append({**base, "clock": "kernels", "time_s": statistics.median(k["busy_s"] for k in ks),
                    "samples": [k["busy_s"] for k in ks], "n_kernels": statistics.median(k["n"] for k in ks),
                    "span_s": statistics.median(k["span_s"] for k in ks), "gemm_s": statistics.median(k["gemm_s"] for k in ks)})
        print(f"moe54c_device: {impl} {name} {pas} events {1e3 * out[-2]['time_s']:.3f} ms, kernels "
              f"{1e3 * out[-1]['time_s']:.3f} ms ({out[-1]['n_kernels']:.0f})", file=sys.stderr)
    return out


def torch_cell(torch, args, name, ep, mb, dtype, cuda, timer) -> list[dict]:
    lay = moe54_device.RankLayer(torch, ep, mb, args.device, dtype, args.quick)
    form = lay.choose_attention(cuda)
    rows: list = []
    return records_of(torch, args, "torch", name, ep, mb, lambda pas: lay.call(pas, rows), timer,
                      {"attention": form, "local_experts": lay.local, "tokens": lay.T})


def mcore_cell(torch, args, name, ep, mb, dtype, timer) -> list[dict]:
    lay = McoreLayer(torch, ep, mb, args.device, dtype, args.quick)
    return records_of(torch, args, "mcore", name, ep, mb, lay.call, timer,
                      {"local_experts": lay.local, "tokens": lay.T, "moe_tokens": lay.T * lay.dup,
                       "rows": lay.T * lay.dup * lay.local * mb})


def main(argv=None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--quick", action="store_true", help="tiny shapes: a dry run")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--prof-repeats", type=int, default=3, help="profiled runs a record (the kernels clock)")
    ap.add_argument("--warmup", type=int, default=moe54_device.WARMUP)
    ap.add_argument("--cells", default="", help="comma-separated cell names (default: all)")
    ap.add_argument("--impls", default="mcore,torch", help="comma-separated: mcore, torch")
    args = ap.parse_args(argv)
    import torch

    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("moe54c_device: --device cuda but torch sees no CUDA device (use --device cpu --quick for a dry run)", file=sys.stderr)
        return 2
    if cuda:
        torch.cuda.set_device(0)
    dtype = torch.bfloat16 if cuda else torch.float32
    device = {"name": torch.cuda.get_device_name(0) if cuda else "cpu", "torch": torch.__version__, "cuda": torch.version.cuda,
              "dtype": str(dtype)}
    mods, note = megatron(torch, args.device)
    if mods is not None and cuda:
        from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
        model_parallel_cuda_manual_seed(1234)
    torch.manual_seed(1234)
    keep = set(args.cells.split(",")) if args.cells else None
    impls = args.impls.split(",")
    timer = moe54_device.events_timer(torch, cuda, args.warmup, args.repeats)
    records: list[dict] = []
    signal.signal(signal.SIGTERM, stop)   # timeout's signal: the records measured so far are still written
    try:
        for name, ep, mb in CELLS:
            if keep and name not in keep:
                continue
            for impl in impls:
                if impl == "mcore" and mods is None:
                    continue
                try:
                    if impl == "mcore":
                        records += mcore_cell(torch, args, name, ep, mb, dtype, timer)
                    else:
                        records += torch_cell(torch, args, name, ep, mb, dtype, cuda, timer)
                except TimeoutError:
                    raise
                except Exception as exc:   # one failing leaves the others (the read-out refuses the gap in one line)
                    print(f"moe54c_device: {impl} {name} failed: {type(exc).__name__}: {str(exc)[:300]}", file=sys.stderr)
                    records.append({"impl": impl, "cell": name, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
                if cuda:
                    torch.cuda.empty_cache()
    except TimeoutError as exc:
        device["stopped"] = f"{exc} after {len(records)} records"
    json.dump({"device": device, "quick": args.quick, "mcore": note, "records": records}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
