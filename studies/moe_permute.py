"""The token permutations of Megatron's alltoall dispatcher (issue 22's MoE miss, one of its candidates): gpu-micro's
moe-permute section on one H100 (calibration/h100x1-moe-permute-2026-11-27) against the LLM model's price for them.

Until session 24 the model priced the dispatcher's copies as one memory-bound `permute` op per MoE layer pass: two
copies of the T k dispatched rows forward (each read and written), twice that backward ("before" columns; the prices
registered before the run). Megatron's alltoall dispatcher makes four per pass when a GPU holds more than one expert:
permute, the sort of the received chunks by local expert, its inverse, unpermute; a permutation's backward is its
inverse, the same bytes. Since session 24 the model prices that (`ops.permute_copies`, `ops.permutation`: "now"
columns). Both on the GPU card's memory-bound curve (gpu.memory_time_s); the expert GEMMs of the same pass (one per local
expert, forward) are printed beside them for scale. The measured sequence is plain torch (gathers and an index_add,
whose bf16 atomic adds take 6x a copy); Transformer Engine's fused permute, which the recipes run, is not measured.
Read-only, nothing fitted.

    python studies/moe_permute.py [BUNDLE] [--card models/gpu/h100-sxm-interleaved.yaml]
    python studies/moe_permute.py --plan        # the prices alone
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from moe_gemms_device import MOE_EXPERTS, MOE_LOCAL_EXPERTS  # noqa: E402

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

BUNDLE = ROOT / "calibration" / "h100x1-moe-permute-2026-11-27"
CARD = ROOT / "models" / "gpu" / "h100-sxm-interleaved.yaml"
BEFORE_COPIES, NOW_COPIES = 2, 4     # dispatched-row copies per layer pass, forward (each read and written)


def prices(gpu, rows: int, h: int) -> dict:
    """Seconds for the dispatcher's copies of `rows` x h bf16 rows, forward and forward + backward: the model before
    session 24 (two copies, backward twice the forward bytes) and now (four, backward the same bytes), and one copy."""
    one = 2 * rows * h * 2                       # one copy: rows x h bf16 read and written
    out = {"copy": gpu.memory_time_s(one)}
    out["before_fwd"] = gpu.memory_time_s(BEFORE_COPIES * one)
    out["before_fwd_bwd"] = out["before_fwd"] + gpu.memory_time_s(2 * BEFORE_COPIES * one)
    out["now_fwd"] = gpu.memory_time_s(NOW_COPIES * one)
    out["now_fwd_bwd"] = 2 * out["now_fwd"]
    return out


def expert_gemms_fwd_s(gpu, name: str, h: int, f: int, t: int) -> float:
    """The pass's forward expert GEMMs as the model prices them: per local expert, fused up + gate (t, 2 f, h) and down (t, h, f)."""
    return MOE_LOCAL_EXPERTS[name] * (gpu.gemm_time_s(t, 2 * f, h, dtype="bf16") + gpu.gemm_time_s(t, h, f, dtype="bf16"))


def measured(bundle: Path) -> dict:
    path = bundle / "gpu-micro" / "gpu-micro" / "stdout.txt"
    if not path.is_file():
        path = next(iter(sorted(bundle.glob("*.json"))), path)
    try:
        text = path.read_text()
        doc = json.loads(text[text.find("{"):])
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: {path}: not a gpu-micro document ({exc})") from None
    recs = doc.get("moe_permute")
    if not recs:
        raise SystemExit(f"error: {path}: no moe_permute records (run gpu-micro --sections moe-permute)")
    return {(r["moe"], r["mode"]): r["time_s"] for r in recs if "time_s" in r}


def main(argv: list[str]) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle", nargs="?", default=str(BUNDLE))
    ap.add_argument("--card", default=str(CARD))
    ap.add_argument("--plan", action="store_true", help="print the prices only")
    args = ap.parse_args(argv)
    gpu, _ = load_gpu(Path(args.card))
    meas = {} if args.plan else measured(Path(args.bundle))
    print(f"card {Path(args.card).name}; ms per layer pass; err: price / measured - 1")
    print(f"{'layer':<22} {'rows':>6} {'h':>5} {'GEMMs fwd':>9} | {'fwd meas':>8} {'before':>7} {'now':>7} | "
          f"{'fwd+bwd meas':>12} {'before':>7} {'now':>7} | {'copy meas':>9} {'card':>7}")
    errs: dict[str, list[float]] = {"before_fwd": [], "now_fwd": [], "before_fwd_bwd": [], "now_fwd_bwd": [], "copy": []}
    for name, h, f, t in MOE_EXPERTS:
        rows = t * MOE_LOCAL_EXPERTS[name]
        p = prices(gpu, rows, h)
        m = {mode: meas.get((name, mode)) for mode in ("fwd", "fwd_bwd", "copy")}

        def cell(price: float, value: float | None, key: str) -> str:
            if value is None:
                return f"{price * 1e3:>7.3f}"
            errs[key].append(price / value - 1)
            return f"{price * 1e3:>7.3f}"

        fmt = lambda v: f"{v * 1e3:.3f}" if v else "-"   # noqa: E731
        print(f"{name:<22} {rows:>6} {h:>5} {expert_gemms_fwd_s(gpu, name, h, f, t) * 1e3:>9.3f} | {fmt(m['fwd']):>8} "
              f"{cell(p['before_fwd'], m['fwd'], 'before_fwd')} {cell(p['now_fwd'], m['fwd'], 'now_fwd')} | "
              f"{fmt(m['fwd_bwd']):>12} {cell(p['before_fwd_bwd'], m['fwd_bwd'], 'before_fwd_bwd')} "
              f"{cell(p['now_fwd_bwd'], m['fwd_bwd'], 'now_fwd_bwd')} | {fmt(m['copy']):>9} {cell(p['copy'], m['copy'], 'copy')}")
    for key, e in errs.items():
        if e:
            print(f"{key}: mean error {statistics.mean(e) * 100:+.1f}%, mean |error| {statistics.mean(abs(x) for x in e) * 100:.1f}% over {len(e)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
