"""The published file session 52 (publ52, issue 44) recorded: NVIDIA's NeMo Megatron 22.08 launcher README scaling tables
(GPT-3 5B on 1-32 and 175B on 8-128 DGX A100 80GB nodes), a held-out Megatron/NeMo source outside dgxc-benchmarking.
Transcription checks (the printed speed-up row against the recorded tokens, the layouts against the GPU counts, the
padded vocabularies), the rows compared, held out and in their family, and the errors they were predicted once with."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT, published_llm_validation

PUBLISHED = ROOT / "calibration" / "published"
NAME = "llm-nemo-megatron-launcher-22.08-gpt3-a100.yaml"
DOC = yaml.safe_load((PUBLISHED / NAME).read_text())
# the README's printed 'Speed-up' rows at 3579cdb3 (tokens / the first column's tokens, two decimals)
SPEEDUP = {"5B": (1, 1.98, 4.01, 7.75, 16.35, 28.73), "175B": (1, 1.99, 3.94, 7.76, 14.62)}
NODES = {"5B": (1, 2, 4, 8, 16, 32), "175B": (8, 16, 32, 64, 128)}


def _runs(size):
    return [r for r in DOC["runs"] if f", {size}, " in r["table"]]


@pytest.mark.parametrize("size", ["5B", "175B"])
def test_recorded_tokens_reproduce_the_printed_speed_up_row(size):
    """Each recorded 'Tokens per Second' over its table's first gives the README's printed speed-up (to its 0.01), and the
    row's GPUs are its node count x 8, its data parallelism GPUs / (TP x PP)."""
    runs = _runs(size)
    assert len(runs) == len(SPEEDUP[size])
    first = runs[0]["measured"]["tokens_per_s"]
    for run, printed, nodes in zip(runs, SPEEDUP[size], NODES[size], strict=True):
        assert run["measured"]["tokens_per_s"] / first == pytest.approx(printed, abs=0.006), run["table"]
        assert run["gpus"] == 8 * nodes and f" {nodes} node" in run["table"]
        par = run["parallel"]
        assert par["tp"] * par["pp"] * par["dp"] == run["gpus"]


