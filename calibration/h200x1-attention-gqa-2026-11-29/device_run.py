"""Issue 44, session 37 (eagerclass): is FlashAttention 2 (torch's flash SDPA backend) faster with grouped K/V heads
than the MHA microbenchmark the model's 'fa2' ratio comes from? (the cp 1b 32K profiled step ran its flash calls 12-14%
under the model: docs/models/llm-findings.md, session 37 eagerclass). Causal SDPA, bf16, forward and forward +
backward, the runner's shapes (1b: 32 query / 8 KV heads, d 64; 3b: 24 / 8, d 128) and their MHA controls (KV heads =
query heads), at 8K, 16K and 32K tokens, batch 1, flash and default backends, in one process.

    python calibration/h200x1-attention-gqa-2026-11-29/device_run.py --predict        (here: the model's times)
    python calibration/h200x1-attention-gqa-2026-11-29/device_run.py > $OUT/gqa.json  (on one H200)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SHAPES = ((32, 8, 64), (32, 32, 64), (24, 8, 128), (24, 24, 128))   # (query heads, KV heads, head size)
SEQS = (8192, 16384, 32768)
BACKENDS = ("flash", "default")


def predict() -> list[dict]:
    """The model's 'fa2' time of each shape's forward and backward (llm/attention_kernels on the H200 card)."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm import attention_kernels, ops

    gpu = attention_kernels.for_kernel(load_gpu(ROOT / "models/gpu/h200-sxm-interleaved.yaml")[0], "fa2")
    out = []
    for heads, kv, d in SHAPES:
        for seq in SEQS:
            f = ops.op_time_s(gpu, ops.attention("a", 1, heads, kv, seq, seq, d, True, False), "bf16")
            b = ops.op_time_s(gpu, ops.attention("a", 1, heads, kv, seq, seq, d, True, True), "bf16")
            out.append({"heads": heads, "kv_heads": kv, "head_dim": d, "seq": seq, "fwd_s": f, "bwd_s": b})
    return out


def _median(torch, fn) -> float:
    """Median seconds of fn over 10 calls after 3 warm-up calls (studies/cp_attention/device.py's CUDA-event timer)."""
    from studies.cp_attention.device import _timed

    return statistics.median(_timed(torch, fn, 3, 10, torch.cuda.synchronize))


def _one(torch, heads: int, kv: int, d: int, seq: int, backend: str) -> dict:
    """One shape on one backend: forward and (forward + backward) - forward, seconds; or the error."""
    import contextlib

    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(1, heads, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(1, kv, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    grad = torch.randn_like(q)
    gqa = {"enable_gqa": True} if kv != heads else {}

    def ctx():
        return sdpa_kernel(SDPBackend.FLASH_ATTENTION) if backend == "flash" else contextlib.nullcontext()

    def fwd():
        with torch.no_grad(), ctx():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)

    def fwd_bwd():
        with ctx():
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
        return torch.autograd.grad(o, (q, k, v), grad)

    rec = {"heads": heads, "kv_heads": kv, "head_dim": d, "seq": seq, "backend": backend}
    try:
        rec["fwd_s"] = _median(torch, fwd)
        rec["bwd_s"] = _median(torch, fwd_bwd) - rec["fwd_s"]
    except Exception as exc:  # noqa: BLE001 - a backend that cannot run a shape is recorded
        rec["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return rec


def measure() -> list[dict]:
    import torch

    out = []
    for heads, kv, d in SHAPES:
        for seq in SEQS:
            for backend in BACKENDS:
                out.append(_one(torch, heads, kv, d, seq, backend))
                torch.cuda.empty_cache()
    return out


if __name__ == "__main__":
    if "--predict" in sys.argv:
        for r in predict():
            print(f"{r['heads']:3d}/{r['kv_heads']:<3d} d {r['head_dim']:3d} seq {r['seq']:6d}  fa2 fwd {r['fwd_s'] * 1e3:8.3f} ms"
                  f"  bwd {r['bwd_s'] * 1e3:8.3f} ms")
    else:
        import torch
        print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "records": measure()}, indent=1))
