"""Megatron-shaped GPT micro-batch on one GPU, timed by kernel class (issue 22, session 19, small-models diagnosis).

A torch re-creation of what Megatron-Core r0.8 runs for one micro-batch of the Megatron-Core README's 1.7B GPT
(hidden 2048, ffn 8192, 16 heads, 24 layers, seq 4096, vocabulary 131,072, untied embeddings, micro-batch 1,
bf16 weights, tp = pp = 1): LayerNorm with bias, fused-QKV / out / fc1 / fc2 linears with bias, causal flash SDPA
on the (b, s, a, d) layout (no copies), GeLU, residual adds, learned positional embedding, LM head, Megatron's unfused
vocab-parallel cross-entropy (float cast, max, subtract, exp, sum, divide; backward multiply and cast back) as one
autograd Function. Variants: gradients accumulated into fp32 main_grad by a post-accumulate hook (Megatron-Core DDP's
path without gradient-accumulation fusion), attention and hidden dropout 0.1 (Megatron-LM's argument defaults).
Prints JSON: per variant the median micro-batch time over 10 CUDA-event-timed iterations and the profiled kernel time
per class (gemm / attention / memory-bound) with counts, plus the top kernels by time.
"""
import json, os, statistics, sys, time
import torch
import torch.nn.functional as F

dev = "cuda"
torch.manual_seed(0)


class VocabCE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target):
        x = logits.float()
        mx = x.max(dim=-1, keepdim=True)[0]
        x.sub_(mx)
        pred = x.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        x.exp_()
        s = x.sum(dim=-1)
        loss = torch.log(s) - pred
        x.div_(s.unsqueeze(-1))
        ctx.save_for_backward(x, target)
        return loss

    @staticmethod
    def backward(ctx, g):
        sm, target = ctx.saved_tensors
        grad = sm
        grad.scatter_add_(-1, target.unsqueeze(-1), -torch.ones_like(target, dtype=grad.dtype).unsqueeze(-1))
        grad.mul_(g.unsqueeze(-1))
        return grad.to(torch.bfloat16), None


def make_params(L, h, f, V, s):
    p = lambda *shape: (torch.randn(*shape, device=dev, dtype=torch.bfloat16) * 0.02).requires_grad_()
    one = lambda n: torch.ones(n, device=dev, dtype=torch.bfloat16).requires_grad_()
    zero = lambda n: torch.zeros(n, device=dev, dtype=torch.bfloat16).requires_grad_()
    layers = [dict(ln1w=one(h), ln1b=zero(h), wqkv=p(3 * h, h), bqkv=zero(3 * h), wo=p(h, h), bo=zero(h),
                   ln2w=one(h), ln2b=zero(h), w1=p(f, h), b1=zero(f), w2=p(h, f), b2=zero(h)) for _ in range(L)]
    top = dict(emb=p(V, h), pos=p(s, h), lnfw=one(h), lnfb=zero(h), head=p(V, h))
    return layers, top


def forward(layers, top, tokens, target, h, a, drop):
    b, s = tokens.shape
    d = h // a
    x = F.embedding(tokens, top["emb"]) + top["pos"][:s]
    for P in layers:
        y = F.layer_norm(x, (h,), P["ln1w"], P["ln1b"])
        qkv = F.linear(y, P["wqkv"], P["bqkv"]).view(b, s, 3, a, d)
        q, k, v = qkv[:, :, 0].transpose(1, 2), qkv[:, :, 1].transpose(1, 2), qkv[:, :, 2].transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=drop)
        o = o.transpose(1, 2).reshape(b, s, h)
        o = F.linear(o, P["wo"], P["bo"])
        x = x + (F.dropout(o, drop) if drop else o)
        y = F.layer_norm(x, (h,), P["ln2w"], P["ln2b"])
        y = F.gelu(F.linear(y, P["w1"], P["b1"]), approximate="tanh")
        y = F.linear(y, P["w2"], P["b2"])
        x = x + (F.dropout(y, drop) if drop else y)
    x = F.layer_norm(x, (h,), top["lnfw"], top["lnfb"])
    logits = F.linear(x, top["head"])
    return VocabCE.apply(logits, target).mean()


def classify(name):
    n = name.lower()
    if "flash" in n or "fmha" in n or "attention" in n or "cudnn" in n and "attn" in n:
        return "attention"
    if "gemm" in n or "sm90" in n or "cutlass" in n or "nvjet" in n or "xmma" in n or "cublas" in n:
        return "gemm"
    return "memory"


def run_variant(label, L, h, f, a, V, s, b, drop, main_grad):
    layers, top = make_params(L, h, f, V, s)
    params = [t for P in layers for t in P.values()] + list(top.values())
    hooks = []
    if main_grad:
        mg = {id(t): torch.zeros(t.shape, device=dev, dtype=torch.float32) for t in params}
        def hook(t):
            mg[id(t)].add_(t.grad)
            t.grad = None
        hooks = [t.register_post_accumulate_grad_hook(hook) for t in params]
    tokens = torch.randint(0, V, (b, s), device=dev)
    target = torch.randint(0, V, (b, s), device=dev)
    def step():
        loss = forward(layers, top, tokens, target, h, a, drop)
        loss.backward()
        if not main_grad:
            for t in params:
                t.grad = None
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); step(); e1.record(); torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            step()
        torch.cuda.synchronize()
    per = {}
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            dt = ev.time_range.elapsed_us()
            k = per.setdefault(ev.name, [0.0, 0])
            k[0] += dt / 2 / 1e6
            k[1] += 0.5
    classes = {}
    for name, (t, n) in per.items():
        c = classes.setdefault(classify(name), [0.0, 0])
        c[0] += t; c[1] += n
    top_k = sorted(per.items(), key=lambda kv: -kv[1][0])[:40]
    for hk in hooks:
        hk.remove()
    out = dict(label=label, L=L, h=h, f=f, a=a, V=V, s=s, b=b, dropout=drop, main_grad=main_grad,
               step_median_s=statistics.median(times), steps_s=times,
               classes={k: dict(time_s=v[0], kernels=v[1]) for k, v in classes.items()},
               top=[dict(name=n[:160], time_s=t, count=c) for n, (t, c) in top_k])
    del layers, top, params
    torch.cuda.empty_cache()
    return out


def main():
    outdir = os.environ.get("OUT", "/tmp")
    info = dict(torch=torch.__version__, cuda=torch.version.cuda, gpu=torch.cuda.get_device_name(0),
                cudnn=torch.backends.cudnn.version(), date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    try:
        import transformer_engine  # noqa
        info["transformer_engine"] = transformer_engine.__version__
    except Exception as e:  # not needed; recorded
        info["transformer_engine"] = f"absent ({type(e).__name__})"
    res = dict(info=info, variants=[])
    cfg = dict(L=24, h=2048, f=8192, a=16, V=131072, s=4096, b=1)
    for label, drop, mg in (("gpt1.7b", 0.0, False), ("gpt1.7b+main_grad", 0.0, True), ("gpt1.7b+dropout", 0.1, False)):
        r = run_variant(label, drop=drop, main_grad=mg, **cfg)
        res["variants"].append(r)
        print(label, r["step_median_s"], {k: round(v["time_s"] * 1e3, 2) for k, v in r["classes"].items()}, flush=True)
    with open(os.path.join(outdir, "megatron_shaped_step.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
