"""gpu-micro's `attention-backends` section (runner/gpu_micro.py runs it; not in the default sections): causal
scaled_dot_product_attention, bf16, forward and forward + backward, from 1K to 128K tokens a sequence, once per SDPA
backend torch has on the device: `flash` (torch's FlashAttention-2 kernels, the sm80 code path on Hopper too),
`cudnn` (cuDNN's fused attention), `efficient` (memory-efficient, up to 16K) and `default` (whatever torch picks; the
backend gpu-micro's own `attention` section and the GPU cards measure). Batch = max(1, 16384 / seq) sequences, so
short sequences fill the GPU as a training micro-batch does. Per call: the median time and, for the forward +
backward, the peak memory allocated above the inputs (torch.cuda.max_memory_allocated). A backend that cannot run
a shape is a record with its error, the others still run. Records in `attention_backends`.

The question (issue 44): frameworks that run FlashAttention 2 (flash-attn 2.x, torch's flash backend) on Hopper get
the Ampere kernels' rate, not the cuDNN / FlashAttention-3 rate the card was measured at; the ratio per sequence
length and pass is what a framework's attention kernel costs (llm/attention_kernels.py reads it from the bundle).
"""

from __future__ import annotations

BACKENDS = ("default", "flash", "cudnn", "efficient")
SHAPES = ((32, 128), (16, 64))          # (heads, head_dim): MHA at head size 128 (MPT 760m-70b) and 64 (MPT 350m)
SEQS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
QUICK = {"seqs": (64, 128), "shapes": ((2, 16),), "tokens": 256}
TOKENS = 16384
EFFICIENT_MAX_SEQ = 16384               # the memory-efficient kernel is slow; long sequences only cost time
HEAD64_MAX_SEQ = 32768


def _context(torch, backend: str):
    from contextlib import nullcontext

    if backend == "default":
        return nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel({"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                        "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend])


def run_attention_backends(torch, dev, timer, quick: bool) -> list[dict]:
    import torch.nn.functional as F

    out = []
    tokens = QUICK["tokens"] if quick else TOKENS
    for heads, d in QUICK["shapes"] if quick else SHAPES:
        for seq in QUICK["seqs"] if quick else SEQS:
            if d == 64 and seq > HEAD64_MAX_SEQ and not quick:
                continue
            b = max(1, tokens // seq)
            shape = {"batch": b, "heads": heads, "kv_heads": heads, "seq_q": seq, "seq_kv": seq, "head_dim": d,
                     "causal": True, "dtype": "bf16"}
            q, k, v = (torch.randn(b, heads, seq, d, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
            grad = torch.randn(b, heads, seq, d, device=dev, dtype=torch.bfloat16)
            for backend in BACKENDS:
                if backend == "efficient" and seq > EFFICIENT_MAX_SEQ and not quick:
                    continue

                def fwd(q=q, k=k, v=v, backend=backend):
                    with torch.no_grad(), _context(torch, backend):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

                def fwd_bwd(q=q, k=k, v=v, grad=grad, backend=backend):
                    with _context(torch, backend):
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    return torch.autograd.grad(o, (q, k, v), grad)

                for mode, fn in (("fwd", fwd), ("fwd_bwd", fwd_bwd)):
                    record = {**shape, "backend": backend, "mode": mode}
                    try:
                        if dev.type == "cuda":
                            torch.cuda.synchronize()
                            base = torch.cuda.memory_allocated()
                            torch.cuda.reset_peak_memory_stats()
                        record.update(timer(fn))
                        if dev.type == "cuda":
                            record["peak_bytes_above_inputs"] = torch.cuda.max_memory_allocated() - base
                    except Exception as exc:  # noqa: BLE001 - a backend that cannot run a shape is recorded
                        record["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                    out.append(record)
            del q, k, v, grad
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    return out
