"""Where the 2-GPU eager modes' systematic error sits, per kernel class (issue 44, session 37; a diagnostic, not a test).

Reads the profiled steps of calibration/h200x2-llm-eager-noise-2026-11-29/profiled (one torch.profiler step per rank
as a Chrome trace: DDP, FSDP2, PP 2 1F1B x 4 on 3b 2048:3, cp on 1b 32768:1, and the 1-GPU 3b 2048:3 step) and the
model's prediction of the same step (heldout/eager_regimes.regime_predict; its op lists and stage work, llm/work.build_work).

Measured, per rank, over the step's kernels (first kernel start to last kernel end = the step's GPU span):
  class sums     kernels classed by name: GEMM (nvjet, cutlass, gemm), attention (cuDNN / flash SDPA), optimizer
                 (the fused AdamW), copies (memcpy: DDP's bucket copy-out; a tensor times a scalar: DDP's copy-in with
                 its division, reducer.cpp's mul_out; FSDP2's foreach copy-in, split_with_sizes copy-out and chunk_cat
                 reduce-scatter input), NCCL, and memory-bound elementwise (the rest)
  exposed NCCL   the time an NCCL kernel runs while no compute kernel does (interval union arithmetic)
  NCCL beside    the time an NCCL kernel runs beside a compute kernel (the NCCL kernel's residency, waits included)
  loss           what GEMM and attention kernels lose while an NCCL kernel runs: each one overlapping NCCL against the
                 same launch in the 1-GPU step of the same shape (DDP, FSDP2: the n-th launch of a kernel name is the
                 n-th there), and the drift of the launches away from NCCL (the two steps' other differences)
  idle           the span's time with no kernel at all (host-bound gaps, pipeline waits)
Model: the same classes from the op lists of the rank's stage (llm/compiled.layer_ops: per CP rank for cp), the
weight casts and up-casts (memory), the fused AdamW (optimizer), DDP's bucket copies (copies), and the breakdown's
exposed terms. A kernel class's step time differs from its kernel sum wherever kernels overlap (NCCL).
    python studies/eager_mode_classes.py [PROFILED_DIR]
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from llm_step_profile import kernel_class  # noqa: E402 (the 1-GPU profile study's GEMM / attention / optimizer split)

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.traces.torch_profiler import complete_events, length, union  # noqa: E402
from simcluster.traces.torch_profiler import intersection as overlap  # noqa: E402

PROFILED = ROOT / "calibration" / "h200x2-llm-eager-noise-2026-11-29" / "profiled"
CLASSES = ("gemm", "attention", "memory", "optimizer", "copies", "nccl")
COMPUTE = CLASSES[:-1]
# (trace stem, regime mode, preset, micro-batch, micro-batches, seq, ranks)
STEPS = (("single-3b-2048x3", "single", "3b", 3, 1, 2048, 1), ("ddp-3b-2048x3", "ddp", "3b", 3, 1, 2048, 2),
         ("fsdp-3b-2048x3", "fsdp", "3b", 3, 1, 2048, 2), ("pp-1f1b-3b-2048x3", "pp-1f1b", "3b", 3, 4, 2048, 2),
         ("cp-1b-32768x1", "cp", "1b", 1, 1, 32768, 2))


def classify(name: str) -> str:
    """A kernel's class by its name: NCCL and the data-parallel wrappers' copies, then the 1-GPU profile study's GEMM /
    attention / optimizer / memory split (studies/llm_step_profile.kernel_class)."""
    low, base = name.lower(), kernel_class(name)
    if low.startswith("nccl"):
        return "nccl"
    if base != "optimizer" and (low.startswith("memcpy") or any(k in low for k in ("chunk_cat", "split_with_sizes_copy",
                                                                                    "tensorlistmetadata"))
                                or ("aunaryfunctor" in low and "mulfunctor" in low)):
        return "copies"   # DDP's bucket copy-in with its division (mul_out) and copy-out, FSDP2's copy-in / copy-out
    return base


def kernels(trace: dict) -> list[tuple[float, float, str, str]]:
    """(start s, end s, class, name) of every GPU kernel and memcpy of a Chrome trace (memsets left out), by start."""
    out = []
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy"):
            start = float(e["ts"]) * 1e-6
            out.append((start, start + float(e["dur"]) * 1e-6, classify(e["name"]), e["name"]))
    return sorted(out)


def measure(trace: dict) -> dict[str, float]:
    """One rank's step in seconds: span, per-class kernel sums, compute busy, NCCL exposed and beside compute, idle."""
    ks = kernels(trace)
    if not ks:
        raise ValueError("no GPU kernels in the trace")
    out = dict.fromkeys(CLASSES, 0.0)
    for a, b, c, _ in ks:
        out[c] += b - a
    comp = union([(a, b) for a, b, c, _ in ks if c != "nccl"])
    nccl = union([(a, b) for a, b, c, _ in ks if c == "nccl"])
    out["span"] = max(b for _, b, _, _ in ks) - ks[0][0]
    out["busy"] = length(comp)
    out["nccl_exposed"] = length(nccl) - overlap(nccl, comp)
    out["idle"] = out["span"] - length(union([(a, b) for a, b, _, _ in ks]))
    out["nccl_beside"] = length(nccl) - out["nccl_exposed"]
    return out


