"""KempnerForge's printed peak memory against the model's (issue 44, session 58): read-only, not a test, NOT held out.

KempnerForge prints `mem=X/YGB` per step (kempnerforge/metrics/tracker.py), X = torch.cuda.max_memory_allocated / 1024**3
(metrics/memory.py get_memory_stats: gb = 1024**3), so its "GB" are GiB of allocated bytes: compared with the model's
MemoryBreakdown.allocated (no context, no 1.5 GiB overhead). Every row of the three KempnerForge files that prints a
memory figure and is compared (`simcluster validate --published llm` predicts the same rows: reference/llm.predict_run).
These rows were seen before the session-58 memory changes (llm-findings "Session 58"): in-sample for memory.
    python studies/kempnerforge_memory.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.llm.memory import GiB, memory_per_gpu  # noqa: E402
from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import llm_usage, predict_run  # noqa: E402

FILES = ("llm-kempnerforge-h200-fsdp2.yaml", "llm-kempnerforge-h200-config-validation.yaml",
         "llm-kempnerforge-h200-weak-scaling.yaml")


def main() -> None:
    print(f"{'file':40s} {'row':>3s} {'configuration':44s} {'measured GiB':>12s} {'predicted':>9s} {'error':>7s}  "
          "P / G / O / A / logits / accumulator (GiB)")
    errs = {}
    for name in FILES:
        ref = read_published(ROOT / "calibration" / "published" / name, "published-llm-run")
        usage = llm_usage(ref)
        for i, run in enumerate(ref.runs):
            measured = (run.get("measured") or {}).get("memory_GB")
            p = predict_run(ref, usage, i, run)
            if measured is None or isinstance(p, str):
                continue
            mem = memory_per_gpu(p.model, p.par, p.batch, p.gpu.hbm_capacity_bytes, p.framework)
            pred = mem.allocated / GiB
            err = pred / float(measured) - 1
            size = p.model.parameter_count() / 1e9
            label = str(run["model"].get("name", "")).split()[1] if len(str(run["model"].get("name", "")).split()) > 1 else f"{size:.0f}B"
            errs.setdefault(label, []).append(err)
            parts = " / ".join(f"{getattr(mem, k) / GiB:.1f}" for k in ("parameters", "gradients", "optimizer", "activations",
                                                                        "logits", "accumulated_grads"))
            config = f"{size:.0f}B {p.par.gpus} GPUs t{p.par.tp} d{p.par.dp} {p.par.recompute} m{p.batch.micro_batches(p.par.dp)}"
            print(f"{name[4:-5]:40s} {i:3d} {config:44s} {float(measured):12.1f} {pred:9.1f} {err * 100:+6.1f}%  {parts}")
    print("\nby model (the file's name for it): rows, mean error, mean |error|")
    for size, e in sorted(errs.items(), key=lambda kv: float(kv[0].rstrip("B"))):
        print(f"  {size:>5s}  {len(e):3d}  {sum(e) / len(e) * 100:+6.1f}%  {sum(abs(x) for x in e) / len(e) * 100:5.1f}%")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before anything is read
    study_args.check()
    main()
