"""Where the held-out published LLM misses sit (issue 22; docs/models/llm-findings.md, "Held-out published rows"):
read-only, no model change, not a test.

For every held-out row of `simcluster validate --published llm` (the same prediction: reference/llm.py's reader,
machine and framework), prints
  1. the breakdown of the predicted step (compute, exposed TP / PP / DP communication, pipeline bubble, other =
     optimizer), in % of the step, and the micro-batches per pipeline m = global_batch / (micro_batch dp);
  2. the critical stage's compute split by op class, in % of its compute: GEMM (the layers' linear layers), attention
     core (flash, or the unfused core's GEMMs, softmax and dropout), memory-bound (norms, activations, residual adds,
     rotary), fp8 casts, head (embedding, final norm, LM head GEMM, cross-entropy), and the share that is recompute;
  3. arithmetic bounds, each the row's error if one predicted part were different and nothing else moved (NOT model
     changes, no re-simulation): TP communication hidden (step - TP), no bubble (step - bubble), DP communication
     not overlapped (step + every gradient bucket and parameter gather of the critical stage - the exposed DP part:
     the pre-overlap Megatron-LM and DeepSpeed's pipeline engine reduce after the last backward), pipeline sends
     blocking (step + 2 m v p2p: one send per forward and per backward on the critical path), TP hidden and the
     ZeRO parameter all_gather overlapped (Megatron-Core's --tp-comm-overlap and --overlap-param-gather);
  4. MegaScale's step time against micro-batches per pipeline, step = a m + b (least squares per batch size),
     measured and predicted: b is the per-step cost that does not shrink with m;
  5. sensitivities: the row re-predicted with one input the source does not state set otherwise, or with the fp8
     GEMMs at the H100 card's own held-out residual (gpu-micro's fp8 MLP-up shapes, by K). Labelled as such: none is
     a model change and none is applied to the published files.
    python studies/llm_heldout_breakdown.py [--all | --subset dev]
      --all: every compared row, not only the held-out ones
      --subset dev: only the 13 development rows of the split registered in docs/models/llm-findings.md (the model may
        be changed after looking at them); no held-out row, no held-out mean and no sensitivities are printed
"""

from __future__ import annotations

import copy
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.cards import load_collective  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm import comm, ops, vocab_ops  # noqa: E402
from simcluster.llm.framework import FRAMEWORKS  # noqa: E402
from simcluster.llm.predict import network_for, predict_llm  # noqa: E402
from simcluster.llm.spec import layer_split  # noqa: E402
from simcluster.llm.work import build_work  # noqa: E402
from simcluster.machine_models import build_cluster  # noqa: E402
from simcluster.published import published_files, read_published  # noqa: E402
from simcluster.reference.llm import _compared, framework_of, llm_usage, machine_for  # noqa: E402
from simcluster.reference.llm_specs import spec_of  # noqa: E402
from simcluster.traces import gpu_micro  # noqa: E402

GPU_MICRO_H100 = ROOT / "calibration" / "h100x1-gpu-2026-11-23" / "gpu-micro" / "gpu-micro" / "stdout.txt"
MEGASCALE = "llm-megascale2024-table2"
MCORE = "llm-megatron-core-r080-h100-weak-scaling"
NEMO = "llm-nemo-24.07-dgx-h100-fp8"
# (label, file stem, rows, {"parallel"|"batch"|"model": {key: value}} or {"framework": name} or {"fp8_residual": True})
SENSITIVITIES = (
    ("fp8 GEMMs at the card's held-out residual by K", NEMO, (0, 1, 2, 3, 4, 5, 6, 9, 10, 11), {"fp8_residual": True}),
    ("attention unfused (285068c8 without --use-flash-attn)", MEGASCALE, (0, 3, 8, 11), {"framework": "megatron-unfused-attention"}),
    ("micro_batch 2 (not stated)", MEGASCALE, (0, 3, 8, 11), {"batch": {"micro_batch": 2}}),
    ("virtual_stages 2 (not stated)", MCORE, (4, 6, 7), {"parallel": {"virtual_stages": 2}}),
    ("tied embeddings (the file before its reading fix)", MCORE, (0, 1, 2, 3), {"model": {"tied_embeddings": True}}),
)

