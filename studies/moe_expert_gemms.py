"""The GPU card's GEMM curve at MoE expert shapes (issue 22): the expert GEMMs of the published H100 MoE rows' layers,
measured by gpu-micro's moe-experts section on one H100 (calibration/h100x1-moe-experts-2026-11-27), against the card's
prediction for each shape (written to predicted-before.json before the measurement; the card was fitted on other shapes:
dense layer GEMMs with every dimension >= 1024 for fp8); then each layer pass's group of local-expert GEMMs
(moe-grouped, calibration/h100x1-moe-grouped-2026-11-27: a loop, and torch._grouped_mm in bf16) against the LLM model's
price for that group (llm/ops.op_time_s: one GEMM per expert) and against one batched GEMM. Read-only, nothing fitted.

    python studies/moe_expert_gemms.py [BUNDLE] [--card models/gpu/h100-sxm.yaml]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from moe_gemms_device import MOE_EXPERTS  # noqa: E402

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm import ops  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402
from simcluster.traces import gpu_micro  # noqa: E402

BUNDLE = ROOT / "calibration" / "h100x1-moe-experts-2026-11-27"
GROUPED = ROOT / "calibration" / "h100x1-moe-grouped-2026-11-27"


def _read(bundle: Path, card: Path):
    """The bundle's gpu-micro trace, the layer name of each (hidden, tokens), the card."""
    layer = {(h, t): name for name, h, _, t in MOE_EXPERTS}
    return gpu_micro.parse(bundle / "gpu-micro" / "gpu-micro" / "stdout.txt"), layer, load_gpu(card)[0]


def rows(bundle: Path, card: Path) -> list[dict]:
    """One row per measured record: shape, condition, measured and predicted seconds, error (+ = predicted slower)."""
    trace, layer, gpu = _read(bundle, card)
    return [{"moe": layer.get((s.hidden, s.tokens), f"h{s.hidden}-t{s.tokens}"), "role": s.role, "m": s.m, "n": s.n, "k": s.k,
             "dtype": s.dtype, "condition": s.condition, "measured_s": s.time_s,
             "predicted_s": gpu.gemm_time_s(s.m, s.n, s.k, dtype=s.dtype), "error": gpu.gemm_time_s(s.m, s.n, s.k, dtype=s.dtype) / s.time_s - 1}
            for s in trace.gemm if s.role.startswith("moe-")]


def group_rows(bundle: Path, card: Path) -> list[dict]:
    """One row per timed group: mode, measured, the model's price (an `expert_up` op of batch = experts) and one batched GEMM."""
    trace, layer, gpu = _read(bundle, card)
    out = []
    for g in trace.groups:
        model = ops.op_time_s(gpu, ops.gemm("expert_up", g.m, g.n, g.k, g.experts), g.dtype)
        batched = gpu.gemm_time_s(g.m, g.n, g.k, dtype=g.dtype, batch=g.experts)
        out.append({"moe": layer.get((g.hidden, g.tokens), f"h{g.hidden}-t{g.tokens}"), "role": g.role, "experts": g.experts,
                    "dtype": g.dtype, "condition": g.mode, "measured_s": g.time_s, "predicted_s": model, "batched_s": batched,
                    "error": model / g.time_s - 1, "batched_error": batched / g.time_s - 1})
    return out


def summary(table: list[dict]) -> dict:
    """Mean |error| and mean signed error per (condition, dtype)."""
    groups: dict[tuple, list[float]] = {}
    for r in table:
        groups.setdefault((r["condition"], r["dtype"]), []).append(r["error"])
    return {k: {"n": len(v), "mean_abs": statistics.mean(abs(e) for e in v), "mean": statistics.mean(v),
                "median_abs": statistics.median(abs(e) for e in v)} for k, v in sorted(groups.items())}


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle", nargs="?", default=str(BUNDLE))
    ap.add_argument("--card", default=str(ROOT / "models" / "gpu" / "h100-sxm.yaml"))
    args = ap.parse_args(argv)
    table = rows(Path(args.bundle), Path(args.card))
    print(f"{'condition':12s} {'dtype':5s} {'layer':22s} {'gemm':15s} {'M':>5s} {'N':>5s} {'K':>5s} {'meas us':>8s} {'card us':>8s} error")
    for r in table:
        print(f"{r['condition']:12s} {r['dtype']:5s} {r['moe']:22s} {r['role']:15s} {r['m']:5d} {r['n']:5d} {r['k']:5d} "
              f"{r['measured_s'] * 1e6:8.1f} {r['predicted_s'] * 1e6:8.1f} {r['error'] * 100:+6.1f}%")
    for (cond, dtype), s in summary(table).items():
        print(f"{cond} {dtype}: {s['n']} GEMMs, mean |error| {s['mean_abs'] * 100:.1f}% (median {s['median_abs'] * 100:.1f}%), "
              f"mean signed {s['mean'] * 100:+.1f}% (+ = card slower)")
    groups = group_rows(GROUPED, Path(args.card))
    print("\nlayer-pass groups (moe-grouped): model = one GEMM per expert (llm/ops.op_time_s), batched = one batched kernel")
    for (mode, dtype), s in summary(groups).items():
        if mode == "streams":   # torch's per-call stream switching costs more host time than it overlaps: not a model target
            continue
        batched = [r["batched_error"] for r in groups if (r["condition"], r["dtype"]) == (mode, dtype)]
        print(f"{mode} {dtype}: {s['n']} groups, model mean |error| {s['mean_abs'] * 100:.1f}% (signed {s['mean'] * 100:+.1f}%); "
              f"batched {statistics.mean(abs(e) for e in batched) * 100:.1f}% ({statistics.mean(batched) * 100:+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
