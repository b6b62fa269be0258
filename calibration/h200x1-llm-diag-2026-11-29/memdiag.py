"""Development diagnostic (issue 44, not registered): what is alive at the allocated peak of one llm-step shape, eager
or compiled (torch.compile per decoder layer, as llm-step --compile). Device-side; writes one small JSON document.

    python3 calibration/h200x1-llm-diag-2026-11-29/memdiag.py --preset 1b --shape 2048:2 [--compile] > mem-1b-compile.json

The model, optimizer and per-block compile are the runner's own (simcluster.runner.llm_step.build, since session 55 in llm_decoder.py,
llm_compile.compile_layers), amp precision, fused AdamW. Warm-up steps (the first compiles), then two recorded steps:
 - `markers` step: torch.cuda.memory_allocated at step start, before / after every block's forward, at forward end (loss),
   after backward, after the optimizer, after zero_grad; max_memory_allocated of the forward and of the backward apart;
   the saved tensors of blocks 0 and L/2 (their autograd nodes walked from the block output back to the block input:
   eager `_saved_*` attributes, the compiled block's CompiledFunctionBackward.saved_tensors), each classed as parameter,
   bf16 weight copy (bf16 and a weight's shape), block input, rotary table or activation, with its storage bytes.
 - `history` step: torch.cuda.memory._record_memory_history (python stacks, alloc context) over one step, the trace
   replayed from the allocator state before the step: the allocated peak, its place in the trace, and what is alive
   there (before-step blocks named from parameters and optimizer states; the others by their allocating frames, the
   compiled wrapper's source line included), grouped and the largest 40 listed.
"""

from __future__ import annotations

import argparse
import json
import linecache
import sys
import time

from simcluster.runner import llm_ac
from simcluster.runner.llm_step import PRESETS, build, param_count, parse_shapes

MIB = 2 ** 20


def storage_key(t) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def saved_tensors(torch, out, stop, params: dict, shapes: set, named: dict, tokens: int) -> dict:
    """The autograd graph between a block's output and its input (`stop`: the input's grad_fn), every saved tensor
    once (by storage), classed (bf16 with a weight's shape and no `tokens` dimension: a weight copy); metadata only."""
    seen, rows, errors, todo, nodes = set(), [], [], [out.grad_fn], set()
    while todo:
        node = todo.pop()
        if node is None or node is stop or id(node) in nodes:
            continue
        nodes.add(id(node))
        name = type(node).__name__
        found = []
        try:
            if hasattr(node, "saved_tensors") and not name.startswith("AccumulateGrad"):
                found += [("saved_tensors", t) for t in node.saved_tensors]
        except Exception as exc:  # noqa: BLE001 - a node whose saved tensors cannot be read is reported
            errors.append(f"{name}.saved_tensors: {type(exc).__name__}: {str(exc)[:120]}")
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                val = getattr(node, attr)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{name}.{attr}: {type(exc).__name__}")
                continue
            for v in (val if isinstance(val, (tuple, list)) else (val,)):
                if isinstance(v, torch.Tensor):
                    found.append((attr, v))
        for attr, t in found:
            if not isinstance(t, torch.Tensor):
                continue
            key = storage_key(t)
            if key in seen:
                continue
            seen.add(key)
            shape = tuple(t.shape)
            if key[0] in params:
                kind = "parameter"
            elif key[0] in named:
                kind = named[key[0]]
            elif t.dtype == torch.bfloat16 and tokens not in shape and (shape in shapes or shape[::-1] in shapes):
                kind = "bf16 weight copy"
            else:
                kind = "activation"
            rows.append({"node": name, "attr": attr, "shape": list(shape), "dtype": str(t.dtype).replace("torch.", ""),
                         "storage_bytes": key[1], "kind": kind, "param": params.get(key[0])})
        todo.extend(fn for fn, _ in node.next_functions if fn is not None)
    by_kind = {}
    for r in rows:
        by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + r["storage_bytes"]
    return {"nodes": len(nodes), "tensors": rows, "bytes_by_kind": by_kind, "errors": errors[:20]}