# The development rows of issue 22's registered split (docs/models/llm-findings.md, "a development / held-out split"):
# every other held-out row stays unprinted while the model is developed.
DEV_ROWS = {MEGASCALE: (0, 1, 2, 3), MCORE: (0, 2, 4, 6, 8), NEMO: (0, 2, 4, 6)}

PARTS = (("compute", "compute"), ("tp", "exposed_tp_comm"), ("pp", "exposed_pp_comm"), ("dp", "exposed_dp_comm"),
         ("bubble", "pipeline_bubble"), ("other", "other"))
CLASSES = ("gemm", "attn", "membound", "fp8cast", "head")


def op_class(op: ops.Op, in_head: bool) -> str:
    if in_head:
        return "head"
    name = op.name.removeprefix("recompute.")
    if op.kind == "attention" or name.startswith("core."):
        return "attn"
    if name.startswith("fp8_cast"):
        return "fp8cast"
    return "gemm" if op.kind == "gemm" else "membound"


def compute_split(model, par, batch, gpu, fw, stage: int, m: int) -> tuple[dict, float, float]:
    """Seconds per op class of one stage's compute over the step, the recompute seconds among them, and the total."""
    dtype = batch.precision
    layer = ops.layer_forward(model, par, batch, fw) + ops.layer_backward(model, par, batch, fw)
    head = vocab_ops.head_forward(model, par, batch, fw) + vocab_ops.head_backward(model, par, batch, fw)
    emb = vocab_ops.embedding_forward(model, par, batch, fw) + vocab_ops.embedding_backward(model, par, batch, fw)
    out, recompute = dict.fromkeys(CLASSES, 0.0), 0.0
    split = layer_split(model.layers, par.pp, par.virtual_stages)
    last = par.pp * par.virtual_stages - 1
    for c in range(par.virtual_stages):
        vs = c * par.pp + stage
        chunk = [(op, split[vs], False) for op in layer]
        chunk += [(op, 1, True) for op in (emb if vs == 0 else []) + (head if vs == last else [])]
        for op, n, in_head in chunk:
            t = n * m * ops.op_time_s(gpu, op, dtype)
            out[op_class(op, in_head)] += t
            recompute += t if op.name.startswith("recompute.") else 0.0
    return out, recompute, sum(out.values())


class Fp8Residual:
    """The GPU card with its fp8 GEMMs slowed by the card's own held-out residual on gpu-micro's fp8 MLP-up shapes
    (measured / predicted time, mean per K, interpolated in log K, held flat outside): a sensitivity, not a card."""

    def __init__(self, gpu, trace_path: Path = GPU_MICRO_H100):
        self.gpu = gpu
        ratios: dict[int, list[float]] = {}
        for g in gpu_micro.parse(trace_path).gemm:
            if g.dtype == "fp8" and g.role == "mlp_up" and g.condition == "back-to-back":
                ratios.setdefault(g.k, []).append(g.time_s / gpu.gemm_time_s(g.m, g.n, g.k, dtype="fp8", batch=g.batch))
        self.log_k = np.log([k for k in sorted(ratios)])
        self.factor = np.array([float(np.mean(ratios[k])) for k in sorted(ratios)])

    def residual(self, k: int) -> float:
        return float(np.interp(math.log(k), self.log_k, self.factor))

    def gemm_time_s(self, m, n, k, dtype="bf16", batch=1):
        t = self.gpu.gemm_time_s(m, n, k, dtype=dtype, batch=batch)
        return t * self.residual(k) if dtype == "fp8" else t

    def __getattr__(self, name):
        return getattr(self.gpu, name)


