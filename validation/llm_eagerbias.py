"""The eager step's one-sided residue on one GPU (issue 44, session 35, engineer eagerbias; not a test): every 1-GPU eager
llm-step run read with today's model, step and allocated peak, error = predicted / measured - 1 (negative: predicted fast
or low), mean |error| per set and checkpointing mode. All rows are development data (already read).

    python validation/llm_eagerbias.py --develop
    python validation/llm_eagerbias.py --traces     # eager5 / lease2's profiled steps: kernel time by class, measured
                                                    # against the model's op list (GEMM, attention, memory-bound, loss, optimizer)

Rows: the sac set's none / full / every:2 / op (op since mendC, session 35), ac6a, ac6b and eager7 (since engineer gemm, session 35)
(validation/llm_sac.predict: the ckpt-host fits), eager5 and its lease2, and the compile set's eager arm
(validation/llm_compile2.predict: the diagnostic's host fits),
each predicted as its own registration was. 'Before' (the model before llm/autocast_block.py) is the same script run in
the base commit's tree:

    git archive 0a83b8a | tar -x -C /tmp/base && cp validation/llm_eagerbias.py /tmp/base/validation/ \\
      && python /tmp/base/validation/llm_eagerbias.py --develop
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llm_compile2  # noqa: E402  (the eager5 / compile sets' prediction)
import llm_sac  # noqa: E402  (the sac / ac6 sets' prediction)

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.heldout.eager import model_of  # noqa: E402
from simcluster.llm import compiled, eager, ops, vocab_ops  # noqa: E402
from simcluster.llm.param_counts import stage_params  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec  # noqa: E402
from simcluster.runner.llm_decoder import PRESETS  # noqa: E402
from simcluster.script_args import check  # noqa: E402
from simcluster.strict import load_json  # noqa: E402

ROOT = llm_sac.ROOT
CAL = ROOT / "calibration"
CKPT_SETS = ("sac", "ac6a", "ac6b", "eager7")
MODES = ("none", "full", "every:2", "op")   # op: sac only (ac6a / ac6b / eager7 ran no op mode)
EAGER_SETS = ("eager5", "eager5-lease2")
GiB = 2.0**30


def _shape(path: Path) -> dict:
    return eager.read_document(path)["shapes"][0]


def rows() -> list[dict]:
    """set, run, mode, predicted and measured step (s) and peak (bytes) of every row."""
    out = []
    for name in CKPT_SETS:
        folder = CAL / f"h200x1-llm-{name}-2026-11-29"
        for reg in load_json(folder / "registered.json", what="registered predictions")["runs"]:
            if reg["ac_mode"] not in MODES:
                continue
            shape = _shape(folder / "runs" / f"{reg['run']}.json")
            step, mem = llm_sac.predict(reg["preset"], reg["seq"], reg["micro_batch"], reg["ac_mode"])
            out.append({"set": name, "run": reg["run"], "mode": reg["ac_mode"], "pred_s": step, "pred_b": mem,
                        "meas_s": shape["median_step_s"], "meas_b": shape["max_memory_allocated_bytes"]})
    hosts, gpu = llm_compile2.host_fits(), load_gpu(llm_compile2.CARD)[0]
    plain = [(name, CAL / f"h200x1-llm-{name}-2026-11-29" / "runs" / f"{r['run']}.json", r)
             for name in EAGER_SETS
             for r in load_json(CAL / f"h200x1-llm-{name}-2026-11-29" / "registered.json", what="registered")["runs"]]
    for path in sorted((CAL / "h200x1-llm-compile-2026-11-29/check").glob("*/llm-step/*-single/stdout.txt")):
        doc = eager.read_document(path)
        plain.append(("compile-eager", path, {"run": path.parent.name, "preset": doc["model"]["preset"], "layers": None}))
    for name, path, r in plain:
        shape = _shape(path)
        step, mem = llm_compile2.predict("eager", r["preset"], r["layers"], shape["seq"], shape["micro_batch"], hosts, gpu)
        out.append({"set": name, "run": r["run"], "mode": "none", "pred_s": step, "pred_b": mem,
                    "meas_s": shape["median_step_s"], "meas_b": shape["max_memory_allocated_bytes"]})
    return out


def develop() -> int:
    table = rows()
    print("error = predicted / measured - 1 (negative: predicted fast / low)")
    groups: dict[tuple, list] = {}
    for r in table:
        es, em = r["pred_s"] / r["meas_s"] - 1, r["pred_b"] / r["meas_b"] - 1
        groups.setdefault((r["set"], r["mode"]), []).append((es, em))
        groups.setdefault(("all", r["mode"]), []).append((es, em))
        print(f"{r['set']:14s} {r['run']:22s} {r['mode']:8s} step {1e3 * r['meas_s']:7.1f} / {1e3 * r['pred_s']:7.1f} ms "
              f"{100 * es:+6.1f}%  peak {r['meas_b'] / GiB:6.2f} / {r['pred_b'] / GiB:6.2f} GiB {100 * em:+6.1f}%")
    print("mean |error| (mean error) per set and mode")
    for (name, mode), errs in groups.items():
        s, m = [e[0] for e in errs], [e[1] for e in errs]
        print(f"  {name:14s} {mode:8s} n {len(errs):2d}  step {100 * statistics.mean(map(abs, s)):5.1f}% "
              f"({100 * statistics.mean(s):+5.1f}%)  memory {100 * statistics.mean(map(abs, m)):5.1f}% "
              f"({100 * statistics.mean(m):+5.1f}%)")
    return 0


CLASSES = ("gemm", "attention", "memory", "loss", "optimizer")


def kernel_class(name: str) -> str:
    """A torch.profiler kernel's class by its name (cuBLAS / cuDNN / optimizer / loss kernels; the rest memory-bound)."""
    if "nvjet" in name or "splitKreduce" in name or "gemm" in name.lower() or "cutlass" in name:
        return "gemm"
    if "sdpa" in name or "cudnn" in name or "fmha" in name or "flash" in name:
        return "attention"
    if "multi_tensor_apply" in name:
        return "optimizer"
    return "loss" if "SoftMax" in name or "nll_loss" in name else "memory"


