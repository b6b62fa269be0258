"""Issue 44, session 55 (helper hfdev55; calibration/h200x1-hfdev55-2026-12-01, read by validation/hfdev55.py): the host
time of accelerate's FSDP1 wrapper around a Hugging Face Llama, on ONE GPU, which the `hf-fsdp1` framework does not price.

The model is written here in plain torch with the module structure of transformers' LlamaForCausalLM as hfds55 cites it
(huggingface/transformers 00227283, src/transformers/models/llama/modeling_llama.py, the v4.39-era file; nothing copied):
embed_tokens; per LlamaDecoderLayer input_layernorm -> self_attn (q_proj / k_proj / v_proj / o_proj nn.Linear without
bias; the rotary cos / sin computed in each attention call from inv_freq and the positions in fp32, applied by
rotate_half and torch.cat; keys / values expanded to the query heads by repeat_kv; SDPA) -> residual add ->
post_attention_layernorm -> mlp (down_proj(silu(gate_proj(x)) * up_proj(x))) -> residual add; final norm; lm_head
(untied); logits.float(), the shift_logits / shift_labels .contiguous() copies and CrossEntropyLoss. RMSNorm as
transformers': an fp32 upcast, pow(2).mean, rsqrt, the cast back, times the weight. What differs from transformers: no
attention-mask tensor (SDPA with is_causal=True, the flash backend forced on CUDA: FlashAttention 2, the spec's
attention_kernel fa2), no KV cache, no dropout, no config / output classes, no gradient checkpointing; outputs are not
cast back to fp32 by accelerate's convert_outputs_to_fp32 (the loss is fp32 already).

Variants, one process, torch.distributed initialised (NCCL world size 1 on CUDA, gloo on CPU):
  eager  the model bare, fp32 weights under torch.autocast(bf16) (accelerate's mixed_precision bf16 on one GPU): the
         reference, the `torch-amp` framework's mechanism;
  fsdp1  FullyShardedDataParallel FULL_SHARD (accelerate v1.2.0's default), one unit per decoder layer
         (transformer_auto_wrap_policy, accelerate's TRANSFORMER_BASED_WRAP) and the root, MixedPrecision(param_dtype =
         reduce_dtype = buffer_dtype = bf16) (accelerate's under bf16), use_orig_params True, limit_all_gathers True,
         no backward prefetch (the Trainer's default), forward under autocast(bf16) as accelerate wraps it. At world
         size 1 torch's FSDP1 itself switches FULL_SHARD to NO_SHARD (recorded as `sharding_strategy`): the hooks, the
         mixed-precision casts, the flat-parameter views and the (one-rank) gradient collective still run; the all-gather
         and its host path do not.
  zero3  DeepSpeed v0.16.4 ZeRO-3 (the wheel and its pure-Python dependencies carried in .device/wheels/hfdev55) as
         hfds55's `hf-deepspeed` reads the Trainer's config: bf16 enabled (the engine casts the module to bf16; no
         autocast), overlap_comm false, contiguous_gradients true and the Trainer's 'auto' sizes (reduce_bucket_size
         h^2, stage3_prefetch_bucket_size 0.9 h^2, stage3_param_persistence_threshold 10 h), torch's AdamW as the client
         optimizer (zero_allow_untested_optimizer), engine(ids) / engine.backward / engine.step. At world size 1 every
         submodule's fetch / release hooks and the (one-rank) collectives' calls still run.
All variants: torch.optim.AdamW(fused=True on CUDA), no gradient clipping (the Trainer's max_grad_norm 1.0 is not run);
eager and fsdp1 zero_grad(set_to_none=True), zero3 the engine's own.

Timing per configuration: `--warmup` steps, then `--steps` timed steps, each: a perf_counter start and a CUDA event,
forward + loss + backward + optimizer step + zero_grad, the host's issue time read (perf_counter, before any sync of
ours; DeepSpeed's step may sync itself), with the host time at the forward's and the backward's return (issue_fwd_s,
issue_bwd_s), an end event, torch.cuda.synchronize, the wall. Medians of events (the step on the GPU's clock, host gaps included),
issue (the host's time to issue the whole step) and wall; peak allocated bytes over the timed steps.

Output: ONE JSON document on stdout {set, env, records: [one record per configuration]}; progress on stderr.
    python studies/hfdev55_device.py --device cuda --warmup 5 --steps 15
    python studies/hfdev55_device.py --device cpu --quick --warmup 1 --steps 2     (the dry run: tiny shapes)
Unknown or bad arguments: one line on stderr, exit 2. A variant that cannot run here (e.g. FSDP1 on CPU) is recorded
with status 'skipped: <why>' (the guarded skip), not raised.
"""

