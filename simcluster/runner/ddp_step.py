"""Data-parallel training-step benchmark: one JSON line per configuration.

Measures, on synthetic data, the wall time of full training steps (forward, backward with
DDP's bucketed all-reduce, SGD step) for one model at one per-GPU batch size, on 1 GPU and on
`--world` GPUs with torch DistributedDataParallel. On 1 GPU it also times forward, backward and
optimizer separately (each bracketed by a device synchronisation) and records the gradient
sizes in registration order, which the training model needs for its bucket schedule.

With `--paired BLOCKS`, every multi-GPU process also holds a plain (unwrapped) copy of the model and
alternates blocks of `--block` plain steps and `--block` DDP steps, BLOCKS times each: the 1-GPU
step is then timed in the same processes, at the same time, as the DDP step it predicts, so a host
whose speed drifts between processes (a shared VM: 1-GPU steps of one configuration 5.5-6.9 ms in
fresh processes minutes apart) moves both alike. The record's `plain` holds those 1-GPU steps.

    python -m simcluster.runner.ddp_step --model resnet18 --image 32 --batch 128 --world 2
    python -m simcluster.runner.ddp_step --model resnet18 --image 32 --batch 128 --world 2 4 --paired 6
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import sys
import time


def build_model(name: str, num_classes: int):
    import torchvision  # the device image ships it; the local CPU image does not

    return getattr(torchvision.models, name)(num_classes=num_classes)


def _timed_steps(step, sync, warmup: int, steps: int) -> tuple[list[float], list[float], float]:
    """Wall time of each synchronised step (s), the host time to issue it (s, before the
    synchronisation: the step is host-bound when this is close to the wall time) and the process
    CPU time per step (s)."""
    for _ in range(warmup):
        step()
    sync()
    times, issue = [], []
    cpu0 = time.process_time()
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        issue.append(time.perf_counter() - t0)
        sync()
        times.append(time.perf_counter() - t0)
    return times, issue, (time.process_time() - cpu0) / steps


def _paired_steps(plain, ddp, sync, warmup: int, block: int, blocks: int) -> dict[str, list[float]]:
    """Alternating blocks of plain and DDP steps: wall and issue times (s) of each, by name."""
    for _ in range(warmup):
        plain()
        ddp()
    sync()
    out = {k: [] for k in ("plain_times", "plain_issue", "ddp_times", "ddp_issue")}
    for b in range(blocks):
        order = (("plain", plain), ("ddp", ddp)) if b % 2 == 0 else (("ddp", ddp), ("plain", plain))
        for name, step in order:
            times, issue, _ = _timed_steps(step, sync, 0, block)
            out[f"{name}_times"] += times
            out[f"{name}_issue"] += issue
    return out


def _profile(step, sync, steps: int, path: str) -> None:
    """A torch.profiler (CPU + CUDA) Chrome trace of `steps` steps, each marked 'simcluster_step'."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            with record_function("simcluster_step"):
                step()
                sync()
    prof.export_chrome_trace(path)


def _phases(model, opt, loss_fn, x, y, sync, steps: int) -> dict[str, float]:
    """Median forward / backward / optimizer times (s) on one GPU, each synchronised."""
    fwd, bwd, optim = [], [], []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        sync()
        t0 = time.perf_counter()
        loss = loss_fn(model(x), y)
        sync()
        t1 = time.perf_counter()
        loss.backward()
        sync()
        t2 = time.perf_counter()
        opt.step()
        sync()
        t3 = time.perf_counter()
        fwd.append(t1 - t0)
        bwd.append(t2 - t1)
        optim.append(t3 - t2)
    return {"forward_s": statistics.median(fwd), "backward_s": statistics.median(bwd),
            "optimizer_s": statistics.median(optim)}


