"""The published file session 54 (lseq54, issue 44) recorded: Kazuki Fujii's 4D-parallelism sweep of Llama 3.1 8B on
TSUBAME 4.0's H100 SXM5 94GB (okoge-kaz/Megatron-LM f06b3a112 scripts/abci/Llama-3.1-8B/4d_parallelism.md), its 8K and 16K
tables. Transcription checks against the page's H100 table lines pasted below (parsed here, not read from the yaml): every
printed cell recorded once in the page's order, dp by arithmetic, Megatron's vocabulary padding; every row not compared
(no card for the 94GB SKU) and so the family figures unmoved; the stand-in study's left-out cells are the repeated ones."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT, load_script, published_llm_validation

PUBLISHED = ROOT / "calibration" / "published"
NAME = "llm-fujii-4d-tsubame4-h100-94gb.yaml"
DOC = yaml.safe_load((PUBLISHED / NAME).read_text())

# the page's H100 (94GB) table lines as printed at f06b3a112 (the 8192 table, then the 16384 one; each opens with its header)
PAGE = """\
| (TP, CP, PP, micro batch) | 4 GPU  | 8 GPU  | 16 GPU | 32 GPU | 64 GPU  | 128 GPU |
| (2, 1, 1, 1)              | 446.72 | 443.45 | 439.87 | 438.69 | 435.34  | 426.88  |
| (2, 1, 1, 2)              | -      | 479.16 | 475.2  | 471.82 | 469.01  | 460.32  |
| (2, 1, 1, 4)              | -      | -      | -      | -      | -       | -       |
| (2, 2, 1, 1)              | 396.83 | 393.96 | 391.4  | 383.28 | 382.72  | 359.54  |
| (2, 2, 1, 2)              | 421.59 | 418.79 | 422.93 | 418.39 | 414.46  | 394.02  |
| (2, 2, 1, 4)              | -      | 452.21 | 456.01 | 447.8  | 446.01  |         |
| (2, 2, 1, 8)              | -      | -      | -      | -      | -       |         |
| (4, 1, 1, 1)              | 408.29 | 406.13 | 402.58 | 402.04 | 397.55  | 364.17  |
| (4, 1, 1, 2)              | 443.83 | 439.61 | 439.53 | 438.38 | 433.62  | 411.39  |
| (4, 1, 1, 4)              | -      | 448.51 | 446.4  | 446.24 | 443.92  | 438.55  |
| (2, 1, 2, 1)              | 415.39 | 413.75 | 408    | 410.59 | 405.03  | 394.58  |
| (2, 1, 2, 2)              | 449.1  | 445.74 | 434.68 | 435.92 | 426.5   | 413.62  |
| (2, 1, 2, 4)              | -      | -      | -      | -      | -       | -       |
| (1, 2, 1, 1)              | -      | 495.9  | 487.58 | 481.69 |         |         |
| (1, 2, 1, 2)              | -      | -      | -      | -      |         |         |
| (1, 4, 1, 1)              | 449.58 | 441.25 | 436.39 | 425.73 |         |         |
| (1, 4, 1, 2)              | -      | 465.92 | 462.95 | 448.61 |         |         |
| (TP, CP, PP, micro batch) | 4 GPU  | 8 GPU  | 16 GPU | 32 GPU | 64 GPU  | 128 GPU |
| (2, 1, 1, 1)              | -      | 497.56 | 494.06 | 493.34 | 492.28  |         |
| (2, 1, 1, 2)              | -      | -      | -      | -      | -       |         |
| (2, 1, 1, 4)              | -      | -      | -      | -      | -       | -       |
| (2, 2, 1, 1)              | 425.29 | 432.15 | 420.1  | 388.7  | 365.75  |         |
| (2, 2, 1, 2)              | 453.76 | 463.88 | 459.94 | 452.71 | 436.77  |         |
| (2, 2, 1, 4)              | -      | -      | -      | -      | -       |         |
| (2, 2, 1, 8)              | -      | -      | -      | -      | -       |         |
| (4, 1, 1, 1)              | 442.54 | 448.18 | 438.37 | 406.59 | 384.14  |         |
| (4, 1, 1, 2)              | 451.1  | 468.49 | 462.28 | 453.71 | 457.36  |         |
| (4, 1, 1, 4)              | -      | -      | -      | -      | -       |         |
| (2, 1, 2, 1)              | 448.13 | 450.76 | 433.43 | 399.61 | 365.75  |         |
| (2, 1, 2, 2)              | -      | -      | -      | -      | 436.77  |         |
| (2, 1, 2, 4)              | -      | -      | -      | -      | -       |         |
| (1, 2, 1, 1)              | -      | -      | -      | -      |         |         |
| (1, 2, 1, 2)              | -      | -      | -      | -      |         |         |
| (1, 4, 1, 1)              | -      | 501.05 | 439.89 | 409.41 | 363.59  |         |
| (1, 4, 1, 2)              | -      | -      | -      | -      | -       |         |
| (1, 4, 1, 4)              | -      | -      | -      | -      | -       |         |
| (2, 4, 1, 1)              |        | 288.42 | 290.7  | 267.03 |         |         |
| (2, 4, 1, 2)              |        | 272.96 | 293.26 | 279.53 |         |         |
| (4, 2, 1, 1)              |        | 303.46 | 295.71 | 295.71 |         |         |
| (4, 2, 1, 2)              |        | 297.73 | 299.95 | 299.95 |         |         |
"""
GPUS = (4, 8, 16, 32, 64, 128)


def page_cells() -> list[tuple[int, tuple, int, float]]:
    """(seq, (TP, CP, PP, mb), GPUs, value) per printed number, in the page's order ('-' and blank cells skipped)."""
    cells, seq = [], None
    for line in PAGE.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if parts[0].startswith("(TP"):
            seq = 8192 if seq is None else 16384
            continue
        key = tuple(int(x) for x in parts[0].strip("()").split(","))
        for gpus, cell in zip(GPUS, parts[1:], strict=True):
            if cell and cell not in ("-", "\u30fc"):
                cells.append((seq, key, gpus, float(cell)))
    return cells