from __future__ import annotations

import functools
import json
import math
import os
import statistics
import sys
import time

# (name, layers, hidden, ffn, heads, kv_heads, vocab): ~134M (GPT-2-small-like, MHA), ~0.3B (GQA 2:1), TinyLlama 1.1B's
# shape (GQA 8:1); the vocabulary 32000 (Llama 2's) for all three, untied
SIZES = {"s134m": (12, 768, 2048, 12, 12, 32000), "s0.3b": (24, 1024, 2816, 16, 8, 32000), "s1.1b": (22, 2048, 5632, 32, 4, 32000)}
QUICK_SIZES = {"tiny": (2, 64, 176, 4, 2, 512)}
# (name, micro-batch, seq): seqs new to calibration/ (this set's own)
POINTS = {"mb1": (1, 1248), "mb4": (4, 1136)}
QUICK_POINTS = {"q": (2, 64)}
VARIANTS = ("eager", "fsdp1", "zero3")
USAGE = ("usage: hfdev55_device.py [--device cuda|cpu] [--quick] [--warmup N] [--steps N] [--sizes a,b] [--points a,b] "
         "[--variants eager,fsdp1,zero3]")


def die(line: str) -> None:
    """One line on stderr, exit 2."""
    print(f"hfdev55_device.py: {line}", file=sys.stderr)
    sys.exit(2)


def parse(argv: list[str]) -> dict:
    """The options; anything else: one line on stderr and exit 2."""
    opts = {"device": "cuda", "quick": False, "warmup": 5, "steps": 15, "sizes": None, "points": None, "variants": list(VARIANTS)}
    it = iter(argv)
    for a in it:
        if a == "--quick":
            opts["quick"] = True
            continue
        key = a[2:] if a.startswith("--") else None
        if key not in ("device", "warmup", "steps", "sizes", "points", "variants"):
            die(f"unknown argument {a!r}; {USAGE}")
        value = next(it, None)
        if value is None:
            die(f"{a} needs a value; {USAGE}")
        if key in ("warmup", "steps"):
            if not value.isdigit() or (key == "steps" and int(value) < 1):
                die(f"{a} expects a non-negative integer (steps >= 1), got {value!r}")
            opts[key] = int(value)
        elif key == "device":
            if value not in ("cuda", "cpu"):
                die(f"--device expects cuda or cpu, got {value!r}")
            opts[key] = value
        else:
            opts[key] = value.split(",")
    sizes, points = (QUICK_SIZES, QUICK_POINTS) if opts["quick"] else (SIZES, POINTS)
    for key, known in (("sizes", sizes), ("points", points), ("variants", VARIANTS)):
        bad = [v for v in opts[key] or () if v not in known]
        if bad:
            die(f"--{key} {','.join(bad)} unknown; expected some of {','.join(known)}")
        opts[key] = opts[key] or list(known)
    return opts