def _worker(rank: int, args, port: int, queue) -> None:
    import torch
    import torch.distributed as dist

    world = args.world_now
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    torch.backends.cudnn.benchmark = True
    wrap = world > 1 or args.ddp_at_one
    if wrap:
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    torch.manual_seed(args.seed + rank)
    model = build_model(args.model, args.classes).to(device)
    grad_bytes = [p.numel() * p.element_size() for p in model.parameters() if p.requires_grad]
    if wrap:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[rank], bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(args.batch, 3, args.image, args.image, device=device)
    y = torch.randint(0, args.classes, (args.batch,), device=device)

    def make_step(net, optimizer):
        def step():
            optimizer.zero_grad(set_to_none=True)
            loss_fn(net(x), y).backward()
            optimizer.step()
        return step

    step = make_step(model, opt)
    paired = None
    if args.paired and world > 1:
        torch.manual_seed(args.seed + rank)
        plain_model = build_model(args.model, args.classes).to(device)
        plain_opt = torch.optim.SGD(plain_model.parameters(), lr=0.01, momentum=0.9)
        paired = _paired_steps(make_step(plain_model, plain_opt), step, torch.cuda.synchronize, args.warmup,
                               args.block, args.paired)
        times, issue, cpu_per_step = paired["ddp_times"], paired["ddp_issue"], None
    else:
        times, issue, cpu_per_step = _timed_steps(step, torch.cuda.synchronize, args.warmup, args.steps)
    per_rank = [None] * world
    if wrap:
        mine = {"step_times_s": times, "issue_times_s": issue}
        if paired:
            mine["plain_step_times_s"], mine["plain_issue_times_s"] = paired["plain_times"], paired["plain_issue"]
        dist.all_gather_object(per_rank, mine)
    if args.profile:
        os.makedirs(args.trace_dir, exist_ok=True)
        _profile(step, torch.cuda.synchronize, args.profile, os.path.join(
            args.trace_dir, f"{args.model}_{args.image}_b{args.batch}_w{world}_rank{rank}.pt.trace.json"))
    record = None
    if rank == 0:
        record = {
            "tool": "simcluster-ddp-step", "model": args.model, "image": args.image,
            "batch_per_gpu": args.batch, "world_size": world, "ddp_wrapped": wrap,
            "bucket_cap_mb": args.bucket_mb, "cpu_time_per_step_s": cpu_per_step,
            "dtype": "float32", "step_times_s": times, "issue_times_s": issue,
            "median_step_s": statistics.median(times), "ranks": per_rank if wrap else None,
            "grad_bytes": grad_bytes, "gpu": torch.cuda.get_device_name(device),
            "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
            "host": socket.gethostname(), "python": platform.python_version(),
            "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "CUDA_VISIBLE"))},
        }
        if not wrap:
            record["phases"] = _phases(model, opt, loss_fn, x, y, torch.cuda.synchronize, args.steps)
        if paired:
            record["plain"] = {"step_times_s": paired["plain_times"], "issue_times_s": paired["plain_issue"],
                               "median_step_s": statistics.median(paired["plain_times"]),
                               "block": args.block, "blocks": args.paired,
                               "phases": _phases(plain_model, plain_opt, loss_fn, x, y, torch.cuda.synchronize,
                                                 args.steps)}
    if wrap:
        dist.destroy_process_group()
    if rank == 0:
        queue.put(record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--image", type=int, default=32)
    parser.add_argument("--batch", type=int, default=128, help="samples per GPU per step")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--world", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--bucket-mb", type=float, default=25.0)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", type=int, default=0, metavar="STEPS",
                        help="after timing, record a torch.profiler Chrome trace of STEPS steps per rank")
    parser.add_argument("--trace-dir", default="profiler-traces")
    parser.add_argument("--ddp-at-one", action="store_true",
                        help="wrap in DistributedDataParallel even on 1 GPU (isolates the wrapper's cost)")
    parser.add_argument("--paired", type=int, default=0, metavar="BLOCKS",
                        help="multi-GPU runs: alternate BLOCKS blocks of plain (1-GPU) and DDP steps in the same processes")
    parser.add_argument("--block", type=int, default=10, help="steps per block with --paired")
    args = parser.parse_args(argv)
    if args.paired < 0 or args.block < 1:
        parser.error("--paired needs a number of blocks >= 0 and --block a number of steps >= 1")
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    for world in args.world:
        args.world_now = world
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        queue = ctx.SimpleQueue()
        mp.spawn(_worker, args=(args, port, queue), nprocs=world, join=True)
        print(json.dumps(queue.get()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
