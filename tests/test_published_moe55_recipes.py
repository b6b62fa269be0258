"""The published file session 55 (moe55, issue 44) recorded from Megatron-LM's MoE recipe index (NVIDIA/Megatron-LM
d48bd6be0a examples/moe_recipes/README.md, 'Recipe Index'): its three H100 rows checked against the index's cells pasted
below (GPUs, TP/PP/EP/CP/ETP, MBS/GBS/SL, features, median TFLOP/s/GPU; parsed here, not read from the yaml), which rows
are compared (row 0) and which not (1: blockwise FP8; 2: a disputed figure), held out, and the group the file joins
(cold review C55 item 8: the file had no transcription test)."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT

DOC = yaml.safe_load((ROOT / "calibration" / "published" / "llm-megatron-lm-moe-recipes-h100.yaml").read_text())

# the index's H100 rows at d48bd6be0a (model | label | GPUs | TP/PP/EP/CP/ETP | MBS/GBS/SL | features | TFLOP/s/GPU),
# in the file's row order
INDEX = """\
Qwen3-30B-A3B | H100 BF16 | 32 | 1/1/8/1/1 | 1/256/4096 | BF16 baseline | 234.1
Qwen3-30B-A3B | H100 FP8 | 32 | 1/1/8/1/1 | 1/256/4096 | FP8 blockwise; router/preprocess CG | 232.4
Qwen3-235B-A22B | H100 BF16 | 256 | 2/8/32/1/1 | 1/2048/4096 | router/preprocess CG; HybridEP; EP overlap | 214.3
"""
ROWS = [[c.strip() for c in line.split("|")] for line in INDEX.splitlines()]


@pytest.mark.parametrize("i", range(len(ROWS)))
def test_each_row_is_the_index_line(i):
    model, label, gpus, layout, batch, features, tflops = ROWS[i]
    run = DOC["runs"][i]
    tp, pp, ep, cp, etp = map(int, layout.split("/"))
    mbs, gbs, seq = map(int, batch.split("/"))
    p, b = run["parallel"], run["batch"]
    assert run["model"]["name"] == model and run["gpus"] == int(gpus)
    assert (p["tp"], p["pp"], p["ep"], p["cp"], p["expert_tp"]) == (tp, pp, ep, cp, etp)
    assert p["dp"] == int(gpus) // (tp * pp * cp)                     # arithmetic, as the notes say
    assert (b["micro_batch"], b["global_batch"], run["model"]["seq"]) == (mbs, gbs, seq)
    assert b["global_batch_tokens"] == gbs * seq
    assert run["measured"]["tflops_per_gpu"] == float(tflops)
    assert label in run["row"] and features in run["row"] and layout in run["row"]
    assert ("FP8" in label) == ("FP8" in b["precision"])


def test_row_0_compared_held_out_in_the_model_zoo_group_and_rows_1_2_not():
    usage = DOC["simcluster"]
    assert usage["held_out"] is True and usage["source_group"] == "llm-megatron-moe-modelzoo"
    assert set(usage["runs_not_compared"]) == {1, 2} and usage["framework"] == "megatron"
    assert "blockwise" in usage["runs_not_compared"][1] and "#5728" in usage["runs_not_compared"][2]
