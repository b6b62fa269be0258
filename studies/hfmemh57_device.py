"""Issue 44, session 57 (hfmemh57; calibration/h200x1-hfmemh57-2026-12-02, read by validation/hfmemh57.py): the held-out
shapes for the Hugging Face frameworks' memory terms (llm/hf_memory.py). The measurement is studies/hfmem57_device.py's
(imported, unchanged) at shapes none of hfmem57's development set: hfhook55's three model sizes and three (micro-batch,
seq) points, the third (8 x 1024) larger in tokens than any development point. The device script runs each
configuration in a process of its own (a fresh allocator: hfmem57 found that a configuration's FSDP1 / DeepSpeed state
stays allocated into the next one's in the same process).

    python studies/hfmemh57_device.py --device cuda --warmup 2 --sizes s0.2b --points mb2 --variants fsdp1
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hfdev55_device as dev  # noqa: E402
import hfmem57_device as mem  # noqa: E402
from hfhook55_device import SIZES  # noqa: E402

POINTS = {"mb2": (2, 1288), "mb1": (1, 2136), "mb8": (8, 1024)}
VARIANTS = ("fsdp1", "zero3")


def main(argv: list[str]) -> None:
    dev.SIZES, dev.POINTS = SIZES, POINTS   # hfdev55's parse and hfmem57's main read these module globals
    mem.main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