def error_at(metric: str, measured: float, predicted: float, step: float, new_step: float) -> float:
    """The row's error (+ = predicted faster) if the predicted step were new_step (every metric is ~ 1 / step)."""
    if metric == "step_time_s":
        return 1 - new_step / measured
    return predicted * step / new_step / measured - 1


def with_override(run: dict, override: dict) -> dict:
    """The run with some of its parallel / batch / model keys set otherwise (a sensitivity)."""
    out = copy.deepcopy(run)
    for section in ("parallel", "batch", "model"):
        out[section].update(override.get(section, {}))
    return out


def analyse(ref, i: int, run: dict, override: dict | None = None) -> dict | None:
    override = override or {}
    run = with_override(run, override)
    usage = llm_usage(ref)
    spec, _, _ = spec_of(run, usage.assumptions)
    if spec is None or (ref.usage.get("runs_not_compared") or {}).get(i):
        return None
    model, par, batch = spec
    machine = machine_for(usage, run["gpus"])
    gpu = load_gpu(machine.gpu_card)[0]
    gpu = Fp8Residual(gpu) if override.get("fp8_residual") else gpu
    intra = load_collective(machine.card)[0]
    net = network_for(machine, intra, build_cluster(machine, intra) if machine.domains > 1 else None)
    fw = FRAMEWORKS[override["framework"]] if "framework" in override else framework_of(ref, run)
    result = predict_llm(model, par, batch, gpu, net, run["gpus"], "megatron", trace=False, framework=fw)
    metric, measured, predicted, error = _compared(ref, run, model, batch, result)
    step, bd, m = result.step_time_s, result.breakdown, result.micro_batches
    crit = result.critical_stage
    work = build_work(model, par, batch, gpu, net, comm.groups(par, net), fw)
    stage = work.stages[crit]
    dp_total = sum(sum(b) for b in stage.grad_buckets_s) + sum(stage.param_gather_s)
    classes, recompute, compute = compute_split(model, par, batch, gpu, fw, crit, m)
    if abs(compute - bd["compute"]) > 1e-6 * step:
        raise AssertionError(f"{ref.name} {i}: compute split {compute} != breakdown {bd['compute']}")
    bounds = {
        "tp hidden": step - bd["exposed_tp_comm"],
        "no bubble": step - bd["pipeline_bubble"],
        "dp serial": step + dp_total - bd["exposed_dp_comm"],
        "p2p blocking": step + 2 * m * par.virtual_stages * work.p2p_s,
        "tp+ag hidden": step - bd["exposed_tp_comm"] - min(bd["exposed_dp_comm"], sum(stage.param_gather_s)),
    }
    return {
        "source": ref.name, "row": i, "held_out": ref.held_out(i), "model": run["model"].get("name"), "gpus": run["gpus"],
        "par": f"t{par.tp} p{par.pp} d{par.dp} v{par.virtual_stages} mb{batch.micro_batch} {par.recompute}",
        "m": m, "error": error, "step": step, "measured_step": step / (1 - error) if metric == "step_time_s" else step * (1 + error),
        "parts": {short: 100 * bd[key] / step for short, key in PARTS},
        "classes": {k: 100 * v / compute for k, v in classes.items()}, "recompute": 100 * recompute / compute,
        "bounds": {k: error_at(metric, measured, predicted, step, v) for k, v in bounds.items()},
        "dp_total_pct": 100 * dp_total / step,
    }


BOUNDS = (("tp hidden", "TP hid"), ("no bubble", "no bub"), ("dp serial", "DP ser"), ("p2p blocking", "p2p bl"),
          ("tp+ag hidden", "TP+AG"))


