"""Where an eager step's peak memory is made, iteration by iteration (issue 44, session 37; a diagnostic, no model input).

The registered cp set (calibration/h200x2-llm-eager-cp-2026-11-29) peaked 1.5-10.5 GiB under the model, by about the
4 bytes per parameter the model adds for DDP's first iterations (MemoryBreakdown.ddp_rebuild), while every DDP run of the
two 2-GPU sets of the same session peaks exactly that much above its own timed steps. This records torch's allocator
history over the first warm-up steps of the runner's own decoder (simcluster.runner.llm_step: build, wrap, the cp
step maker) and prints, per iteration, the peak of allocated bytes and what was alive at it, grouped by the Python
frame that allocated it (so the reducer's buckets, the autograd backward, the optimizer state show apart).

    torchrun --nproc-per-node 2 studies/eager_memory_timeline.py --preset 3b --mode ddp --shape 2048:3 > ddp.json
    python studies/eager_memory_timeline.py --read ddp.json cp.json      # the table
    python studies/eager_memory_timeline.py --peaks BUNDLE...            # DDP / cp runs: job and timed peaks vs the model
Not a registered set: nothing here is a prediction, and no model term is fitted from it.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

KEEP = ("simcluster/", "torch/nn/parallel/", "torch/optim/", "torch/distributed/", "torch/autograd/", "torch/_tensor.py")


def site(frames: list[dict]) -> str:
    """The innermost frames (up to three) from the runner, DDP, the optimizer, distributed or autograd."""
    picked = [f"{f['filename'].split('site-packages/')[-1]}:{f['line']}:{f['name']}" for f in frames
              if any(k in f.get("filename", "") for k in KEEP)]
    return " < ".join(picked[:3]) or "(no python frame)"


def replay(trace: list[dict], marks: list[int], base: int) -> list[dict]:
    """Allocated bytes over the trace, as torch.cuda.max_memory_allocated counts them (base = allocated when recording
    started): a block counts from its alloc to its free_requested (the allocator's free(); a block a side stream used
    is reusable only at free_completed, which the allocated statistic does not wait for); a block allocated before the
    recording leaves `base` at its free, by the event's own size. Per window between marks: the peak, the alive blocks
    at it by allocating site ("(before the recording)" for what is left of base), and the bytes freed but not yet
    reusable at it (free_requested, not free_completed)."""
    alive, pending, total, before, out = {}, {}, base, base, []
    for lo, hi in zip([0] + marks[:-1], marks, strict=True):
        peak, at, at_before, at_pending = total, dict(alive), before, sum(pending.values())
        for ev in trace[lo:hi]:
            act, addr = ev.get("action"), ev.get("addr")
            if act == "alloc":
                alive[addr] = (ev["size"], site(ev.get("frames", [])))
                total += ev["size"]
                if total > peak:
                    peak, at, at_before, at_pending = total, dict(alive), before, sum(pending.values())
            elif act == "free_completed" and addr in pending:   # its free_requested already counted it out
                pending.pop(addr)
            elif act in ("free_requested", "free_completed"):
                if addr in alive:
                    size = alive.pop(addr)[0]
                else:   # a block from before the recording
                    size = ev.get("size", 0)
                    before -= size
                total -= size
                if act == "free_requested":
                    pending[addr] = size
        by = defaultdict(int)
        for size, where in at.values():
            by[where] += size
        by["(before the recording)"] = at_before
        out.append({"peak_bytes": peak, "alive_by_site": dict(sorted(by.items(), key=lambda kv: -kv[1])[:14]),
                    "freed_not_reusable_at_peak_bytes": at_pending, "end_bytes": total})
    return out


def device(args) -> int:
    import torch

    from simcluster.runner import llm_cp
    from simcluster.runner.llm_decoder import PRESETS, build
    from simcluster.runner.llm_step import _distributed, parse_shapes, wrap

    cfg = dict(PRESETS[args.preset])
    (seq, micro), = parse_shapes(args.shape)
    rank, world, local = _distributed(torch, args.mode)
    dev = torch.device(f"cuda:{local}")
    torch.manual_seed(0)
    with torch.device(dev):
        model = build(torch, cfg, rope=True)
    model = wrap(torch, model, args.mode, world, cfg, dev, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    gen = torch.Generator(device="cpu").manual_seed(0)
    tokens = torch.randint(0, cfg["vocab"], (micro, seq + 1), generator=gen).to(dev)
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def plain():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(inputs, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step = llm_cp.ContextParallel(torch, world, dev).step_maker(model, opt, True)(inputs, labels) if args.mode == "cp" else plain
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated(dev)
    torch.cuda.memory._record_memory_history(max_entries=4_000_000, stacks="python", context="alloc")
    marks, peaks = [], []
    for _ in range(args.iterations):
        torch.cuda.reset_peak_memory_stats(dev)
        step()
        torch.cuda.synchronize()
        peaks.append(torch.cuda.max_memory_allocated(dev))
        marks.append(len(torch.cuda.memory._snapshot()["device_traces"][local]))
    trace = torch.cuda.memory._snapshot()["device_traces"][local]
    torch.cuda.memory._record_memory_history(enabled=None)
    windows = replay(trace, marks, base)
    doc = {"preset": args.preset, "mode": args.mode, "shape": args.shape, "rank": rank, "world": world,
           "torch": torch.__version__, "base_bytes": base, "max_memory_allocated_per_iteration": peaks,
           "params": sum(p.numel() for p in model.parameters()), "iterations": windows}
    docs = [None] * world
    torch.distributed.all_gather_object(docs, doc)
    if rank == 0:
        json.dump(docs, sys.stdout, indent=1)
    torch.distributed.destroy_process_group()
    return 0


def read(paths: list[str]) -> int:
    gib = 2.0 ** 30
    for path in paths:
        try:
            docs = json.loads(open(path).read())
            if not docs:
                raise ValueError("no rank's document")
            for d in docs:
                print(f"== {path}: {d['preset']} {d['mode']} {d['shape']} rank {d['rank']} (params {d['params'] / 1e9:.3f} B, "
                      f"4 B/param = {4 * d['params'] / gib:.2f} GiB; base {d['base_bytes'] / gib:.2f} GiB)")
                for i, (w, p) in enumerate(zip(d["iterations"], d["max_memory_allocated_per_iteration"], strict=True)):
                    print(f"  iteration {i + 1}: peak {p / gib:7.2f} GiB (replayed {w['peak_bytes'] / gib:7.2f}; freed, not yet "
                          f"reusable at it {w['freed_not_reusable_at_peak_bytes'] / gib:.2f}), end {w['end_bytes'] / gib:6.2f}")
                    for where, size in w["alive_by_site"].items():
                        print(f"      {size / gib:7.2f} GiB  {where[:150]}")
        except (OSError, ValueError, TypeError, KeyError) as exc:
            print(f"{path}: not a timeline document of this study ({type(exc).__name__}: {exc})", file=sys.stderr)
            return 1
    return 0


def peaks(bundles: list[str]) -> int:
    """Each DDP / cp run of the bundles: the job's peak (first steps included) and the timed steps' peak against the
    model's `allocated` (with DDP's bucket-rebuild copy) and `steady_allocated` (without), on today's model."""
    from pathlib import Path

    from simcluster.hardware.gpu import load_gpu
    from simcluster.heldout.eager import H200, ROOT, model_of, pct
    from simcluster.heldout.eager_regimes import layout_of, regime_framework
    from simcluster.heldout.eager_runs import regime_documents
    from simcluster.llm.memory import GiB, stage_memories
    from simcluster.llm.spec import BatchSpec
    from simcluster.runner.llm_decoder import PRESETS

    gpu, _ = load_gpu(ROOT / H200)
    print(f"{'run':42} {'job peak':>9} {'timed':>7} | {'allocated':>9} {'steady':>7} | job vs alloc, timed vs steady")
    printed = 0
    for bundle in bundles:
        if not (Path(bundle) / "runs").is_dir():
            print(f"{bundle}: no runs/ folder (not an eager set, or runs.tgz not unpacked)", file=sys.stderr)
            return 1
        docs, _ = regime_documents(Path(bundle))
        for doc in docs:
            try:
                if doc.get("mode") not in ("ddp", "cp") or doc["model"].get("preset") in (None, "tiny"):
                    continue
                shape = doc["shapes"][0]
                if shape.get("status") != "ok" or "max_memory_allocated_timed_bytes" not in shape:
                    continue
                par, _, m = layout_of(doc["mode"])
                model = model_of({"model": PRESETS[doc["model"]["preset"]]}, shape["seq"])
                fw, _ = regime_framework(doc["mode"], "h200")
                mem = stage_memories(model, par, BatchSpec(shape["micro_batch"] * m * par.dp, shape["micro_batch"]),
                                     gpu.hbm_capacity_bytes, fw)[0]
                job, timed = shape["max_memory_allocated_bytes"] / GiB, shape["max_memory_allocated_timed_bytes"] / GiB
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                print(f"{bundle}: a run document without what --peaks reads ({type(exc).__name__}: {exc})", file=sys.stderr)
                return 1
            alloc, steady = mem.allocated / GiB, mem.steady_allocated / GiB
            name = f"{Path(bundle).name[7:30]} {doc['mode']} {doc['model']['preset']} {shape['seq']}:{shape['micro_batch']}"
            print(f"{name:42} {job:9.2f} {timed:7.2f} | {alloc:9.2f} {steady:7.2f} | {pct(alloc, job):+6.1f}% {pct(steady, timed):+6.1f}%")
            printed += 1
    if not printed:
        print(f"{', '.join(bundles)}: no DDP or cp run with a timed peak", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    from simcluster.script_args import ArgumentParser

    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--read", nargs="+", metavar="JSON", help="print the table of documents written by the device run")
    ap.add_argument("--peaks", nargs="+", metavar="BUNDLE", help="job and timed peaks of the bundles' DDP / cp runs vs the model")
    ap.add_argument("--preset", default="3b")
    ap.add_argument("--mode", choices=("ddp", "cp"), default="ddp")
    ap.add_argument("--shape", default="2048:3", help="SEQ:MICRO_BATCH")
    ap.add_argument("--iterations", type=int, default=3)
    args = ap.parse_args(argv)
    return read(args.read) if args.read else peaks(args.peaks) if args.peaks else device(args)


if __name__ == "__main__":
    sys.exit(main())
