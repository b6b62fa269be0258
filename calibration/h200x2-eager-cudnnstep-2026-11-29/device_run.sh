#!/bin/bash
# Issue 44, session 39 (REGISTERED before this ran: registered.yaml beside this script, validation/eager_cudnn_steps.py):
# the adopted cuDNN attention form checked in whole eager steps at 16K-64K tokens, micro-batch 1, torch's default SDPA.
# First one layer's SDPA call of each row alone (runs/sdpa.json: the kernels the default backend runs, forward and
# forward + backward times; one process on GPU 0), then the registered rows round-robin, one process per row per round,
# 2 rounds (single-GPU rows on GPU 0: CUDA_VISIBLE_DEVICES=0). A budget guard stops launching runs after BUDGET_S s.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-cudnnstep-2026-11-29/device_run.sh   (nvidia-h200-x2; about 370 s)
W=/tmp/eager-cudnnstep
BUDGET_S=${BUDGET_S:-350}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
# name:heads:kv_heads:head_dim:seq of each row (registered.yaml's rows)
calls="single-0.5b:12:4:128:22528 single-1.1b:32:4:64:20480 single-0.3b:16:8:64:65536 ddp-2b:20:4:128:16896 ddp-0.8b:14:2:128:25344
ddp-1.1b:32:4:64:25344 fsdp-1b:32:8:64:25344 fsdp-0.8b:14:2:128:20480 fsdp-2b:20:4:128:24576"
CUDA_VISIBLE_DEVICES=0 guarded sdpa 60 python3 - $calls <<'PY'
import json, sys, torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile
dev = torch.device("cuda")
out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name(0),
       "enabled": {b: getattr(torch.backends.cuda, f"{b}_sdp_enabled")() for b in ("cudnn", "flash", "mem_efficient", "math")},
       "calls": []}
for spec in sys.argv[1:]:
    name, h, kv, d, s = spec.split(":")
    h, kv, d, s = int(h), int(kv), int(d), int(s)
    q = torch.randn(1, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, kv, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, kv, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    gqa = {"enable_gqa": True} if h != kv else {}
    fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
    def both():
        o = fwd()
        o.backward(torch.ones_like(o))
    def timed(fn, n=5):
        for _ in range(2):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(n):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); fn(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
        return sorted(ts)[n // 2]
    try:
        f_ms = timed(fwd)
        fb_ms = timed(both)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            both(); torch.cuda.synchronize()
        kern = sorted(((e.device_time_total, e.key) for e in prof.key_averages()), reverse=True)
        out["calls"].append({"name": name, "fwd_ms": f_ms, "fwd_bwd_ms": fb_ms, "bwd_ms": fb_ms - f_ms,
                             "kernels": [k for t, k in kern[:6]]})
    except Exception as exc:  # noqa: BLE001
        out["calls"].append({"name": name, "error": f"{type(exc).__name__}: {exc}"[:300]})
    del q, k, v
    torch.cuda.empty_cache()
print(json.dumps(out, indent=1))
PY
step="-m simcluster.runner.llm_step --warmup 3 --steps 5 --profile 0"
for r in 1 2; do
  CUDA_VISIBLE_DEVICES=0 guarded single-0.5b-r$r 60 python3 $step --preset 0.5b --shapes 22528:1 --mode single
  CUDA_VISIBLE_DEVICES=0 guarded single-1.1b-r$r 60 python3 $step --preset 1.1b --shapes 20480:1 --mode single
  CUDA_VISIBLE_DEVICES=0 guarded single-0.3b-r$r 90 python3 $step --preset 0.3b --shapes 65536:1 --mode single
  guarded ddp-2b-r$r 90 $two $step --preset 2b --shapes 16896:1 --mode ddp
  guarded ddp-0.8b-r$r 90 $two $step --preset 0.8b --shapes 25344:1 --mode ddp
  guarded ddp-1.1b-r$r 90 $two $step --preset 1.1b --shapes 25344:1 --mode ddp
  guarded fsdp-1b-r$r 90 $two $step --preset 1b --shapes 25344:1 --mode fsdp
  guarded fsdp-0.8b-r$r 90 $two $step --preset 0.8b --shapes 20480:1 --mode fsdp
  guarded fsdp-2b-r$r 90 $two $step --preset 2b --shapes 24576:1 --mode fsdp
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