def test_vocabularies_are_gpt2_padded_to_128_times_tp_and_the_configs_are_the_named_ones():
    def padded(v, tp):
        return -(-v // (128 * tp)) * 128 * tp

    models = DOC["simcluster"]["assumptions"]["models"]
    assert models["GPT-3 5B (NeMo Megatron 22.08)"]["vocab"] == padded(50257, 1) == 50304
    assert models["GPT-3 175B (NeMo Megatron 22.08)"]["vocab"] == padded(50257, 8) == 51200
    assumed = DOC["simcluster"]["assumptions"]
    # recorded 1; 2 after mendC52 (cold review C52 item 1: apex's class docstring 'the ZeRO-2 algorithm'); 1 again since
    # session 53 fsdp53 (NeMo v1.11.0 turns the overlapped grad sync off at PP > 1 / sequence parallel and keeps a full
    # fp32 gradient buffer: one reduce-scatter a step, gradients unsharded in memory; the file's notes)
    assert (assumed["micro_batch"], assumed["global_batch"], assumed["zero"]) == (2, 2048, 1)
    assert "TRANSCRIPTION CORRECTION after the one prediction" in DOC["notes"] and "3c19f106" in DOC["notes"]
    assert "SECOND CORRECTION after the prints" in DOC["notes"] and "overlap_grad_sync = False" in DOC["notes"]
    assert {r["parallel"]["recompute"] for r in _runs("5B")} == {"none"} and {r["parallel"]["recompute"] for r in _runs("175B")} == {"selective"}


@pytest.fixture(scope="module")
def validation():
    return published_llm_validation([PUBLISHED / NAME])


def test_every_row_is_compared_held_out_and_megatron_nemo(validation):
    """No row is left out (runs_not_compared empty); each is held out, not development, in the Megatron/NeMo family (zero
    1 as first recorded and again since session 53 fsdp53; FSDP/ZeRO between mendC52 and fsdp53); the file carries its
    expectation; recorded as its own source, in the NeMo team's source_group from mendC52 (cold review C52 item 8) and
    its own source again since session 53 mendC53 (cold review C53 item 4: none of pubmix53's rules R1-R4 joins it)."""
    assert not DOC["simcluster"].get("runs_not_compared") and "EXPECTATION" in DOC["notes"]
    assert DOC["simcluster"]["held_out"] is True and not DOC["simcluster"].get("source_group")
    rows = [r for r in validation.rows if r.error is not None]
    assert len(rows) == 11 and not validation.skipped
    assert all(r.held_out and not r.development_for and r.family == "Megatron/NeMo" for r in rows)


# the 11 rows' errors as predicted once on 48976f09's model (validation/publ52-nemo-launcher-predicted-once.txt; + = fast),
# zero 1 as first recorded; then printed once more after the zero 1 -> 2 transcription correction (mendC52, cold review
# C52 item 1; validation/publ52-nemo-launcher-zero2-corrected.txt): rows 0-8 unchanged, rows 9 and 10 (DP 8 and 16, a
# reduce-scatter in every micro-batch's backward across nodes) +25.8 -> +22.7% and +26.1 -> +14.6%
PREDICTED_ONCE = {0: +0.0679, 1: +0.0715, 2: +0.0499, 3: +0.0777, 4: +0.0128, 5: +0.1359,
                  6: +0.2986, 7: +0.2883, 8: +0.2804, 9: +0.2585, 10: +0.2609}
ZERO2_CORRECTED = PREDICTED_ONCE | {9: +0.2275, 10: +0.1458}
# printed once more after session 53 fsdp53's second correction (zero 2 -> 1; validation/fsdp53-nemo-launcher-zero1-
# recorrected.txt), the model unchanged since the first print at these rows: the first print's errors again
ZERO1_RECORRECTED = dict(PREDICTED_ONCE)


def test_the_rows_errors_are_still_the_predicted_once_ones(validation):
    """As session 51's records test: a model change that moves these rows fails here; a change that moves them on purpose
    updates this table and says so in llm-findings (the predicted-once file stays as it was)."""
    got = {r.run: r.error for r in validation.rows if r.error is not None}
    assert got.keys() == ZERO1_RECORRECTED.keys()
    for run, error in ZERO1_RECORRECTED.items():
        assert got[run] == pytest.approx(error, abs=0.0005), run


def test_both_prints_are_kept_and_read_as_pinned():
    """The first print (zero 1), the corrected one (zero 2) and the re-corrected one (zero 1, fsdp53) are all committed;
    each one's error column is its table."""
    for name, pinned in (("publ52-nemo-launcher-predicted-once.txt", PREDICTED_ONCE),
                         ("publ52-nemo-launcher-zero2-corrected.txt", ZERO2_CORRECTED),
                         ("fsdp53-nemo-launcher-zero1-recorrected.txt", ZERO1_RECORRECTED)):
        lines = [x.split() for x in (ROOT / "validation" / name).read_text().splitlines()
                 if x.startswith("nemo-megatron-launcher-22.08-gpt3-a100 ")]
        printed = {int(x[1]): float(next(w for w in x if w.endswith("%"))[:-1]) for x in lines}
        assert printed.keys() == pinned.keys(), name
        for run, error in pinned.items():
            assert printed[run] == pytest.approx(100 * error, abs=0.06), (name, run)   # the print's one decimal


def test_the_families_print_names_it(validation):
    from simcluster.reference.families import FamilyValidation
    from simcluster.report.validation import render

    fams = {f["family"]: f for f in FamilyValidation(validation).families()}
    assert fams["Megatron/NeMo"]["held_out"]["rows"] == 11 and fams["FSDP/ZeRO"]["held_out"]["rows"] == 0
    lines = {tuple(x.split()[:3]): x for x in render(FamilyValidation(validation)).splitlines() if len(x.split()) > 3}
    assert lines[("Megatron/NeMo", "held", "out")].endswith(" nemo-megatron-launcher-22.08-gpt3-a100")   # its own (mendC53)