def matched_loss(trace: dict, reference: dict) -> tuple[float, float, float]:
    """GEMM and attention kernels against the same kernels of a reference step (the 1-GPU step of the same shape):
    the n-th launch of a kernel name here is the n-th there (names whose launch counts differ are left out). Returns
    (seconds of those kernels that overlap an NCCL kernel, what they took over the reference's, what the others took
    over the reference's)."""
    def by_name(ks):
        out: dict[str, list[tuple[float, float]]] = {}
        for a, b, c, key in ks:
            if c in ("gemm", "attention"):
                out.setdefault(key, []).append((a, b))
        return out
    ks = kernels(trace)
    nccl = union([(a, b) for a, b, c, _ in ks if c == "nccl"])
    mine, ref = by_name(ks), by_name(kernels(reference))
    beside = beside_extra = away_extra = 0.0
    for name, spans in mine.items():
        if len(ref.get(name, ())) != len(spans):
            continue
        for (a, b), (ra, rb) in zip(spans, ref[name], strict=True):
            if overlap([(a, b)], nccl) > 0:
                beside += b - a
                beside_extra += (b - a) - (rb - ra)
            else:
                away_extra += (b - a) - (rb - ra)
    return beside, beside_extra, away_extra


def load(path: Path) -> dict:
    """The trace as {"traceEvents": its complete events} (torch_profiler.complete_events: plain or gzipped, object or
    array form; TraceFormatError naming the file otherwise)."""
    return {"traceEvents": complete_events(path)}


