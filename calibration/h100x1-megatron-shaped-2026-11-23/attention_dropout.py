"""Causal attention with and without dropout (p = 0.1) on one GPU: forward and forward + backward times per shape and
SDPA backend (issue 22, session 19). JSON to $OUT/attention_dropout.json. Also: bf16 GEMM with an fp32 output and with
fp32 accumulation (torch.mm / addmm out_dtype, where this torch has it): the weight-gradient GEMM writing Megatron's
fp32 main_grad."""
import json, os, statistics, time
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

dev = "cuda"


def timed(fn, reps=20, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / 1e3)
    return statistics.median(out)


def attention_rows():
    rows = []
    shapes = [(b, a, s, d) for (a, d) in ((16, 128), (24, 128), (32, 128), (48, 128), (32, 64))
              for (s, b) in ((2048, 4), (4096, 1), (4096, 2), (8192, 1))]
    for backend, name in ((SDPBackend.CUDNN_ATTENTION, "cudnn"), (SDPBackend.FLASH_ATTENTION, "flash")):
        for (b, a, s, d) in shapes:
            q, k, v = (torch.randn(b, s, a, d, device=dev, dtype=torch.bfloat16).transpose(1, 2).requires_grad_() for _ in range(3))
            g = torch.randn(b, a, s, d, device=dev, dtype=torch.bfloat16)
            row = dict(backend=name, batch=b, heads=a, seq=s, head_dim=d)
            try:
                with sdpa_kernel([backend]):
                    for p in (0.0, 0.1):
                        fwd = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p))
                        def fb():
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
                            o.backward(g)
                            q.grad = k.grad = v.grad = None
                        row[f"fwd_s_p{p}"] = fwd
                        row[f"fwdbwd_s_p{p}"] = timed(fb)
            except Exception as e:  # a backend that refuses a shape is recorded, not fatal
                row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            rows.append(row)
            print(json.dumps(row), flush=True)
            del q, k, v, g
    return rows


def gemm_rows():
    rows = []
    for (m, n, k) in ((2048, 6144, 4096), (2048, 8192, 4096), (8192, 2048, 4096), (4096, 11008, 4096), (2048, 131072, 4096)):
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        c = torch.zeros(m, n, device=dev, dtype=torch.float32)
        row = dict(m=m, n=n, k=k, bf16_out_s=timed(lambda: torch.mm(a, b)))
        for label, fn in (("fp32_out_s", lambda: torch.mm(a, b, out_dtype=torch.float32)),
                          ("fp32_accumulate_s", lambda: torch.addmm(c, a, b, out_dtype=torch.float32)),
                          ("bf16_then_fp32_add_s", lambda: c.add_(torch.mm(a, b)))):
            try:
                row[label] = timed(fn)
            except Exception as e:
                row[label] = f"{type(e).__name__}: {str(e)[:160]}"
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main():
    info = dict(torch=torch.__version__, cuda=torch.version.cuda, gpu=torch.cuda.get_device_name(0),
                cudnn=torch.backends.cudnn.version(), date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    torch.manual_seed(0)
    res = dict(info=info, attention=attention_rows(), gemm=gemm_rows())
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "attention_dropout.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
