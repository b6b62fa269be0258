"""One rank's own work in AWS's Megatron-Bridge Qwen3-30B-A3B cells (calibration/published/
llm-awsome-megatron-bridge-qwen3-30b-p5-h100.yaml: TP 8 with sequence parallelism, ETP 1, EP 16 or 32, seq 4096,
micro-batch 4 or 1), one transformer layer per call on ONE GPU, without any collective (issue 44, session 54 moe54;
calibration/h200x1-moe54-2026-12-01). One JSON document on stdout: {"device": {...}, "quick": bool, "records": [{"cell",
"pass", "clock", "time_s", "samples", ...}, ...]}, read by validation/moe54.py.

    python studies/moe54_device.py                          # on the H200 (the registered run)
    python studies/moe54_device.py --device cpu --quick     # the dry run: tiny shapes, float32, any machine with torch

Written in plain torch from Megatron-Core's documented layer (no Megatron, no Transformer Engine, nothing copied); the
shapes are the ones simcluster prices for the rank (llm/compiled.layer_ops on the AWS rows, printed by validation/moe54.py):
  attention  RMSNorm on the rank's sequence shard (T = 512 mb tokens); the shard repeated 8 times (a concat copy standing in
             for SP's all-gather: 4096 mb tokens); the fused QKV GEMM (2048 -> 768: 4 query heads and 1 key/value head a
             rank, head dim 128); RMSNorm of q and k per head (qk-norm); rotary embedding (torch ops: cos / sin tables);
             causal attention (torch SDPA, GQA 4:1); the output GEMM (512 -> 2048); the 8 token blocks summed (a stand-in
             for SP's reduce-scatter, back to T tokens); the residual add.
  MoE        RMSNorm; the router GEMM (2048 -> 128) cast to fp32, softmax, top-8, the 8 scores normalised (Qwen3's
             norm_topk_prob), tokens per expert, the switch aux loss; the dispatcher's torch permute (token indices by
             masked_select of the routing map, index_select of the T x 8 rows); the rows taken as the rank's received
             rows (the all-to-all omitted: forced balance makes the rank receive as many rows as it sends), assigned to
             its L local experts (L = 128 / EP: 8 or 4) by global expert id modulo L, sorted by local expert; the counts
             copied to the host (.tolist(): the dispatcher's split sizes, a device-to-host sync each forward; with the
             torch permute's two masked_select, three syncs a forward: Megatron-Core + TE's fused permute has one); per local
             expert the fc1 GEMM (2048 -> 2 x 768, gate and up), SwiGLU, the fc2 GEMM (768 -> 2048) (a loop of torch GEMMs:
             Megatron-Core's SequentialMLP; TE's grouped GEMM also issues one cuBLAS GEMM per expert); the rows back in
             routed order, times their scores, index_add into T tokens (unpermute); the residual add.
Passes (per call, one layer): fwd (forward with autograd, the output kept); fwdbwd (forward + backward of a fixed
gradient); recompute (forward under no_grad as full recompute's first pass runs, then forward + backward: the work of
one layer per micro-batch under Megatron's full recompute, the AWS overlap-off cells).
Clocks: events (CUDA events around INNER calls after WARMUP calls, one sample a repeat: the rank's wall time, host issue
and the sync's drain included) and kernels (torch.profiler, CUDA activity, around INNER calls: the summed durations of
the device's kernels, memsets and copies per call, their count, and the GEMMs' share; one sample a profiled repeat).
Not run (the set's limits): every collective (SP all-gather / reduce-scatter, EP all-to-all, the count exchange) and
their host calls; Megatron-Core's and Transformer Engine's Python (the host issue here is plain torch's: a lower bound
for theirs); TE's fused permute, RMSNorm and rotary kernels; the fp32 main-grad accumulation; embedding, head and loss."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import moe_kernel_device  # noqa: E402  (its chrome-trace kernel clock, imported, not copied)

from simcluster.script_args import ArgumentParser  # noqa: E402  (a bad argument refused in one line)

INNER, WARMUP = moe_kernel_device.INNER, 3   # 5 calls a sample
HIDDEN, HEADS_RANK, KV_RANK, HEAD_DIM, EXPERTS, TOP_K, FFN, TP, SEQ = 2048, 4, 1, 128, 128, 8, 768, 8, 4096
# the registered cells: (name, ep, micro-batch); the AWS rows that use each (validation/moe54.ROWS)
CELLS = (("ep16-mb4", 16, 4), ("ep16-mb1", 16, 1), ("ep32-mb4", 32, 4), ("ep32-mb1", 32, 1))
PASSES = ("fwd", "fwdbwd", "recompute")


class RankLayer:
    """One rank's layer tensors (quick: hidden / 16, sequence / 32, head dim / 4, experts 16 and top-2)."""

    def __init__(self, torch, ep: int, mb: int, dev: str, dtype, quick: bool):
        self.torch, self.quick = torch, quick
        h, seq, hd, e, k, ffn = HIDDEN, SEQ, HEAD_DIM, EXPERTS, TOP_K, FFN
        if quick:
            h, seq, hd, e, k, ffn = h // 16, seq // 32, hd // 4, 16, 2, ffn // 16
        self.h, self.seq, self.hd, self.e, self.k, self.ffn, self.mb = h, seq, hd, e, k, ffn, mb
        self.local = max(1, e // ep) if not quick else 2
        self.T = mb * seq // TP                                  # the rank's sequence-parallel shard
        g = torch.Generator(device="cpu").manual_seed(54)

        def w(*shape, scale=None):
            t = torch.randn(*shape, generator=g) / (scale or shape[-1]) ** 0.5
            return t.to(dev, dtype).requires_grad_(True)

        qkv_out = (HEADS_RANK + 2 * KV_RANK) * hd
        self.w_qkv, self.w_o = w(qkv_out, h), w(h, HEADS_RANK * hd)
        self.ln1, self.ln2 = torch.ones(h, device=dev, dtype=dtype, requires_grad=True), torch.ones(h, device=dev, dtype=dtype, requires_grad=True)
        self.qn, self.kn = torch.ones(hd, device=dev, dtype=dtype, requires_grad=True), torch.ones(hd, device=dev, dtype=dtype, requires_grad=True)
        self.w_router = w(e, h)
        self.fc1 = [w(2 * ffn, h) for _ in range(self.local)]
        self.fc2 = [w(h, ffn) for _ in range(self.local)]
        pos = torch.arange(seq, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        ang = torch.outer(pos, inv)
        self.cos, self.sin = ang.cos().to(dev, dtype), ang.sin().to(dev, dtype)
        self.x = torch.randn(self.T, h, generator=g).to(dev, dtype).requires_grad_(True)
        self.grad = torch.randn(self.T, h, generator=g).to(dev, dtype)

    def choose_attention(self, cuda: bool) -> str:
        """The attention call: on the GPU the first form that runs under FlashAttention alone (GQA natively, then k / v
        expanded to the 4 query heads), else any backend; the form that ran is recorded (the model prices flash)."""
        torch, F = self.torch, self.torch.nn.functional

        def gqa(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

        def expanded(q, k, v):
            return F.scaled_dot_product_attention(q, k.expand(-1, HEADS_RANK, -1, -1), v.expand(-1, HEADS_RANK, -1, -1), is_causal=True)

        self.sdpa = expanded
        if not cuda:
            return "cpu: expanded k / v, any backend"
        from torch.nn.attention import SDPBackend, sdpa_kernel
        # the probe in the layer's own layout: q and k fresh (rotary's output), v a strided slice of the QKV output
        qkv = torch.randn(self.mb, self.seq, HEADS_RANK + 2 * KV_RANK, self.hd, device="cuda", dtype=torch.bfloat16,
                          requires_grad=True)
        for name, fn in (("flash, enable_gqa", gqa), ("flash, expanded k / v", expanded)):
            try:
                q, k, v = qkv.transpose(1, 2).split((HEADS_RANK, KV_RANK, KV_RANK), dim=1)
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                    fn(q * 1.0, k * 1.0, v).sum().backward()
            except Exception as exc:   # not supported in this form: the next one
                print(f"moe54_device: attention {name} refused: {type(exc).__name__}: {str(exc)[:100]}", file=sys.stderr)
                continue

            def flash(q, k, v, fn=fn):
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                    return fn(q, k, v)
            self.sdpa = flash
            return name
        return "expanded k / v, any backend (flash refused)"

    def _rms(self, x, wgt):
        return x * self.torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * wgt

    def _rope(self, t):   # t: (mb, heads, seq, hd)
        a, b = t[..., : self.hd // 2], t[..., self.hd // 2:]
        return self.torch.cat((a * self.cos - b * self.sin, b * self.cos + a * self.sin), dim=-1)

    def attention(self, x):
        torch, mb, seq, hd = self.torch, self.mb, self.seq, self.hd
        full = torch.cat([self._rms(x, self.ln1)] * TP)           # stand-in for SP's all-gather: (mb seq, h)
        qkv = full @ self.w_qkv.t()
        q, k, v = qkv.view(mb, seq, HEADS_RANK + 2 * KV_RANK, hd).transpose(1, 2).split((HEADS_RANK, KV_RANK, KV_RANK), dim=1)
        q, k = self._rope(self._rms(q, self.qn)), self._rope(self._rms(k, self.kn))
        o = self.sdpa(q, k, v)
        out = o.transpose(1, 2).reshape(mb * seq, HEADS_RANK * hd) @ self.w_o.t()
        return x + out.view(TP, self.T, self.h).sum(0)              # stand-in for SP's reduce-scatter

    def moe(self, x, sync_counts: list):
        torch, T, e, k = self.torch, self.T, self.e, self.k
        hn = self._rms(x, self.ln2)
        logits = (hn @ self.w_router.t()).float()
        scores = torch.softmax(logits, dim=-1)
        idx = scores.topk(k, dim=-1).indices
        probs = scores.gather(1, idx)
        probs = probs / probs.sum(-1, keepdim=True)
        rmap = torch.zeros(T, e, dtype=torch.bool, device=x.device).scatter_(1, idx, True)
        counts = rmap.sum(0)
        aux = e * ((counts.float() / (T * k)) * scores.mean(0)).sum()
        tok = torch.arange(T, device=x.device).unsqueeze(0).expand(e, -1).masked_select(rmap.t())     # expert-major
        pperm = probs.new_zeros(T, e).scatter(1, idx, probs).t().masked_select(rmap.t())
        rows = hn.index_select(0, tok)
        # received rows: global expert g -> local expert g mod L; expert-major order sorted by local expert
        local_of = torch.arange(e, device=x.device) % self.local
        order = torch.argsort(local_of.repeat_interleave(counts, output_size=T * k), stable=True)   # no sync: size known
        per_local = torch.zeros(self.local, dtype=counts.dtype, device=x.device).index_add_(0, local_of, counts)
        sizes = per_local.tolist()                                 # the dispatcher's device-to-host sync
        sync_counts.append(sum(sizes))
        outs = []
        for j, part in enumerate(rows.index_select(0, order).split(sizes)):
            gate, up = (part @ self.fc1[j].t()).chunk(2, dim=-1)
            outs.append((torch.nn.functional.silu(gate) * up) @ self.fc2[j].t())
        back = torch.empty_like(order).scatter_(0, order, torch.arange(order.numel(), device=x.device))
        y = torch.cat(outs).index_select(0, back) * pperm.unsqueeze(1).to(x.dtype)
        return x + torch.zeros_like(x).index_add(0, tok, y), aux

    def forward(self, sync_counts: list):
        y, aux = self.moe(self.attention(self.x), sync_counts)
        return y, aux

    def call(self, pas: str, sync_counts: list) -> None:
        torch = self.torch
        if pas == "recompute":
            with torch.no_grad():
                self.forward(sync_counts)
        if pas == "fwd":
            self.forward(sync_counts)
            return
        y, aux = self.forward(sync_counts)
        torch.autograd.backward((y, aux * 1e-2), (self.grad, None))


def events_timer(torch, cuda: bool, warmup: int, repeats: int):
    def run(fn) -> list[float]:
        for _ in range(warmup):
            fn()
        out = []
        for _ in range(repeats):
            if cuda:
                torch.cuda.synchronize()
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
            t0 = time.perf_counter()
            for _ in range(INNER):
                fn()
            if cuda:
                b.record()
                torch.cuda.synchronize()
            out.append((a.elapsed_time(b) / 1e3 if cuda else time.perf_counter() - t0) / INNER)
        return out
    return run


def main(argv=None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--quick", action="store_true", help="tiny shapes: a dry run")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--prof-repeats", type=int, default=3, help="profiled runs a record (the kernels clock)")
    ap.add_argument("--warmup", type=int, default=WARMUP)
    ap.add_argument("--cells", default="", help="comma-separated cell names (default: all)")
    args = ap.parse_args(argv)
    import torch
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("moe54_device: --device cuda but torch sees no CUDA device (use --device cpu --quick for a dry run)", file=sys.stderr)
        return 2
    dtype = torch.bfloat16 if cuda else torch.float32
    dev_name = torch.cuda.get_device_name(0) if cuda else "cpu"
    device = {"name": dev_name, "torch": torch.__version__, "cuda": torch.version.cuda, "dtype": str(dtype)}
    keep = set(args.cells.split(",")) if args.cells else None
    timer = events_timer(torch, cuda, args.warmup, args.repeats)
    records = []
    for name, ep, mb in CELLS:
        if keep and name not in keep:
            continue
        try:
            cell_records(torch, args, name, ep, mb, dtype, cuda, timer, records)
        except Exception as exc:   # one cell failing leaves the others' records (the read-out refuses the gap in one line)
            print(f"moe54_device: {name} failed: {type(exc).__name__}: {str(exc)[:300]}", file=sys.stderr)
            records.append({"cell": name, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            if cuda:
                torch.cuda.empty_cache()
    json.dump({"device": device, "quick": args.quick, "records": records}, sys.stdout, indent=1)
    print()
    return 0


def cell_records(torch, args, name: str, ep: int, mb: int, dtype, cuda: bool, timer, records: list) -> None:
    """Every pass of one cell in both clocks, appended to `records` as measured."""
    lay = RankLayer(torch, ep, mb, args.device, dtype, args.quick)
    attention_form = lay.choose_attention(cuda)
    for pas in PASSES:
        rows = []
        def fn(pas=pas, lay=lay, rows=rows):
            lay.call(pas, rows)
        s = timer(fn)
        rec = {"cell": name, "ep": ep, "micro_batch": mb, "local_experts": lay.local, "tokens": lay.T,
               "pass": pas, "clock": "events", "time_s": statistics.median(s), "samples": s,
               "received_rows": rows[-1] if rows else None, "attention": attention_form}
        records.append(rec)
        # on the CPU no device activity (time_s 0): the path is checked
        ks = moe_kernel_device.profile_kernels(torch, fn, args.device, min(1, args.warmup), args.prof_repeats)
        records.append({"cell": name, "ep": ep, "micro_batch": mb, "pass": pas, "clock": "kernels",
                        "time_s": statistics.median(k["busy_s"] for k in ks), "samples": [k["busy_s"] for k in ks],
                        "n_kernels": statistics.median(k["n"] for k in ks), "span_s": statistics.median(k["span_s"] for k in ks),
                        "gemm_s": statistics.median(k["gemm_s"] for k in ks)})
        print(f"moe54_device: {name} {pas} events {1e3 * rec['time_s']:.3f} ms", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