def frame_label(frames: list[dict], size: int, sizes: dict) -> str:
    """What an allocation is: the innermost frame in the runner's model code, the compiled wrapper (torchinductor output
    code) or this script, with its source line; else the innermost python frame; with no python frame (the autograd
    engine's C++ backward) its size, and the parameter class whose fp32 size it matches (a gradient, likely)."""
    # llm_decoder.py: the model's forward (build) since session 55 house55 moved it out of llm_step.py (mendB55, cold review B55 item 8)
    pick = [f for f in frames if any(k in f.get("filename", "") for k in ("llm_step.py", "llm_decoder.py", "torchinductor", "memdiag.py"))]
    f = (pick or frames or [{}])[0]
    if not f:
        return f"(no python frame: C++ / autograd engine) {size / MIB:.2f} MiB" + (f", the size of {sizes[size]}" if size in sizes else "")
    text = f"{f.get('filename', '?').rsplit('/', 1)[-1]}:{f.get('line')} {f.get('name')}"
    return text + " | " + linecache.getline(f.get("filename", ""), f.get("line") or 0).strip()[:140]


def replay(snap0: dict, snap1: dict, device: int, labels: dict, sizes: dict) -> dict:
    """Allocator trace of the recorded step, replayed from the blocks alive before it (snap0): the peak and what is alive
    there."""
    alive = {}
    for seg in snap0["segments"]:
        addr = seg["address"]
        for blk in seg["blocks"]:
            if blk["state"] == "active_allocated":
                alive[addr] = (blk["size"], labels.get(addr, "before the step: other"))
            addr += blk["size"]
    # a block is freed at free_requested (when memory_allocated drops); free_completed (its stream uses done) is ignored
    trace = [e for e in snap1["device_traces"][device] if e["action"] in ("alloc", "free_requested")]
    start = cur = sum(s for s, _ in alive.values())
    peak, peak_at, state = cur, -1, dict(alive)
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            state[e["addr"]] = (e["size"], None)
            cur += e["size"]
        elif e["addr"] in state:
            cur -= state.pop(e["addr"])[0]
        if cur > peak:
            peak, peak_at = cur, i
    state = dict(alive)
    for e in trace[: peak_at + 1]:
        if e["action"] == "alloc":
            state[e["addr"]] = (e["size"], frame_label(e.get("frames", []), e["size"], sizes))
        elif e["addr"] in state:
            state.pop(e["addr"])
    groups = {}
    for size, label in state.values():
        g = groups.setdefault(label, [0, 0])
        g[0] += 1
        g[1] += size
    top = sorted(state.values(), key=lambda v: -v[0])[:40]
    at = trace[peak_at] if peak_at >= 0 else {}
    return {"start_bytes": start, "peak_bytes": peak, "peak_entry": peak_at, "entries": len(trace),
            "peak_made_by": frame_label(at.get("frames", []), at.get("size", 0), sizes) if at else "before the step",
            "end_bytes": cur, "alive_at_peak_bytes": sum(s for s, _ in state.values()),
            "groups": sorted(({"what": k, "count": c, "bytes": b} for k, (c, b) in groups.items()), key=lambda g: -g["bytes"])[:60],
            "largest": [{"bytes": s, "what": lab} for s, lab in top]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), required=True)
    ap.add_argument("--shape", default="2048:2", help="SEQ:MICRO_BATCH")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args(argv)
    (seq, micro), = parse_shapes(args.shape)
    import torch

    cfg = dict(PRESETS[args.preset])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cuda = device.type == "cuda"
    torch.manual_seed(0)
    with torch.device(device):
        model = build(torch, cfg, rope=True)
    if args.compile:
        from simcluster.runner import llm_compile

        llm_compile.compile_layers(torch, model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=cuda or None)
    gen = torch.Generator(device="cpu").manual_seed(0)
    tokens = torch.randint(0, cfg["vocab"], (micro, seq + 1), generator=gen).to(device)
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    mem = (lambda: torch.cuda.memory_allocated(device)) if cuda else (lambda: 0)
    peak = (lambda: torch.cuda.max_memory_allocated(device)) if cuda else (lambda: 0)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    params = {p.untyped_storage().data_ptr(): n for n, p in model.named_parameters()}
    shapes = {tuple(p.shape) for n, p in model.named_parameters() if n.startswith("layers.") and p.dim() == 2}
    probe = {"on": False, "blocks": [], "saved": {}}
    walk = {0, cfg["layers"] // 2}

    def run_layers(layers, x, cos, sin):
        named = {}
        if cos is not None:
            named = {cos.untyped_storage().data_ptr(): "rotary table", sin.untyped_storage().data_ptr(): "rotary table"}
        for i, layer in enumerate(layers):
            before = mem()
            y = llm_ac.run_block(torch, layer, i, "none", x, cos, sin)
            if probe["on"]:
                probe["blocks"].append([before, mem()])
                if i in walk:
                    names = {**named, x.untyped_storage().data_ptr(): "block input"}
                    probe["saved"][str(i)] = saved_tensors(torch, y, x.grad_fn, params, shapes, names, seq * micro)
            x = y
        return x

    model.run_layers = run_layers

    def step(marks: dict | None = None):
        mark = (lambda k: marks.__setitem__(k, mem())) if marks is not None else (lambda k: None)
        if marks is not None and cuda:
            torch.cuda.reset_peak_memory_stats(device)
        mark("step_start")
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = model(inputs, labels)
        mark("forward_end")
        if marks is not None:
            marks["forward_peak"] = peak()
            if cuda:
                torch.cuda.reset_peak_memory_stats(device)
        loss.backward()
        mark("backward_end")
        if marks is not None:
            marks["backward_peak"] = peak()
        opt.step()
        mark("optimizer_end")
        opt.zero_grad(set_to_none=True)
        mark("zero_grad_end")
        sync()
        return loss

    t0 = time.perf_counter()
    warm = []
    for _ in range(args.warmup):
        t = time.perf_counter()
        step()
        sync()
        warm.append(time.perf_counter() - t)
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    marks = {}
    probe["on"] = True
    step(marks)
    probe["on"] = False
    doc = {"tool": "memdiag", "preset": args.preset, "seq": seq, "micro_batch": micro, "compile": args.compile,
           "torch": torch.__version__, "model": {**cfg, "params": param_count(**cfg)}, "warmup_step_s": warm,
           "markers_bytes": marks,
           "block_forward_delta_bytes": [b - a for a, b in probe["blocks"]],
           "saved": probe["saved"]}
    if cuda:
        labels_ = {}
        for n, p in model.named_parameters():
            what = "embedding / head weight" if n.startswith(("embed", "head")) else "norm weight" if "norm" in n else "layer weight"
            labels_[p.untyped_storage().data_ptr()] = f"before the step: parameter, {what} ({p.dtype})".replace("torch.", "")
        for st in opt.state.values():
            for k, v in st.items():
                if isinstance(v, torch.Tensor) and v.is_cuda:
                    labels_.setdefault(v.untyped_storage().data_ptr(), f"before the step: optimizer {k}")
        torch.cuda.reset_peak_memory_stats(device)
        snap0 = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(max_entries=400000, context="alloc", stacks="python")
        step()
        snap1 = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        sizes = {}
        for n, p in model.named_parameters():   # fp32 bytes rounded up to the allocator's 512
            what = "embedding / head weight" if n.startswith(("embed", "head")) else "norm weight" if "norm" in n else n.rsplit(".", 2)[-2] + " weight"
            sizes.setdefault(-(-p.numel() * p.element_size() // 512) * 512, f"a parameter ({what}, fp32)")
        doc["history"] = replay(snap0, snap1, device.index or 0, labels_, sizes)
        doc["max_memory_allocated_bytes"] = peak()
    doc["wall_s"] = time.perf_counter() - t0
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