def print_rows(rows: list[dict]) -> None:
    print("Predicted step, % of it (breakdown of the critical stage); compute split, % of that stage's compute;")
    print("error (+ = predicted faster) and arithmetic bounds: the error if one part alone were different (not model changes)")
    print(f"{'source':<28} {'row':>3} {'GPUs':>5} {'parallel':<26} {'m':>4} {'error':>7} | "
          + " ".join(f"{s:>6}" for s, _ in PARTS) + " | " + " ".join(f"{c:>8}" for c in CLASSES)
          + f" {'recomp':>6} | " + " ".join(f"{label:>7}" for _, label in BOUNDS))
    for r in rows:
        print(f"{r['source'][4:32]:<28} {r['row']:>3} {r['gpus']:>5} {r['par']:<26} {r['m']:>4} {100 * r['error']:+6.1f}% | "
              + " ".join(f"{r['parts'][s]:6.1f}" for s, _ in PARTS) + " | "
              + " ".join(f"{r['classes'][c]:8.1f}" for c in CLASSES) + f" {r['recompute']:6.1f} | "
              + " ".join(f"{100 * r['bounds'][b]:+6.1f}%" for b, _ in BOUNDS))


def step_against_m(rows: list[dict]) -> None:
    """MegaScale: step = a m + b per global batch, measured and predicted (least squares; arithmetic on the table)."""
    ms = [r for r in rows if r["source"] == MEGASCALE]
    print("\nMegaScale Megatron-LM rows: step time = a m + b (m micro-batches per pipeline, micro_batch 1), least squares per batch")
    for batch in sorted({r["batch"] for r in ms}):
        group = [r for r in ms if r["batch"] == batch]
        m = np.array([r["m"] for r in group], float)
        for name, key in (("measured", "measured_step"), ("predicted", "step")):
            a, b = np.polyfit(m, [r[key] for r in group], 1)
            print(f"  batch {batch:>5} ({len(group)} rows, m {int(m.min())}-{int(m.max())}) {name:>9}: a = {a:.4f} s per micro-batch, b = {b:.2f} s per step")


def sensitivities(files: dict) -> None:
    print("\nSensitivities (one input the source does not state, or the fp8 card's held-out residual; not model changes):")
    for label, stem, runs, override in SENSITIVITIES:
        ref = files[stem]
        for i in runs:
            base, other = analyse(ref, i, ref.runs[i]), analyse(ref, i, ref.runs[i], override)
            if base and other:
                print(f"  {label:<54} {stem[4:32]:<28} row {i:>2}: {100 * base['error']:+6.1f}% -> {100 * other['error']:+6.1f}%"
                      f"  (then DP serial {100 * other['bounds']['dp serial']:+6.1f}%, TP+AG hidden {100 * other['bounds']['tp+ag hidden']:+6.1f}%)")


def wanted(ref, i: int, argv: list[str]) -> bool:
    if "--subset" in argv:
        subset = argv[argv.index("--subset") + 1] if argv.index("--subset") + 1 < len(argv) else ""
        if subset != "dev":
            raise SystemExit(f"--subset: expected 'dev', got {subset!r}")
        return i in DEV_ROWS.get(ref.name, ())
    return ref.held_out(i) or "--all" in argv


def main(argv: list[str]) -> int:
    rows, files = [], {}
    for file in published_files(None, "llm-"):
        ref = read_published(file, "published-llm-run")
        files[ref.name] = ref
        for i, run in enumerate(ref.runs):
            if wanted(ref, i, argv):
                row = analyse(ref, i, run)
                if row:
                    rows.append(dict(row, batch=run["batch"]["global_batch"]))
    print_rows(rows)
    if "--subset" in argv:
        mean = sum(abs(r["error"]) for r in rows) / len(rows)
        print(f"\ndevelopment rows: {len(rows)}, mean |error| {100 * mean:.1f}%, within 10%: {sum(abs(r['error']) <= 0.10 for r in rows)}")
        step_against_m(rows)
        return 0
    held = [r for r in rows if r["held_out"]]
    if held:
        mean = sum(abs(r["error"]) for r in held) / len(held)
        print(f"\nheld-out rows: {len(held)}, mean |error| {100 * mean:.1f}%, within 10%: {sum(abs(r['error']) <= 0.10 for r in held)}")
    step_against_m(rows)
    sensitivities(files)
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--all", "--subset"), names=("dev",), usage="[--all] [--subset dev]")
    sys.exit(main(sys.argv[1:]))