def model_classes(mode: str, preset: str, mb: int, m: int, seq: int, rank: int) -> dict[str, float]:
    """The model's GPU seconds per class for one rank's step (its stage's op lists x micro-batches, casts, optimizer,
    DDP's bucket copies), and its exposed terms (regime_predict's breakdown, seconds)."""
    from simcluster.cards import load_collective
    from simcluster.hardware.gpu import load_gpu
    from simcluster.heldout import eager as heldout
    from simcluster.heldout import eager_regimes
    from simcluster.llm import attention_kernels, comm, compiled, host, ops, vocab_ops, work
    from simcluster.llm.param_counts import stage_params
    from simcluster.llm.spec import BatchSpec
    from simcluster.runner.llm_decoder import PRESETS
    from simcluster.runner.llm_pipeline import chunk_layer_ranges

    par, _, _ = eager_regimes.layout_of(mode)
    model = heldout.model_of({"model": PRESETS[preset]}, seq)
    if par.pp > 1:
        par = replace(par, pipeline_layout=tuple(hi - lo for lo, hi in chunk_layer_ranges(model.layers, par.pp)))
    batch = BatchSpec(mb * m * par.dp, mb, "bf16")
    gpu, _ = load_gpu(ROOT / heldout.H200)
    fw, _ = eager_regimes.regime_framework(mode, "h200")
    gpu = attention_kernels.for_kernel(gpu, fw.attention_kernel)   # cp's flash kernel (predict_llm does the same)
    stage = rank if par.pp > 1 else 0
    layers = par.layer_split(model.layers)[stage]
    fwd, bwd = compiled.layer_ops(model, par, batch, fw, cp_rank=rank if par.cp > 1 else 0)
    step_ops = (fwd + bwd) * layers
    if stage == 0:
        step_ops += vocab_ops.embedding_forward(model, par, batch, fw) + vocab_ops.embedding_backward(model, par, batch, fw)
    if stage == par.pp - 1:
        step_ops += vocab_ops.head_forward(model, par, batch, fw) + vocab_ops.head_backward(model, par, batch, fw)
    out = dict.fromkeys(CLASSES, 0.0)
    for op in step_ops:
        kind = op.kind if op.kind in ("gemm", "attention") else "memory"
        out[kind] += m * ops.op_time_s(gpu, op, "bf16")
    params = stage_params(model, par, stage)
    if fw.cast_bytes:   # forward weight casts and backward up-casts (once per step under pipelining's one autocast)
        kernels_ = host.weight_matrices(model, fw) * layers + 1
        each = fw.cast_bytes / 2 * params.total / kernels_
        out["memory"] += (1 if par.pp > 1 else m) * kernels_ * (gpu.memory_time_s(each) + gpu.upcast_time_s(each))
    updated = params.total / (par.dp * par.cp if par.zero >= 1 else 1)
    out["optimizer"] = gpu.memory_time_s(fw.adam_bytes * updated)
    out["copies"] = gpu.memory_time_s(fw.grad_scale_bytes * params.total)   # pipelining's division of the gradients
    # the data-parallel collectives alone (C) and beside the compute (C / r; the compute loses s C / r: overlap.beside)
    net = comm.Network(load_collective(ROOT / heldout.CARDS[("nvlink", 2)])[0], par.gpus)
    g = comm.groups(par, net)
    last_s = 0.0
    if par.zero == 3:   # per layer: an all_gather forward, again backward, a reduce_scatter backward
        per = params.dense / layers
        out["nccl_alone"] = layers * (2 * comm.collective_s(net, g.dense_grad, "all_gather", per * fw.param_bytes)
                                      + comm.collective_s(net, g.dense_grad, "reduce_scatter", per * fw.grad_bytes))
    elif fw.ddp_bucket_bytes > 0 and par.dp * par.cp > 1:   # torch DDP: its buckets, the last alone after the backward
        sizes = comm.ddp_bucket_bytes(model, par, params.dense, layers, stage == 0, stage == par.pp - 1, fw.bucket_params)
        times = [comm.collective_s(net, g.dense_grad, "all_reduce", b) for b in sizes]
        out["nccl_alone"], last_s = sum(times), times[-1]
        out["copies"] += work.ddp_bucket_copies_s(gpu, par, fw, params, sizes[-1] / comm.GRAD_BYTES, last_s)
    if fw.comm_interference and gpu.overlap_compute_slowdown > 0:
        out["nccl_beside"] = (out.get("nccl_alone", 0.0) - last_s) / gpu.overlap_comm_rate
        out["beside_loss"] = gpu.overlap_compute_slowdown * out["nccl_beside"]
    pred = eager_regimes.regime_predict(preset, mb, mode, "h200", microbatches=m if m > 1 else None, seq=seq)
    out["step"] = pred["step_ms"] * 1e-3
    out.update({k: v * 1e-3 for k, v in pred["breakdown_ms"].items()})
    return out


