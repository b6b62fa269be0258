"""Bytes per logit an eager cross-entropy holds on the GPU (issue 44, session 58; development: the KempnerForge loss's
memory, llm/framework.KEMPNERFORGE_FSDP2_COMPILE.logit_bytes). Runs on the device machine (torch, one GPU).

For T tokens and V classes, h (T x H, bf16) times the head's weight (V x H, bf16) gives the logits; then per variant
  bf16     F.cross_entropy(logits, labels)           (KempnerForge's loss: kempnerforge/training/loss.py, no up-cast)
  float    F.cross_entropy(logits.float(), labels)   (torchtitan's and the runner's: the model's EAGER_LOSS, 12 B a logit)
each with the Python name `logits` kept through the backward (KempnerForge's scripts/train.py holds it) or deleted
before it ("_del"). Printed per logit element (T V), over the bytes allocated before the head's matmul:
  forward_end  torch.cuda.memory_allocated() after the loss (what the forward leaves for the backward)
  forward_peak torch.cuda.max_memory_allocated() during the head + loss forward
  backward_peak the same during loss.backward() (the head's matmul backward included: its T x H and V x H gradients,
                small beside T V at these shapes, reported as `matmul_grads_per_logit`)
One JSON document on stdout.
    python3 studies/loss_bytes_device.py [--tokens 16384] [--vocab 128256] [--hidden 4096]
"""

from __future__ import annotations

import argparse
import json

import torch
import torch.nn.functional as F


def measure(variant: str, tokens: int, vocab: int, hidden: int, keep: bool) -> dict:
    torch.cuda.empty_cache()
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    h = torch.randn(tokens, hidden, device=dev, dtype=torch.bfloat16, generator=g).requires_grad_()
    w = (torch.randn(vocab, hidden, device=dev, dtype=torch.bfloat16, generator=g) * 0.02).requires_grad_()
    labels = torch.randint(0, vocab, (tokens,), device=dev, generator=g)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    logits = h @ w.t()
    loss = F.cross_entropy(logits.float() if variant == "float" else logits, labels)
    torch.cuda.synchronize()
    fwd_end, fwd_peak = torch.cuda.memory_allocated() - base, torch.cuda.max_memory_allocated() - base
    if not keep:
        del logits
    torch.cuda.reset_peak_memory_stats()
    loss.backward()
    torch.cuda.synchronize()
    bwd_peak = torch.cuda.max_memory_allocated() - base
    n = tokens * vocab
    grads = (h.numel() + w.numel()) * 2   # the matmul backward's bf16 gradients of h and w, held after the backward
    out = {"variant": variant + ("" if keep else "_del"), "tokens": tokens, "vocab": vocab, "hidden": hidden,
           "forward_end_per_logit": fwd_end / n, "forward_peak_per_logit": fwd_peak / n,
           "backward_peak_per_logit": bwd_peak / n, "matmul_grads_per_logit": grads / n,
           "loss": float(loss.detach())}
    del h, w, labels, loss
    if keep:
        del logits
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--hidden", type=int, default=4096)
    a = ap.parse_args()
    rows = [measure(v, t, a.vocab, a.hidden, keep) for t in (a.tokens // 4, a.tokens)
            for v in ("bf16", "float") for keep in (True, False)]
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
