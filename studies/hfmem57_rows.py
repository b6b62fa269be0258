"""Issue 44, session 57: hfmem57's development rows (calibration/h200x1-hfmem57-2026-12-02) against the model's peak
allocated memory, with llm/hf_memory.py's terms on (today) and off (before session 57); measured = each configuration's
largest phase peak less the bytes allocated when it started (validation/hfmemh57.peak_less_start; the bundle's
README, finding 1). In-sample: the terms were read here.

    python studies/hfmem57_rows.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

RUNS = ROOT / "calibration" / "h200x1-hfmem57-2026-12-02" / "runs"
FRAMEWORK = {"fsdp1": "hf-fsdp1", "zero3": "hf-deepspeed"}


def rows() -> list[dict]:
    from hfmemh57 import peak_less_start  # the held-out read-out's measure: the largest phase peak less the start bytes

    from simcluster.heldout.eager_registered import _flag_hosts
    from simcluster.heldout.registration import switched_off
    from simcluster.llm import hf_memory
    from simcluster.llm.comm import Network
    from simcluster.llm.framework import FRAMEWORKS
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

    _, gpu = _flag_hosts()
    out = []
    for name in ("hfmem57.json", "hfmem57-z3.json"):
        for r in json.loads((RUNS / name).read_text())["records"]:
            if r["variant"] not in FRAMEWORK:
                continue
            model = TransformerSpec(r["layers"], r["hidden"], r["ffn"], r["heads"], r["kv_heads"], r["vocab"], r["seq"], tied_embeddings=False)
            on = FRAMEWORKS[FRAMEWORK[r["variant"]]]
            gib = {arm: float(predict_llm(model, ParallelSpec(zero=3), BatchSpec(r["micro_batch"], r["micro_batch"]), gpu, Network(None, 1), 1,
                                          trace=False, framework=fw).memory_per_gpu_GiB["allocated"])
                   for arm, fw in (("on", on), ("off", switched_off(on, hf_memory.SWITCHES)))}
            out.append({"name": f"{r['size']}-{r['point']}-{r['variant']}", "measured": peak_less_start(r) / 2**30, **gib})
    return out


def main() -> None:
    rs = rows()
    print("row                  measured GiB    ON   err    OFF   err")
    for r in rs:
        m = r["measured"]
        print(f"{r['name']:<20} {m:12.2f} {r['on']:6.2f} {100 * (r['on'] / m - 1):+5.1f}% {r['off']:6.2f} {100 * (r['off'] / m - 1):+5.1f}%")
    for arm in ("on", "off"):
        errs = [abs(r[arm] / r["measured"] - 1) for r in rs]
        print(f"{arm.upper()}: mean |error| {100 * sum(errs) / len(errs):.1f}%, max {100 * max(errs):.1f}% over {len(rs)} rows (in-sample)")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before anything is read
    study_args.check()
    main()