def rows(folder: Path) -> list[tuple[str, int, dict, dict]]:
    """(label, rank, measured, model) per profiled trace present in `folder`; measured has the GEMM / attention kernels'
    time beside NCCL and their loss against the 1-GPU step of the same shape where the folder has it."""
    out = []
    single = folder / "single-3b-2048x3-rank0.json.gz"
    reference = load(single) if single.exists() else None
    for stem, mode, preset, mb, m, seq, ranks in STEPS:
        for rank in range(ranks):
            path = folder / f"{stem}-rank{rank}.json.gz"
            if not path.exists():
                print(f"{path}: missing, skipped", file=sys.stderr)
                continue
            trace = load(path)
            meas = measure(trace)
            if reference is not None and mode in ("ddp", "fsdp") and (preset, seq, mb) == ("3b", 2048, 3):
                meas["beside_kernels"], meas["beside_loss"], meas["away_loss"] = matched_loss(trace, reference)
            out.append((f"{mode} {preset} {seq}:{mb}" + (f" x{m}" if m > 1 else ""), rank, meas,
                        model_classes(mode, preset, mb, m, seq, rank)))
    return out


def ms(d: dict, key: str, width: int = 7) -> str:
    return f"{d[key] * 1e3:{width}.1f}" if key in d else f"{'-':>{width}}"


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else PROFILED
    if not folder.is_dir():
        print(f"{folder}: not a folder of profiled traces", file=sys.stderr)
        return 1
    try:
        table = rows(folder)
    except SimclusterError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    if not table:
        print(f"{folder}: none of the profiled traces this study reads (STEPS) is there", file=sys.stderr)
        return 1
    print("Per kernel class, GPU ms of one profiled step per rank: measured (torch.profiler) / model (H200 interleaved")
    print("card, regime_predict's framework); kernel sums, so NCCL (measured only) overlaps the compute classes")
    print(f"{'step':22} {'r':>1} " + " ".join(f"{c:>15}" for c in COMPUTE) + f" {'nccl':>7} {'compute sum':>15}")
    for label, rank, meas, mod in table:
        cells = [f"{meas[c] * 1e3:7.1f}/{mod[c] * 1e3:7.1f}" for c in COMPUTE]
        comp = (sum(meas[c] for c in COMPUTE), sum(mod[c] for c in COMPUTE))
        print(f"{label:22} {rank:>1} " + " ".join(f"{x:>15}" for x in cells) + f" {meas['nccl'] * 1e3:7.1f} "
              f"{comp[0] * 1e3:7.1f}/{comp[1] * 1e3:7.1f}")
    print("\nNCCL and the step (ms). Measured: span (first kernel to last), compute busy (union of non-NCCL kernels), NCCL")
    print("exposed (no compute kernel beside it) and beside compute, idle (no kernel); GEMM + attention kernels beside NCCL,")
    print("their loss against the same launches of the 1-GPU 3b 2048:3 step, and the other launches' drift from it.")
    print("Model: C (the data-parallel collectives alone), C / r (those beside compute: DDP's last bucket runs alone after")
    print("the backward), s C / r (compute lost), the breakdown.")
    print(f"{'step':22} {'r':>1} {'span':>7} {'busy':>7} {'n.exp':>7} {'n.bes':>7} {'idle':>7} {'k.bes':>7} {'loss':>7} "
          f"{'drift':>7} | {'C':>6} {'C/r':>6} {'sC/r':>6} {'step':>7} {'compute':>7} {'dp':>6} {'pp':>5} {'bubble':>6} "
          f"{'other':>6} {'strag':>6}")
    for label, rank, meas, mod in table:
        print(f"{label:22} {rank:>1} {ms(meas, 'span')} {ms(meas, 'busy')} {ms(meas, 'nccl_exposed')} "
              f"{ms(meas, 'nccl_beside')} {ms(meas, 'idle')} {ms(meas, 'beside_kernels')} {ms(meas, 'beside_loss')} "
              f"{ms(meas, 'away_loss')} | {ms(mod, 'nccl_alone', 6)} {ms(mod, 'nccl_beside', 6)} {ms(mod, 'beside_loss', 6)} "
              f"{ms(mod, 'step')} {ms(mod, 'compute')} {ms(mod, 'exposed_dp_comm', 6)} {ms(mod, 'exposed_pp_comm', 5)} "
              f"{ms(mod, 'pipeline_bubble', 6)} {ms(mod, 'other', 6)} {ms(mod, 'stragglers', 6)}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=1, usage="[FOLDER]")
    sys.exit(main(sys.argv[1:]))