def model_classes(preset: str, seq: int, mb: int, gpu) -> dict[str, float]:
    """The model's GPU seconds of one step by class: the layers, embedding, head and loss (its softmax kernels as
    'loss'), the weight casts and up-casts (memory) and AdamW (optimizer)."""
    model, par, batch = model_of({"model": PRESETS[preset]}, seq), ParallelSpec(), BatchSpec(mb, mb)
    fw = eager.torch_framework(par)
    out = dict.fromkeys(CLASSES, 0.0)
    fwd, bwd = compiled.layer_ops(model, par, batch, fw)
    ends = [f(model, par, batch, fw) for f in (vocab_ops.embedding_forward, vocab_ops.embedding_backward,
                                                vocab_ops.head_forward, vocab_ops.head_backward)]
    for op_list, times in ((fwd + bwd, model.layers), *((e, 1) for e in ends)):
        for o in op_list:
            cls = "loss" if o.name.startswith("cross_entropy") else o.kind if o.kind in ("gemm", "attention") else "memory"
            out[cls] += times * ops.op_time_s(gpu, o, "bf16")
    p = stage_params(model, par, 0).total
    out["optimizer"] = gpu.memory_time_s(fw.adam_bytes * p)
    out["memory"] += gpu.memory_time_s(fw.cast_bytes / 2 * p) + gpu.upcast_time_s(fw.cast_bytes / 2 * p)
    return out


def traces() -> int:
    gpu = load_gpu(llm_compile2.CARD)[0]
    print("kernel time per class, measured / modelled ms (measured / modelled - 1)")
    for path in sorted(CAL.glob("h200x1-llm-eager5*/traces/*.json.gz")):
        preset, seq, mb = re.search(r"eager-([\d.]+b)-(\d+)x(\d+)-", path.name).groups()
        events = json.load(gzip.open(path))["traceEvents"]
        meas = dict.fromkeys(CLASSES, 0.0)
        for e in events:
            if e.get("cat") == "kernel":
                meas[kernel_class(e["name"])] += e["dur"] * 1e-6
        mod = model_classes(preset, int(seq), int(mb), gpu)
        cells = "  ".join(f"{k} {1e3 * meas[k]:6.1f}/{1e3 * mod[k]:6.1f} ({100 * (meas[k] / mod[k] - 1):+5.1f}%)" for k in CLASSES)
        print(f"{path.parent.parent.name[11:]:19s} {preset:5s} {seq}:{mb:2s} {cells}  total {1e3 * sum(meas.values()):6.1f}/"
              f"{1e3 * sum(mod.values()):6.1f} ({100 * (sum(meas.values()) / sum(mod.values()) - 1):+5.1f}%)")
    return 0


if __name__ == "__main__":
    modes = {"--develop": develop, "--traces": traces}
    check(options=tuple(modes), usage="--develop | --traces")
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        print("llm_eagerbias: expected --develop or --traces", file=sys.stderr)
        sys.exit(2)
    sys.exit(modes[sys.argv[1]]())
