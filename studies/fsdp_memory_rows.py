"""Every FSDP2 (and tp+fsdp) llm-step document under calibration/ against the memory model before and after session 39's
bf16-block fix (FrameworkSpec.bf16_param_block; docs/models/llm-findings.md, session 39 fsdpmem): the highest rank's
torch.cuda.max_memory_allocated against the model's steady peak, old (the flag off) and new. Development reading.

    python studies/fsdp_memory_rows.py [--min-gib 4]   # documents whose peak is below --min-gib (hidden-128 host runs) left out
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.heldout.eager import model_of  # noqa: E402
from simcluster.heldout.eager_regimes import layout_of  # noqa: E402
from simcluster.llm.eager import torch_framework  # noqa: E402
from simcluster.llm.memory import GiB, stage_memories  # noqa: E402
from simcluster.llm.spec import BatchSpec  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402


def rows(min_gib: float) -> list[dict]:
    out, seen = [], set()
    for path in sorted((ROOT / "calibration").rglob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if not isinstance(doc, dict) or doc.get("tool") != "llm-step" or doc.get("mode") not in ("fsdp", "tp+fsdp"):
            continue
        par, _, _ = layout_of(doc["mode"])
        fw = torch_framework(par)
        for shape in doc.get("shapes", []):
            peaks = [r.get("max_memory_allocated_bytes") for r in shape.get("ranks", [])] or [shape.get("max_memory_allocated_bytes")]
            if shape.get("status") != "ok" or not all(peaks) or max(peaks) / GiB < min_gib:
                continue
            measured = max(peaks) / GiB
            model, mb = model_of(doc, shape["seq"]), shape["micro_batch"]
            batch = BatchSpec(mb * par.dp, mb, "bf16")
            new, old = (stage_memories(model, par, batch, 150e9, f)[0].steady_allocated / GiB
                        for f in (fw, replace(fw, bf16_param_block=False)))
            key = (doc["mode"], doc["model"].get("preset"), shape["seq"], mb, round(measured, 2))
            if key not in seen:
                seen.add(key)
                out.append({"bundle": path.relative_to(ROOT / "calibration").parts[0], "mode": doc["mode"],
                            "preset": doc["model"].get("preset"), "seq": shape["seq"], "mb": mb, "measured": measured,
                            "old": old / measured - 1, "new": new / measured - 1})
    return out


def main(argv: list[str]) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-gib", type=float, default=4.0)
    args = ap.parse_args(argv)
    print(f"{'bundle':40} {'mode':8} {'preset':6} {'seq':>6} {'mb':>3} {'GiB':>7} {'old':>7} {'new':>7}")
    for r in rows(args.min_gib):
        print(f"{r['bundle'][:40]:40} {r['mode']:8} {r['preset']!s:6} {r['seq']:6} {r['mb']:3} {r['measured']:7.2f} "
              f"{r['old']:+7.1%} {r['new']:+7.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
