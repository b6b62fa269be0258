"""Issue 44, session 37 (gemmk): an H200 GEMM card against the two registered device bundles' GEMM times, held out of
every card fit (docs/models/llm-findings.md, session 37 gemmk, step 2 of the registration):

  calibration/h200x1-eager-gemms-2026-11-29  the `nn` variant (torch.matmul, interleaved, event-timed) of the 24 records
                                             with min(M, N) > 512 (the study's declared filter), and all 30
  calibration/h200x1-gemm-timing-2026-11-29  the six shapes' interleaved event times and their profiled kernel times

    python studies/gemm_k_check.py [CARD ...]      # default: models/gpu/h200-sxm-interleaved.yaml

prints, per card, the median and mean |card / measured - 1| of each set."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "studies"))

import eager_gemm_device as eg  # noqa: E402

from simcluster.hardware.gpu import load_gpu  # noqa: E402

EAGER = ROOT / "calibration/h200x1-eager-gemms-2026-11-29/eager-gemms.json"
TIMING = ROOT / "calibration/h200x1-gemm-timing-2026-11-29/gemm-timing.json"


def sets() -> dict[str, list[tuple[tuple[int, int, int], float]]]:
    """Each held-out set: [(m, n, k), measured seconds]."""
    nn = [r for r in eg.records_of(str(EAGER)) if r["variant"] == "nn"]
    timing = [r for r in json.loads(TIMING.read_text())["records"] if r["condition"] == "interleaved"]
    return {"eager-gemms nn, min(M, N) > 512": [(tuple(r["mnk"]), r["time_s"]) for r in nn if min(r["mnk"][:2]) > eg.BIG],
            "eager-gemms nn, all": [(tuple(r["mnk"]), r["time_s"]) for r in nn],
            "timing probe, interleaved event": [(tuple(r["mnk"]), r["event_s"]) for r in timing],
            "timing probe, its kernels": [(tuple(r["mnk"]), r["kernel_median_s"]) for r in timing]}


def main(cards: list[str]) -> int:
    from simcluster.errors import SimclusterError

    data = sets()
    for card in cards or [str(ROOT / "models/gpu/h200-sxm-interleaved.yaml")]:
        try:
            gpu = load_gpu(card)[0]
        except SimclusterError as exc:
            print(f"{card}: {exc}", file=sys.stderr)
            return 1
        print(card)
        for name, rows in data.items():
            errs = [gpu.gemm_time_s(*mnk) / t - 1 for mnk, t in rows]
            print(f"  {name:34s} n {len(errs):2d}  median {100 * statistics.median(errs):+5.1f}%  "
                  f"mean |err| {100 * statistics.mean(abs(e) for e in errs):4.1f}%")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=None, usage="[CARD ...]")
    sys.exit(main(sys.argv[1:]))
