"""Llama-shaped decoder training steps: one JSON document on stdout (rank 0).

    python -m simcluster.runner.llm_step --preset 1b --shapes 2048:4,4096:2
    python -m simcluster.runner.llm_step --layers 4 --hidden 256 --ffn 704 --heads 4 --kv-heads 2 --vocab 1000 --shapes 128:2
    torchrun --nproc-per-node 2 -m simcluster.runner.llm_step --preset 1b --mode ddp    # or fsdp, tp
    torchrun --nproc-per-node 2 -m simcluster.runner.llm_step --preset 1b --mode pp --schedule gpipe --microbatches 4
    torchrun --nproc-per-node 4 -m simcluster.runner.llm_step --preset 1b --mode tp+fsdp --group 2    # or tp+ddp, pp+ddp
    torchrun --nproc-per-node 2 -m simcluster.runner.llm_step --preset 1b --mode cp --shapes 32768:1    # llm_cp.py
    python -m simcluster.runner.llm_step --preset 1b --activation-checkpointing
    python -m simcluster.runner.llm_step --preset 1b --compile

The model: runner/llm_decoder.py's Llama-shaped decoder in plain torch (a preset's sizes, or the flags'), cross-entropy
on synthetic random tokens. Precision `amp` (default): fp32 master weights, bf16 autocast,
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
from simcluster.runner.llm_decoder import PRESETS, build, param_count
from simcluster.runner.llm_mesh import MESH_MODES, layout, wrap

MODES = ("single", "ddp", "fsdp", "tp", "pp", "cp", *MESH_MODES)


def parse_shapes(text: str) -> list[tuple[int, int]]:
    try:
        shapes = [(int(s), int(b)) for s, b in (x.split(":") for x in text.split(",") if x.strip())]
    except ValueError:
        raise SystemExit(f"--shapes {text!r}: expected SEQ:MICRO_BATCH,... e.g. 2048:4,4096:2") from None
    if not shapes or min(min(p) for p in shapes) < 1:
        raise SystemExit(f"--shapes {text!r}: expected positive SEQ:MICRO_BATCH pairs")
    return shapes


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
