"""Issue 44, session 55 (helper hfhook55; calibration/h200x1-hfhook55-2026-12-01, read by validation/hfhook55.py): the
held-out shapes for the Hugging Face hook term (llm/hf_hooks.py, OFF). The measurement is studies/hfdev55_device.py's
(imported, unchanged: its model, variants, timing and record; its JSON's "set" field still reads "hfdev55") at NEW shapes:
three model sizes and two (micro-batch, seq) points none of hfdev55's, the seqs named nowhere else in calibration/.

    python studies/hfhook55_device.py --device cuda --warmup 5 --steps 15 [--variants eager,fsdp1 | zero3]
    python studies/hfhook55_device.py --device cpu --quick --warmup 1 --steps 2     (hfdev55's tiny dry-run shape)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hfdev55_device as dev  # noqa: E402

# (name, layers, hidden, ffn, heads, kv_heads, vocab): ~0.2B (MHA, head dim 128), ~0.7B (GQA 2:1), ~1.9B (GQA 2:1, ffn 4 h);
# the vocabulary 32000, untied, as hfdev55's
SIZES = {"s0.2b": (16, 1024, 2816, 8, 8, 32000), "s0.7b": (24, 1536, 4096, 16, 8, 32000), "s1.9b": (28, 2048, 8192, 16, 8, 32000)}
# (name, micro-batch, seq): seqs new to calibration/ (this set's own)
POINTS = {"mb2": (2, 1288), "mb1": (1, 2136)}


def main(argv: list[str]) -> None:
    dev.SIZES, dev.POINTS = SIZES, POINTS   # hfdev55's main and parse read these module globals
    dev.main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
