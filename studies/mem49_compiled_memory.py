"""Session 49 mem49 (issue 44): every compiled llm-step row the project holds, its rank-0 peak (max_memory_allocated_bytes,
the mean over the row's processes) against the model before mem49 (heldout/registration.before_mem49: framework.
compiled_nock_memory off) and the product (on); error = predicted / measured - 1. The one-GPU compiled rows (per-block
compile, no checkpointing) and every compiled FSDP2 row with checkpointing must not move (the scope check); x2set49's
1b 3040:2 row without checkpointing is development (it is the row the term was built to look at).

    PYTHONPATH=. python studies/mem49_compiled_memory.py > studies/mem49_compiled_memory-session49.txt
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FSDP_SETS = ("h200x2-compilefsdp-2026-11-30", "h200x2-compileac-2026-11-30", "h200x2-repeats47-2026-11-30",
             "h200x2-compck-2026-11-30", "h200x2-compck2-2026-11-30", "h200x2-x2set49-2026-12-01")
ONE_GPU_GLOBS = ("h200x1-llm-compile2-2026-11-29", "h200x1-llm-compile4-2026-11-29", "h200x1-llm-lease3-2026-11-29",
                 "h200x2-eager-today-2026-11-30")
LAYOUT = {"single": "single+ckpt", "fsdp": "fsdp+ckpt", "fsdpnock": "fsdp"}   # registered variant -> regime layout


def peaks(files: list[Path]) -> list[float]:
    """Rank 0's max_memory_allocated_bytes (GiB) of each ok shape in the run documents."""
    from simcluster.llm.memory import GiB

    out = []
    for f in files:
        for s in json.loads(f.read_text()).get("shapes", []):
            if s.get("status") == "ok" and "max_memory_allocated_bytes" in s:
                out.append(s["max_memory_allocated_bytes"] / GiB)
    return out


def rows() -> list[tuple]:
    """(set, name, preset, seq, micro-batch, layout, layers or None, run files) of every compiled row."""
    from simcluster.runner.llm_decoder import PRESETS
    from simcluster.strict import load_yaml

    out = []
    for name in FSDP_SETS:
        folder = ROOT / "calibration" / name
        for r in load_yaml(folder / "registered.yaml")["rows"]:
            if r.get("variant") in LAYOUT and ("compile_scope" in r or r.get("ac_mode")):
                files = sorted((folder / "runs").glob(f"{r['name']}-r*.json"))
                out.append((name, r["name"], r["preset"], r["seq"], r["micro_batch"], LAYOUT[r["variant"]], None, files))
    for name in ONE_GPU_GLOBS:
        for f in sorted((ROOT / "calibration" / name / "runs").glob("compile-*.json")):
            doc = json.loads(f.read_text())
            layers = doc["model"]["layers"]
            for s in doc["shapes"]:
                own = None if layers == PRESETS[doc["model"]["preset"]].get("layers") else layers
                out.append((name, f.stem, doc["model"]["preset"], s["seq"], s["micro_batch"], "single", own, [f]))
    return out


def main() -> int:
    from simcluster.heldout.eager_compilefsdp import fits
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.heldout.registration import before_mem49
    from simcluster.llm import eager

    def peak(r: tuple) -> float:
        _, _, preset, seq, mb, layout, layers, _ = r
        return regime_predict(preset, mb, layout, "h200", seq=seq, fits=fits(), compiled=True, layers=layers)["stage_mem_GiB"][0]

    table = rows()
    with eager.torch_framework_as(before_mem49):
        before = [peak(r) for r in table]
    after = [peak(r) for r in table]
    print(f"{'set':32} {'row':22} {'layout':12} {'measured':>9} {'before':>8} {'err':>7} {'after':>8} {'err':>7}  (GiB, rank 0)")
    moved = []
    for r, b, a in zip(table, before, after, strict=True):
        got = peaks(r[7])
        m = statistics.mean(got)
        print(f"{r[0]:32} {r[1]:22} {r[5]:12} {m:9.3f} {b:8.3f} {100 * (b / m - 1):+6.1f}% {a:8.3f} {100 * (a / m - 1):+6.1f}%"
              f"  n={len(got)}{'  MOVED' if a != b else ''}")
        moved += [r[1]] if a != b else []
    print(f"rows: {len(table)}; moved: {', '.join(moved) or 'none'}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
