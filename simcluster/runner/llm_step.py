"""Llama-shaped decoder training steps: one JSON document on stdout (rank 0).

    python -m simcluster.runner.llm_step --preset 1b --shapes 2048:4,4096:2
    python -m simcluster.runner.llm_step --layers 4 --hidden 256 --ffn 704 --heads 4 --kv-heads 2 --vocab 1000 --shapes 128:2
    torchrun --nproc-per-node 2 -m simcluster.runner.llm_step --preset 1b --mode ddp    # or fsdp, tp
    torchrun --nproc-per-node 2 -m simcluster.runner.llm_step --preset 1b --mode pp --schedule gpipe --microbatches 4
    torchrun --nproc-per-node 4 -m simcluster.runner.llm_step --preset 1b --mode tp+fsdp --group 2    # or tp+ddp, pp+ddp
    torchrun --nproc-per-node 2 -m simcluster.runner.llm_step --preset 1b --mode cp --shapes 32768:1    # llm_cp.py
    python -m simcluster.runner.llm_step --preset 1b --activation-checkpointing
    python -m simcluster.runner.llm_step --preset 1b --compile

The model, in plain torch: token embedding; per layer x += Attn(RMSNorm(x)), x += MLP(RMSNorm(x)) with
Attn = q/k/v projections (no bias), rotary embeddings (optional), causal SDPA with GQA (enable_gqa), output
projection; MLP = SwiGLU, down(silu(gate(x)) * up(x)); final RMSNorm; LM head (tied to the embedding or not);
cross-entropy on synthetic random tokens. Precision `amp` (default): fp32 master weights, bf16 autocast,
AdamW (fused on a GPU) with fp32 states; `bf16`: bf16 weights and optimizer states.

For each `--shapes SEQ:MICRO_BATCH` it runs `--warmup` steps, then times `--steps` full steps (forward,
backward, optimizer), each between two device synchronisations (wall clock; also the host time to issue
it, every rank's, gathered after the timed steps: host_issue.py; and the issuing threads' CPU time, which leaves out
waits that sleep: host_cpu.py, --sched), then profiles `--profile` more steps (kernels per
step and their summed device time), and records
torch.cuda.max_memory_allocated / max_memory_reserved since that shape's first step (peak statistics reset
first; parameters and optimizer states persist across the shapes of one process). A shape that runs out of
memory is recorded as status "oom" with the allocator's message, and the next shape runs.

Modes: single (1 GPU), ddp (DistributedDataParallel), fsdp (FSDP2: torch.distributed.fsdp.fully_shard per
layer, bf16 parameters, fp32 reduction), tp (torch.distributed.tensor.parallel: q/k/v, gate, up column-wise,
o and down row-wise; heads and kv_heads must divide by the world size), pp (torch.distributed.pipelining: one stage
of consecutive layers per rank, Schedule1F1B or ScheduleGPipe over --microbatches micro-batches of each shape, the
whole step under one autocast; llm_pipeline.py; each shape records every rank's peak memory and step time under
"ranks"; --timeline: each rank's host timeline of every other step, pp_timeline.py), the two-dimensional tp+ddp,
tp+fsdp and pp+ddp over groups of --group consecutive ranks (llm_mesh.py), and cp
(torch's context_parallel over every rank, DDP over the same ranks, flash SDPA; llm_cp.py; every rank under "ranks").
--activation-checkpointing runs every decoder layer under torch.utils.checkpoint (non-reentrant); --ac-mode full | every:N | op
the modes torchtitan runs (llm_ac.py). --compile runs every decoder layer through torch.compile (llm_compile.py:
torchtitan's per-block compile, Inductor's default mode; --compile-scope model: the whole model after its wrapper;
with --ac-mode none or full): each warm-up step is timed (the first
holds the compilation) and the document says so under "compile". --grad-accum N [--no-sync]: N micro-batches per step,
reduced every micro-batch or once (llm_accum.py). Multi-GPU modes run under torchrun; torch is imported inside main only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

from simcluster.runner import host_cpu, host_issue, llm_ac, llm_accum, llm_compile, llm_cp, llm_pipeline, pp_timeline
from simcluster.runner.llm_mesh import MESH_MODES, layout, wrap

# Llama-like shapes (layers, hidden, ffn, heads, kv_heads, vocab, tied). 1b and 3b are Llama 3.2 1B / 3B.
PRESETS = {
    "0.3b": dict(layers=24, hidden=1024, ffn=2816, heads=16, kv_heads=8, vocab=32000, tied=True),
    "0.5b": dict(layers=16, hidden=1536, ffn=4096, heads=12, kv_heads=4, vocab=32000, tied=False),
    "1b": dict(layers=16, hidden=2048, ffn=8192, heads=32, kv_heads=8, vocab=128256, tied=True),
    "3b": dict(layers=28, hidden=3072, ffn=8192, heads=24, kv_heads=8, vocab=128256, tied=True),
    "tiny": dict(layers=2, hidden=128, ffn=352, heads=4, kv_heads=2, vocab=512, tied=False),
    # session 21's sealed 2-GPU set: shapes no earlier run used (GQA 7:1 with a 50K vocabulary; 5:1 with a tied 64K one)
    "0.8b": dict(layers=20, hidden=1792, ffn=4864, heads=14, kv_heads=2, vocab=50304, tied=False),
    "2b": dict(layers=24, hidden=2560, ffn=6912, heads=20, kv_heads=4, vocab=65536, tied=True),
    # session 22's sealed set: TinyLlama 1.1B's shape (GQA 8:1, 32K vocabulary) and a Qwen2.5-3B-like one (36 thin layers,
    # GQA 8:1, tied 152K vocabulary)
    "1.1b": dict(layers=22, hidden=2048, ffn=5632, heads=32, kv_heads=4, vocab=32000, tied=False),
    "3.1b": dict(layers=36, hidden=2048, ffn=11008, heads=16, kv_heads=2, vocab=151936, tied=True),
    # session 24's 4-GPU set: Llama 3 8B's shape (GQA 4:1, 128K vocabulary, untied)
    "8b": dict(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256, tied=False),
}
MODES = ("single", "ddp", "fsdp", "tp", "pp", "cp", *MESH_MODES)


def param_count(layers: int, hidden: int, ffn: int, heads: int, kv_heads: int, vocab: int, tied: bool) -> int:
    """Parameters of the decoder as built here (no biases; two RMSNorm weights per layer and a final one)."""
    d = hidden // heads
    attn = hidden * hidden * 2 + 2 * hidden * kv_heads * d
    return layers * (attn + 3 * hidden * ffn + 2 * hidden) + hidden + vocab * hidden * (1 if tied else 2)


def parse_shapes(text: str) -> list[tuple[int, int]]:
    try:
        shapes = [(int(s), int(b)) for s, b in (x.split(":") for x in text.split(",") if x.strip())]
    except ValueError:
        raise SystemExit(f"--shapes {text!r}: expected SEQ:MICRO_BATCH,... e.g. 2048:4,4096:2") from None
    if not shapes or min(min(p) for p in shapes) < 1:
        raise SystemExit(f"--shapes {text!r}: expected positive SEQ:MICRO_BATCH pairs")
    return shapes


def build(torch, cfg: dict, rope: bool):
    """The decoder as an nn.Module (no torch at import time: classes are made here)."""
    nn, F = torch.nn, torch.nn.functional
    hidden, heads, kv_heads = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
    head_dim = hidden // heads

    class RMSNorm(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            if hasattr(F, "rms_norm"):
                return F.rms_norm(x, (x.shape[-1],), self.weight.to(x.dtype), 1e-5)
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

    def rotate(x, cos, sin):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(hidden, heads * head_dim, bias=False)
            self.k = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.v = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.o = nn.Linear(heads * head_dim, hidden, bias=False)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            # local head counts from the (possibly tensor-parallel) projections' outputs
            q = self.q(x).view(b, s, -1, head_dim).transpose(1, 2)
            k = self.k(x).view(b, s, -1, head_dim).transpose(1, 2)
            v = self.v(x).view(b, s, -1, head_dim).transpose(1, 2)
            if cos is not None:
                q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            gqa = {"enable_gqa": True} if q.shape[1] != k.shape[1] else {}
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
            return self.o(o.transpose(1, 2).reshape(b, s, -1))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(hidden, cfg["ffn"], bias=False)
            self.up = nn.Linear(hidden, cfg["ffn"], bias=False)
            self.down = nn.Linear(cfg["ffn"], hidden, bias=False)

        def forward(self, x):
            return self.down(F.silu(self.gate(x)) * self.up(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn_norm, self.attn, self.mlp_norm, self.mlp = RMSNorm(hidden), Attention(), RMSNorm(hidden), Mlp()

        def forward(self, x, cos, sin):
            x = x + self.attn(self.attn_norm(x), cos, sin)
            return x + self.mlp(self.mlp_norm(x))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(cfg["vocab"], hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(cfg["layers"]))
            self.norm = RMSNorm(hidden)
            self.head = nn.Linear(hidden, cfg["vocab"], bias=False)
            if cfg["tied"]:
                self.head.weight = self.embed.weight
            self.checkpoint = "none"    # --ac-mode (llm_ac.py): which layers run under torch.utils.checkpoint, and how

        def rotary(self, seq: int, device, dtype):
            if not rope:
                return None, None
            inv = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
            ang = torch.outer(torch.arange(seq, device=device, dtype=torch.float32), inv)
            ang = torch.cat((ang, ang), dim=-1)
            return ang.cos().to(dtype)[None, None], ang.sin().to(dtype)[None, None]

        def run_layers(self, layers, x, cos, sin):
            for i, layer in enumerate(layers):
                x = llm_ac.run_block(torch, layer, i, self.checkpoint, x, cos, sin)
            return x

        def forward(self, tokens, labels, rope=None):   # rope: (cos, sin) given (the cp mode's sharded tables)
            x = self.embed(tokens)
            cos, sin = rope or self.rotary(tokens.shape[1], tokens.device, x.dtype)
            x = self.run_layers(self.layers, x, cos, sin)
            logits = self.head(self.norm(x))
            return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))

    return Decoder()


def _distributed(torch, mode: str):
    """(rank, world, local_rank) under torchrun; (0, 1, 0) for single."""
    if mode == "single":
        return 0, 1, 0
    import torch.distributed as dist

    if "RANK" not in os.environ:
        raise SystemExit(f"--mode {mode}: launch with torchrun (RANK / WORLD_SIZE not set)")
    local = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return dist.get_rank(), dist.get_world_size(), local


def run_shape(torch, model, opt, device, cfg: dict, seq: int, micro: int, warmup: int, steps: int, amp: bool, seed: int,
              profile: int = 0, trace: str | None = None, make_step=None, microbatches: int = 1, compiled: bool = False) -> dict:
    """One shape's timed steps; `make_step(inputs, labels)` (the pipeline mode, llm_pipeline.py) builds the step
    over `microbatches` micro-batches of `micro` sequences each; `compiled`: each warm-up step timed apart (the first
    holds torch.compile's compilation: llm_compile.warmup_record)."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    tokens = torch.randint(0, cfg["vocab"], (micro * microbatches, seq + 1), generator=gen).to(device)
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def step():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            loss = model(inputs, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    if make_step is not None:
        step = make_step(inputs, labels)
    record = {"seq": seq, "micro_batch": micro, "tokens_per_step": seq * micro * microbatches, "warmup": warmup, "steps": steps}
    if microbatches > 1:
        record["microbatches"] = microbatches
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    try:
        warm = []
        for _ in range(warmup):
            t0 = time.perf_counter()
            step()
            if compiled:
                sync()
                warm.append(time.perf_counter() - t0)
        sync()
        steady = torch.cuda.memory_allocated(device) if cuda else 0
        warm_peak = (torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)) if cuda else (0, 0)
        if cuda:   # the timed steps' own peak besides the shape's (max_memory_allocated_timed_bytes)
            torch.cuda.reset_peak_memory_stats(device)
        record["_t"] = [time.time(), None]       # wall window of the timed steps, for --clocks (removed by main)
        times, issue, cpu, clk, loss = host_cpu.timed_steps(step, sync, steps)   # step, issue, issuing threads' CPU
        record["_t"][1] = time.time()
    except getattr(torch, "OutOfMemoryError", RuntimeError) as exc:
        opt.zero_grad(set_to_none=True)
        record.update(status="oom", error=str(exc).splitlines()[0][:300])
        if cuda:
            record.update(max_memory_allocated_bytes=torch.cuda.max_memory_allocated(device),
                          max_memory_reserved_bytes=torch.cuda.max_memory_reserved(device))
            torch.cuda.empty_cache()
        return record
    record.update(status="ok", step_times_s=times, median_step_s=statistics.median(times), host_issue_s=issue,
                  host_cpu_s=[c[0] for c in cpu], process_cpu_s=[c[1] for c in cpu], issuing_threads=clk.names,
                  thread_cpu_s=clk.by_thread(), loss=float(loss.detach()))
    if compiled:
        from simcluster.runner.llm_compile import warmup_record

        record["compile"] = warmup_record(warm, times, torch)
    if cuda:   # the peaks since the shape's first step and of its timed steps alone, before the profiled one
        timed_peak = torch.cuda.max_memory_allocated(device)
        record.update(max_memory_allocated_bytes=max(warm_peak[0], timed_peak), max_memory_allocated_timed_bytes=timed_peak,
                      max_memory_reserved_bytes=max(warm_peak[1], torch.cuda.max_memory_reserved(device)),
                      memory_allocated_steady_bytes=steady)
    if profile > 0:
        from simcluster.runner.llm_profile import profile_steps

        try:
            record["profile"] = profile_steps(torch, step, sync, profile, trace)
        except Exception as exc:  # noqa: BLE001 - the timed steps stand without the profile
            record["profile_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), help="Llama-like sizes; explicit flags override them")
    for name in ("layers", "hidden", "ffn", "heads", "kv-heads", "vocab"):
        ap.add_argument(f"--{name}", type=int, help=f"model {name}")
    ap.add_argument("--tied", choices=("yes", "no"), help="tie the LM head to the embedding")
    ap.add_argument("--no-rope", action="store_true", help="leave rotary embeddings out")
    ap.add_argument("--shapes", default="2048:1", help="SEQ:MICRO_BATCH,... timed in this order")
    ap.add_argument("--precision", choices=("amp", "bf16"), default="amp", help="amp: fp32 weights + bf16 autocast; bf16: bf16 weights")
    ap.add_argument("--mode", choices=MODES, default="single", help="parallelism (multi-GPU modes under torchrun)")
    llm_ac.add_argument(ap)   # --activation-checkpointing, --ac-mode
    llm_accum.add_argument(ap)   # --grad-accum, --no-sync, --reshard-after-forward / -backward
    llm_compile.add_arguments(ap)   # --compile, --compile-scope
    llm_pipeline.add_arguments(ap)   # --schedule, --virtual-stages, --microbatches, --timeline
    ap.add_argument("--group", type=int, default=2, metavar="SIZE", help="--mode tp+ddp / tp+fsdp / pp+ddp: ranks of each "
                    "tensor-parallel group or pipeline (consecutive ranks); data parallel across the world / SIZE groups")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps per shape")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per shape")
    ap.add_argument("--lr", type=float, default=1e-4, help="AdamW learning rate")
    ap.add_argument("--sched", choices=sorted(host_cpu.SCHED), default="auto", help="the CUDA primary context's "
                    "scheduling flag, set before torch creates it (blocking: CU_CTX_SCHED_BLOCKING_SYNC; the hostwait set "
                    "found GPU-bound steps' host CPU time about unchanged by it, the waits still on the CPU clock; 2 of 4 "
                    "blocking runs aborted at exit, cause not known; host_cpu.py); auto: untouched")
    ap.add_argument("--clocks", action="store_true", help="stream nvidia-smi's SM clock and board power during the timed "
                    "steps (every 20 ms) and record their medians per shape (the step's own clock, llm/clock.py)")
    ap.add_argument("--profile", type=int, default=1, metavar="STEPS", help="after timing, profile STEPS more steps: kernels "
                    "per step and their summed time (0: off)")
    ap.add_argument("--trace", metavar="PREFIX", help="keep each shape's profiled steps as a gzipped Chrome trace (Perfetto): "
                    "PREFIX-SEQxMB-rankR.json.gz, every rank")
    args = ap.parse_args(argv)
    if args.trace and args.profile < 1:   # --trace keeps the profiled steps' timeline
        raise SystemExit("--trace keeps the profiled steps' timeline: give --profile 1 or more")
    if args.timeline and (args.mode != "pp" or args.virtual_stages > 1):
        raise SystemExit("--timeline: --mode pp with one chunk per rank only (pp_timeline.py)")
    cfg = dict(PRESETS[args.preset or "tiny"])
    for name in ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab"):
        if getattr(args, name) is not None:
            cfg[name] = getattr(args, name)
    if args.tied:
        cfg["tied"] = args.tied == "yes"
    if cfg["hidden"] % cfg["heads"] or cfg["heads"] % cfg["kv_heads"]:
        raise SystemExit(f"hidden {cfg['hidden']} must divide by heads {cfg['heads']}, heads by kv_heads {cfg['kv_heads']}")
    shapes = parse_shapes(args.shapes)
    if args.mode == "cp":
        llm_cp.check_shapes(shapes, int(os.environ.get("WORLD_SIZE", "1")))
    ac_mode, accum = llm_ac.resolve(args), llm_accum.check(args)
    llm_compile.check_args(args.mode, ac_mode, args.compile_scope, args.compile)
    sched = host_cpu.set_sched(int(os.environ.get("LOCAL_RANK", 0)), args.sched)   # before torch's CUDA context
    import torch

    rank, world, local = _distributed(torch, args.mode)
    device = torch.device(f"cuda:{local}" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    with torch.device(device):
        model = build(torch, cfg, rope=not args.no_rope)
    if args.precision == "bf16":
        model = model.to(torch.bfloat16)
    model.checkpoint = ac_mode
    if args.compile:   # before any parallel wrapper: the layers compiled (scope layer) or checkpoint-wrapped (model)
        llm_compile.before_wrapper(torch, model, args.compile_scope, ac_mode)
    pipe = None
    if args.mode in ("pp", "pp+ddp"):
        pipe = llm_pipeline.Pipeline.of(torch, model, args.mode, rank, world, args.group, cfg, device, args.schedule,
                                        args.microbatches, args.precision == "amp", args.virtual_stages)
        pipe.timeline = pp_timeline.Timeline(torch) if args.timeline else None
        model = pipe.module
    else:
        model = wrap(torch, model, args.mode, world, cfg, device, args.group, args.reshard_after_forward == "true")
    if args.compile and args.compile_scope == "model":   # after the wrapper, as KempnerForge compiles its FSDP2 model
        model = llm_compile.compile_model(torch, model, cfg["layers"])
    cp = llm_cp.ContextParallel(torch, world, device) if args.mode == "cp" else None
    tp = args.mode.startswith("tp")
    fused = device.type == "cuda" and not tp
    # tp: the decoder layers' parameters are DTensors, the embedding / head plain tensors; torch's foreach kernels refuse
    # the mix (aten._foreach_mul_: mixed torch.Tensor and DTensor), so the tp optimizer runs per parameter
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, fused=fused or None, foreach=False if tp else None)
    amp = args.precision == "amp"
    arch = {**cfg, "preset": args.preset, "head_dim": cfg["hidden"] // cfg["heads"], "rope": not args.no_rope,
            "params": param_count(cfg["layers"], cfg["hidden"], cfg["ffn"], cfg["heads"], cfg["kv_heads"], cfg["vocab"], cfg["tied"])}
    records = []
    smi = None
    if args.clocks and device.type == "cuda":
        from simcluster.runner.gpu_duty import SmiStream, window_medians

        smi = SmiStream()
    for i, (seq, micro) in enumerate(shapes):
        trace = f"{args.trace}-{seq}x{micro}-rank{rank}.json.gz" if args.trace else None
        records.append(run_shape(torch, model, opt, device, cfg, seq, micro, args.warmup, args.steps, amp, seed=i,
                                 profile=args.profile, trace=trace, make_step=pipe.step_maker(opt) if pipe else
                                 cp.step_maker(model, opt, amp) if cp else llm_accum.step_maker(
                                     torch, model, opt, device, amp, accum, args.no_sync, args.mode,
                                     args.reshard_after_backward == "false") if accum > 1 else None,
                                 microbatches=args.microbatches if pipe else accum, compiled=args.compile))
        if pipe or cp:
            records[-1]["ranks"] = (pipe or cp).gather(records[-1])
        records[-1].update(host_issue.gather(torch, records[-1], world))   # every rank's issue per step (host_issue.py)
        print(f"llm-step: {args.preset or 'custom'} seq {seq} mb {micro}: {records[-1]['status']} "
              f"{records[-1].get('median_step_s', float('nan')) * 1e3:.1f} ms", file=sys.stderr, flush=True)
    samples = smi.stop() if smi is not None else []
    for rec in records:
        window = rec.pop("_t", None)
        if smi is not None and window and window[1] is not None:
            rec["clock"] = window_medians(samples, *window)
    if rank == 0:
        props = torch.cuda.get_device_properties(device) if device.type == "cuda" else None
        doc = {"tool": "llm-step", "format": 1, "mode": args.mode, "world_size": world,
               "device": {"name": props.name if props else "cpu", "memory_bytes": props.total_memory if props else None,
                          "sm_count": props.multi_processor_count if props else None},
               "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
               "model": arch, "precision": {"amp": "fp32 weights, bf16 autocast", "bf16": "bf16 weights"}[args.precision],
               "optimizer": {"name": "AdamW", "fused": bool(fused), "foreach": not tp, "lr": args.lr},
               "mesh": layout(args.mode, world, args.group), "cuda_sched": sched, "shapes": records}
        doc.update(llm_ac.record(ac_mode, cfg["layers"]), **llm_accum.record(args, accum))
        if args.compile:
            doc["compile"] = llm_compile.describe(torch, args.compile_scope)
        if pipe or cp:
            doc["pipeline" if pipe else "context_parallel"] = (pipe or cp).describe()
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
    if args.mode != "single":
        torch.distributed.destroy_process_group()   # imported by _distributed
    return 0


if __name__ == "__main__":
    sys.exit(main())