def test_every_printed_cell_is_one_row_in_the_pages_order():
    cells = page_cells()
    assert len(cells) == len(DOC["runs"]) == 112
    assert sum(seq == 16384 for seq, *_ in cells) == 46
    for (seq, (tp, cp, pp, mb), gpus, value), run in zip(cells, DOC["runs"], strict=True):
        par = run["parallel"]
        assert (run["model"]["seq"], par["tp"], par["cp"], par["pp"], run["batch"]["micro_batch"]) == (seq, tp, cp, pp, mb)
        assert run["gpus"] == gpus and run["measured"]["tflops_per_gpu"] == value
        assert par["dp"] * tp * cp * pp == gpus
        assert run["model"]["vocab"] == -(-128256 // (128 * tp)) * 128 * tp     # Megatron pads to 128 x TP


def test_every_row_not_compared_and_held_out():
    usage = DOC["simcluster"]
    assert usage["held_out"] is True and usage["source_group"] == "llm-fujii-4d"
    assert sorted(usage["runs_not_compared"]) == list(range(112))
    assert len(set(usage["runs_not_compared"].values())) == 1 and "94GB" in usage["runs_not_compared"][0]


@pytest.fixture(scope="module")
def validation():
    return published_llm_validation([PUBLISHED / NAME])


def test_no_row_is_predicted_and_each_lands_in_its_family(validation):
    rows = validation.rows
    assert len(rows) == 112 and not validation.skipped
    assert all(r.error is None and r.unavailable and r.held_out for r in rows)
    assert [r.family for r in rows] == ["Megatron/NeMo"] * 66 + ["long-sequence"] * 46


def test_the_study_leaves_out_exactly_the_repeated_16k_cells():
    study = load_script("studies/lseq54_tsubame_proxy.py")
    table = [{"i": i, "seq": r["model"]["seq"], "meas": r["measured"]["tflops_per_gpu"]} for i, r in enumerate(DOC["runs"])]
    left = study.repeated_16k(table)
    assert {(DOC["runs"][i]["gpus"], DOC["runs"][i]["measured"]["tflops_per_gpu"]) for i in left} == {
        (64, 365.75), (64, 436.77), (16, 295.71), (32, 295.71), (16, 299.95), (32, 299.95)}
    assert len(left) == 8
