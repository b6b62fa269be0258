"""Issue 44, session 57 (development, NOT registered): where the Hugging Face Llama's peak allocated memory goes, on
one GPU, in the three variants hfdev55 measured (eager = fp32 weights under bf16 autocast, fsdp1 = accelerate's FSDP1
at world size 1, zero3 = DeepSpeed ZeRO-3 with the engine's bf16). hfdev55 measured the peaks 38-57% above the model's
at its 1.1B mb4 point; this set says which tensors they are, so that llm/memory.py can count them. Its rows are
hfdev55's own shapes and points (the development set); nothing here is a held-out check.

The model, wrappers and DeepSpeed engine are studies/hfdev55_device.py's (imported, unchanged). Per configuration, after
`--warmup` steps:
  phases   one step with torch.cuda.reset_peak_memory_stats before the forward, the backward and the optimizer step:
           each phase's peak and the allocated bytes after it (the phase with the largest peak is where the step peaks)
  peak     one step under torch.cuda.memory._record_memory_history(stacks='python'): the allocated bytes before the
           step (parameters, optimizer state, anything held across steps), then the allocator's trace walked in order
           (alloc +, free_requested -: where the allocated-bytes statistic drops) to its maximum; the blocks live there grouped by the innermost frame in the
           model's file (hfdev55_device.py line and function), else the innermost frame in deepspeed / torch.distributed /
           torch.optim, else 'backward (no python frame)' (the autograd engine's thread); the before-step bytes a
           step frees are their own count
  saved    one forward under torch.autograd.graph.saved_tensors_hooks: every tensor autograd saves, deduplicated by
           storage, attributed to the innermost module running (forward pre / post hooks): for decoder layer 1 and
           for everything outside the decoder layers (embedding, final norm, head, loss) each tensor's module class,
           dtype, shape, bytes and whether it is a parameter; the other layers' bytes summed

    python studies/hfmem57_device.py --device cuda [--variants eager,fsdp1 | zero3] [--sizes ...] [--points ...]
    python studies/hfmem57_device.py --device cpu --quick      (a CPU dry run: saved tensors only, no allocator trace)
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hfdev55_device as dev  # noqa: E402

MODEL_FILE = "hfdev55_device.py"
LIBRARY_MARKS = ("deepspeed", "torch/distributed", "torch/optim", "torch/nn/functional", "torch/amp")
TOP = 40


def _label(frames: list[dict]) -> str:
    """The group of one allocation: its innermost model frame, else its innermost library frame (module docstring). The
    frames' order is read from where this file's own frame (the model's caller) stands against the model's frames."""
    model = [i for i, f in enumerate(frames) if f.get("filename", "").endswith(MODEL_FILE)]
    if model:
        caller = [i for i, f in enumerate(frames) if f.get("filename", "").endswith("hfmem57_device.py")]
        innermost_first = not caller or caller[0] > model[0]
        f = frames[model[0] if innermost_first else model[-1]]
        return f"model L{f['line']} {f['name']}"
    for f in frames:
        name = f.get("filename", "")
        for mark in LIBRARY_MARKS:
            if mark in name:
                return f"{mark} {name.rsplit('/', 1)[-1]}:{f['line']} {f['name']}"
    return "backward (no python frame)" if not frames else f"other {frames[0].get('filename', '?').rsplit('/', 1)[-1]}:{frames[0].get('line')}"


def peak_composition(trace: list[dict], before: int) -> dict:
    """The live blocks at the trace's maximum of allocated bytes, grouped (module docstring)."""
    live, total, best, best_i = {}, before, before, -1
    freed_before = 0
    for i, e in enumerate(trace):
        a = e.get("action")
        if a == "alloc":
            live[e["addr"]] = (e["size"], i)
            total += e["size"]
        elif a == "free_requested":   # the allocator's allocated_bytes drop here (free_completed may follow events)
            if e["addr"] in live:
                total -= live.pop(e["addr"])[0]
            else:
                total -= e["size"]
        else:
            continue
        if total > best:
            best, best_i = total, i
    groups, counts = defaultdict(int), defaultdict(int)
    live = {}
    for e in trace[: best_i + 1]:   # the same walk to the maximum, keeping the entries
        a = e.get("action")
        if a == "alloc":
            live[e["addr"]] = e
        elif a == "free_requested":
            if live.pop(e["addr"], None) is None:
                freed_before += e["size"]
    for e in live.values():
        key = _label(e.get("frames") or [])
        groups[key] += e["size"]
        counts[key] += 1
    top = sorted(groups.items(), key=lambda kv: -kv[1])[:TOP]
    return {"before_step_bytes": before, "freed_of_before_bytes": freed_before, "peak_bytes": best, "peak_index": best_i,
            "trace_entries": len(trace), "groups": [[k, v, counts[k]] for k, v in top],
            "other_groups_bytes": sum(groups.values()) - sum(v for _, v in top)}


def _pop_hook(stack: list):
    """A forward hook that leaves the module's output alone (a hook returning a value would replace it)."""
    def hook(module, args, output) -> None:
        stack.pop()
    return hook


def saved_tensors(torch, model, run_forward, layer_cls) -> dict:
    """Autograd's saved tensors of one forward, per module class and dtype (module docstring)."""
    stack, seen, detail, per_layers = [], set(), [], [0]
    names = {}
    layer_index = {}
    for mod in model.modules():
        names[id(mod)] = type(mod).__name__
        if isinstance(mod, layer_cls):
            layer_index[id(mod)] = len(layer_index)
    hooks = []
    for mod in model.modules():
        hooks.append(mod.register_forward_pre_hook(lambda m, a: stack.append(m)))
        hooks.append(mod.register_forward_hook(_pop_hook(stack)))   # returns None: the output stays the module's

    def where() -> str:
        layer = next((layer_index[id(m)] for m in reversed(stack) if id(m) in layer_index), None)
        inner = names.get(id(stack[-1]), "?") if stack else "top"
        return f"layer1 {inner}" if layer == 1 else ("layers" if layer is not None else f"outside {inner}")

    def pack(t):
        try:
            key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        except Exception:   # a tensor without storage (wrapper subclasses)
            return t
        if key not in seen and key[1] > 0:
            seen.add(key)
            w = where()
            if w == "layers":
                per_layers[0] += key[1]
            else:
                detail.append([w, str(t.dtype).replace("torch.", ""), list(t.shape), key[1], isinstance(t, torch.nn.Parameter)])
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = run_forward()
    finally:
        for h in hooks:
            h.remove()
    return {"loss": loss, "entries": detail, "other_layers_bytes": per_layers[0]}


def measure(torch, device, size: str, shape: tuple, point: str, mb: int, seq: int, variant: str, warmup: int) -> dict:
    layers, hidden, ffn, heads, kv_heads, vocab = shape
    rec = {"size": size, "layers": layers, "hidden": hidden, "ffn": ffn, "heads": heads, "kv_heads": kv_heads, "vocab": vocab,
           "point": point, "micro_batch": mb, "seq": seq, "variant": variant, "tokens": mb * seq}
    gc.collect()   # the previous configuration's model, wrappers and engine are cyclic garbage (FSDP's and DeepSpeed's
    if device.type == "cuda":   # hooks): without a collection they stay allocated into this one's measurement
        torch.cuda.empty_cache()
        rec["start_bytes"] = torch.cuda.memory_allocated()
    torch.manual_seed(0)
    with torch.device(device):
        model, layer_cls = dev.build(torch, *shape)
    rec["params"] = sum(p.numel() for p in model.parameters())
    model, facts = dev.wrap(torch, model, layer_cls, variant, device)
    rec.update(facts)
    cuda = device.type == "cuda"
    engine = opt = None
    if variant == "zero3":
        engine, facts = dev.zero3_engine(torch, model, hidden, mb, cuda)
        rec.update(facts)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=cuda)
    gen = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(0, vocab, (mb, seq), generator=gen).to(device)
    backends = [torch.nn.attention.SDPBackend.FLASH_ATTENTION if cuda else torch.nn.attention.SDPBackend.MATH]

    def forward():
        if variant == "zero3":
            return engine(ids, ids)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            return model(ids, ids)

    def backward(loss):
        engine.backward(loss) if variant == "zero3" else loss.backward()

    def optimizer_step():
        if variant == "zero3":
            engine.step()
        else:
            opt.step()
            opt.zero_grad(set_to_none=True)

    def mark(name: str) -> None:
        if cuda:
            torch.cuda.synchronize()
            rec["phases"][name] = {"peak_bytes": torch.cuda.max_memory_allocated(), "after_bytes": torch.cuda.memory_allocated()}
            torch.cuda.reset_peak_memory_stats()

    with torch.nn.attention.sdpa_kernel(backends):
        for _ in range(warmup):
            loss = forward()
            backward(loss)
            optimizer_step()
        del loss
        rec["phases"] = {}
        if cuda:
            torch.cuda.synchronize()
            rec["before_step_bytes"] = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        loss = forward()
        mark("forward")
        backward(loss)
        mark("backward")
        optimizer_step()
        mark("step")
        del loss
        if cuda:
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            torch.cuda.memory._record_memory_history(enabled="all", context="alloc", stacks="python", max_entries=400_000)
            loss = forward()
            backward(loss)
            optimizer_step()
            del loss
            torch.cuda.synchronize()
            snap = torch.cuda.memory._snapshot()
            torch.cuda.memory._record_memory_history(enabled=None)
            rec["peak"] = peak_composition(snap["device_traces"][0], before)
        try:   # last: a failure here keeps the phases and the peak recorded above
            saved = saved_tensors(torch, model, forward, layer_cls)
            backward(saved.pop("loss"))
            optimizer_step()
            rec["saved"] = saved
        except Exception as exc:
            rec["saved"] = {"status": f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"}
    rec["status"] = "ok"
    return rec


def main(argv: list[str]) -> None:
    opts = dev.parse(argv)
    out = os.fdopen(os.dup(1), "w")   # the JSON document's stream; libraries' prints to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        print(json.dumps({"set": "hfmem57", "status": f"skipped: no torch ({exc})", "records": []}), file=out)
        return
    cuda = opts["device"] == "cuda"
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    for key, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29557"), ("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
        os.environ.setdefault(key, value)
    dist.init_process_group("nccl" if cuda else "gloo", rank=0, world_size=1, **({"device_id": device} if cuda else {}))
    sizes, points = (dev.QUICK_SIZES, dev.QUICK_POINTS) if opts["quick"] else (dev.SIZES, dev.POINTS)
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0) if cuda else "cpu"}
    records = []
    for size in opts["sizes"]:
        for point in opts["points"]:
            mb, seq = points[point]
            for variant in opts["variants"]:
                t0 = time.perf_counter()
                try:
                    rec = measure(torch, device, size, sizes[size], point, mb, seq, variant, opts["warmup"])
                except Exception as exc:   # recorded, the next configuration still runs
                    rec = {"size": size, "point": point, "variant": variant,
                           "status": f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"}
                records.append(rec)
                print(f"{size} {point} {variant}: {rec['status']} peak {rec.get('peak', {}).get('peak_bytes')} "
                      f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
                if cuda:
                    torch.cuda.empty_cache()
    dist.destroy_process_group()
    print(json.dumps({"set": "hfmem57", "env": env, "records": records}), file=out)
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