def build(torch, layers: int, hidden: int, ffn: int, heads: int, kv_heads: int, vocab: int):
    """(LlamaForCausalLM-like module, its decoder-layer class) as the module docstring says."""
    nn, F = torch.nn, torch.nn.functional
    d = hidden // heads

    class LlamaRMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden))

        def forward(self, x):
            dtype = x.dtype
            x = x.to(torch.float32)
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            return self.weight * x.to(dtype)

    def rotate_half(x):
        return torch.cat((-x[..., d // 2:], x[..., : d // 2]), dim=-1)

    class LlamaAttention(nn.Module):
        def __init__(self):
            super().__init__()
            for name, n_in, n_out in (("q_proj", hidden, heads * d), ("k_proj", hidden, kv_heads * d),
                                      ("v_proj", hidden, kv_heads * d), ("o_proj", heads * d, hidden)):
                self.add_module(name, nn.Linear(n_in, n_out, bias=False))   # transformers' names and order
            self.register_buffer("inv_freq", 1.0 / (10000.0 ** (torch.arange(0, d, 2).float() / d)), persistent=False)

        def forward(self, x, position_ids):
            b, s, _ = x.shape
            q = self.q_proj(x).view(b, s, heads, d).transpose(1, 2)
            k = self.k_proj(x).view(b, s, kv_heads, d).transpose(1, 2)
            v = self.v_proj(x).view(b, s, kv_heads, d).transpose(1, 2)
            with torch.autocast(device_type=x.device.type, enabled=False):   # rotary in fp32, as transformers computes it
                freqs = (self.inv_freq[None, :, None].float() @ position_ids[:, None, :].float()).transpose(1, 2)
                emb = torch.cat((freqs, freqs), dim=-1)
                cos, sin = emb.cos().to(q.dtype)[:, None], emb.sin().to(q.dtype)[:, None]
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            if kv_heads != heads:   # repeat_kv
                k = k[:, :, None].expand(b, kv_heads, heads // kv_heads, s, d).reshape(b, heads, s, d)
                v = v[:, :, None].expand(b, kv_heads, heads // kv_heads, s, d).reshape(b, heads, s, d)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o_proj(o.transpose(1, 2).contiguous().view(b, s, hidden))

    class LlamaMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj = nn.Linear(hidden, ffn, bias=False)
            self.up_proj = nn.Linear(hidden, ffn, bias=False)
            self.down_proj = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class LlamaDecoderLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm, self.self_attn = LlamaRMSNorm(), LlamaAttention()
            self.post_attention_layernorm, self.mlp = LlamaRMSNorm(), LlamaMLP()

        def forward(self, x, position_ids):
            x = x + self.self_attn(self.input_layernorm(x), position_ids)
            return x + self.mlp(self.post_attention_layernorm(x))

    class LlamaForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(vocab, hidden)
            self.layers = nn.ModuleList(LlamaDecoderLayer() for _ in range(layers))
            self.norm, self.lm_head = LlamaRMSNorm(), nn.Linear(hidden, vocab, bias=False)

        def forward(self, input_ids, labels):
            position_ids = torch.arange(input_ids.shape[1], device=input_ids.device)[None].expand(input_ids.shape[0], -1)
            x = self.embed_tokens(input_ids)
            for layer in self.layers:
                x = layer(x, position_ids)
            logits = self.lm_head(self.norm(x)).float()
            shift_logits, shift_labels = logits[..., :-1, :].contiguous(), labels[..., 1:].contiguous()
            return F.cross_entropy(shift_logits.view(-1, vocab), shift_labels.view(-1))

    return LlamaForCausalLM(), LlamaDecoderLayer


def wrap(torch, model, layer_cls, variant: str, device):
    """(module to train, facts recorded): the bare model, or accelerate's FSDP1 around it."""
    if variant == "eager":
        return model, {}
    if variant == "zero3":
        return model, {}   # deepspeed.initialize needs the optimizer: zero3_engine
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

    bf16 = torch.bfloat16
    wrapped = FSDP(model, auto_wrap_policy=functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={layer_cls}),
                   sharding_strategy=ShardingStrategy.FULL_SHARD, backward_prefetch=None, forward_prefetch=False,
                   mixed_precision=MixedPrecision(param_dtype=bf16, reduce_dtype=bf16, buffer_dtype=bf16),
                   device_id=device if device.type == "cuda" else None, use_orig_params=True, limit_all_gathers=True)
    units = sum(1 for m in wrapped.modules() if isinstance(m, FSDP))
    return wrapped, {"sharding_strategy": str(wrapped.sharding_strategy), "fsdp_units": units}


def zero3_engine(torch, model, hidden: int, mb: int, cuda: bool):
    """(DeepSpeed engine, facts): ZeRO-3 as the module docstring says."""
    import deepspeed

    cfg = {"train_micro_batch_size_per_gpu": mb, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
           "zero_optimization": {"stage": 3, "overlap_comm": False, "contiguous_gradients": True, "reduce_bucket_size": hidden * hidden,
                                 "stage3_prefetch_bucket_size": int(0.9 * hidden * hidden), "stage3_param_persistence_threshold": 10 * hidden},
           "zero_allow_untested_optimizer": True, "steps_per_print": 10**9, "wall_clock_breakdown": False}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=cuda)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=cfg)
    return engine, {"deepspeed": deepspeed.__version__, "zero_stage": engine.zero_optimization_stage()}


def time_config(torch, device, size: str, shape: tuple, point: str, mb: int, seq: int, variant: str, warmup: int, steps: int) -> dict:
    """One configuration's record (module docstring)."""
    layers, hidden, ffn, heads, kv_heads, vocab = shape
    rec = {"size": size, "layers": layers, "hidden": hidden, "ffn": ffn, "heads": heads, "kv_heads": kv_heads, "vocab": vocab,
           "point": point, "micro_batch": mb, "seq": seq, "variant": variant}
    torch.manual_seed(0)
    with torch.device(device):
        model, layer_cls = build(torch, *shape)
    rec["params"] = sum(p.numel() for p in model.parameters())
    try:
        model, facts = wrap(torch, model, layer_cls, variant, device)
    except Exception as exc:   # the guarded skip: a variant this torch / device cannot run
        return rec | {"status": f"skipped: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"}
    rec.update(facts)
    cuda = device.type == "cuda"
    if variant == "zero3":
        try:
            engine, facts = zero3_engine(torch, model, shape[1], mb, cuda)
        except ImportError as exc:   # the guarded skip: no deepspeed here
            return rec | {"status": f"skipped: no deepspeed ({exc})"}
        rec.update(facts)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=cuda)
    gen = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(0, vocab, (mb, seq), generator=gen).to(device)
    backends = [torch.nn.attention.SDPBackend.FLASH_ATTENTION if cuda else torch.nn.attention.SDPBackend.MATH]
    rec["sdpa_backend"] = str(backends[0])

    def step(t0: float) -> tuple[float, float]:   # (host seconds at the forward's and the backward's return)
        if variant == "zero3":   # bf16 module, no autocast
            loss = engine(ids, ids)
            t_fwd = time.perf_counter() - t0
            engine.backward(loss)
            t_bwd = time.perf_counter() - t0
            engine.step()
            return t_fwd, t_bwd
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            loss = model(ids, ids)
        t_fwd = time.perf_counter() - t0
        loss.backward()
        t_bwd = time.perf_counter() - t0
        opt.step()
        opt.zero_grad(set_to_none=True)
        return t_fwd, t_bwd

    events, issue, wall, phases = [], [], [], []
    with torch.nn.attention.sdpa_kernel(backends):
        for _ in range(warmup):
            step(time.perf_counter())
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        for _ in range(steps):
            start = torch.cuda.Event(enable_timing=True) if cuda else None
            end = torch.cuda.Event(enable_timing=True) if cuda else None
            t0 = time.perf_counter()
            if cuda:
                start.record()
            phases.append(step(t0))
            issue.append(time.perf_counter() - t0)
            if cuda:
                end.record()
                torch.cuda.synchronize()
                events.append(start.elapsed_time(end) / 1e3)
            wall.append(time.perf_counter() - t0)
    rec.update(status="ok", steps=steps, warmup=warmup, events_s=events, issue_s=issue, wall_s=wall,
               issue_fwd_s=[p[0] for p in phases], issue_bwd_s=[p[1] for p in phases],
               median_events_s=statistics.median(events) if events else None, median_issue_s=statistics.median(issue),
               median_wall_s=statistics.median(wall), peak_bytes=torch.cuda.max_memory_allocated() if cuda else None)
    if not all(math.isfinite(x) for x in issue + wall + events):
        rec["status"] = "failed: a non-finite time"
    return rec


def main(argv: list[str]) -> None:
    opts = parse(argv)
    out = os.fdopen(os.dup(1), "w")   # the JSON document's stream; libraries' prints (DeepSpeed logs to stdout) to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:   # the guarded skip where no torch is installed (this repository's CPU machine)
        print(json.dumps({"set": "hfdev55", "status": f"skipped: no torch ({exc})", "records": []}), file=out)
        return
    cuda = opts["device"] == "cuda"
    if cuda and not torch.cuda.is_available():
        die("--device cuda but torch.cuda.is_available() is False")
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    for key, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29555"), ("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
        os.environ.setdefault(key, value)   # one process; DeepSpeed reads them too
    dist.init_process_group("nccl" if cuda else "gloo", rank=0, world_size=1, **({"device_id": device} if cuda else {}))
    sizes, points = (QUICK_SIZES, QUICK_POINTS) if opts["quick"] else (SIZES, POINTS)
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0) if cuda else "cpu",
           "backend": dist.get_backend(), "world_size": dist.get_world_size(), "quick": opts["quick"]}
    records = []
    for size in opts["sizes"]:
        for point in opts["points"]:
            mb, seq = points[point]
            for variant in opts["variants"]:
                t0 = time.perf_counter()
                try:
                    rec = time_config(torch, device, size, sizes[size], point, mb, seq, variant, opts["warmup"], opts["steps"])
                except Exception as exc:   # recorded, the next configuration still runs
                    rec = {"size": size, "point": point, "micro_batch": mb, "seq": seq, "variant": variant,
                           "status": f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"}
                records.append(rec)
                print(f"{size} {point} {variant}: {rec['status']} {rec.get('median_events_s')} s "
                      f"issue {rec.get('median_issue_s')} s ({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
                if cuda:
                    torch.cuda.empty_cache()
    dist.destroy_process_group()
    print(json.dumps({"set": "hfdev55", "env": env, "records": records}), file=out)
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
