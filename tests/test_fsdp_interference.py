"""The H100 card's compute / NCCL interference (issue 44, session 43 fsdpfam) and the FSDP family read-out's misses list.

The published FSDP trainers (composer-fsdp, fms-fsdp, torchtitan-fsdp2) run their collectives beside compute at the GPU
card's measured `comm_overlap` (FrameworkSpec.comm_interference, llm/overlap.beside). Until session 43 the H100 card had
none, so every H100 FSDP row was priced with perfect overlap; the H200's measurement (same GH100 die) is carried to it
unchanged, not to the Ampere A100 card. Megatron's frameworks do not take the term, so no Megatron row moves."""

from __future__ import annotations

import dataclasses
import json

import yaml
from conftest import ROOT, load_script

from simcluster.hardware.gpu import load_gpu

PUBLISHED = ROOT / "calibration" / "published"


def test_the_h100_card_carries_the_h200_measurement_unchanged_and_the_a100_none():
    h100 = load_gpu(ROOT / "models" / "gpu" / "h100-sxm.yaml")[0]
    h200 = load_gpu(ROOT / "models" / "gpu" / "h200-sxm-interleaved.yaml")[0]
    a100 = load_gpu(ROOT / "models" / "gpu" / "a100-sxm-80gb.yaml")[0]
    assert (h100.overlap_compute_slowdown, h100.overlap_comm_rate) == (h200.overlap_compute_slowdown, h200.overlap_comm_rate)
    assert h100.overlap_compute_slowdown > 0 and h100.sm_count == h200.sm_count == 132   # the same die: the carry's reason
    lab = load_gpu(ROOT / "models" / "gpu" / "h100-sxm-interleaved.yaml")[0]              # the lab's H100 card: the same
    assert (lab.overlap_compute_slowdown, lab.overlap_comm_rate) == (h100.overlap_compute_slowdown, h100.overlap_comm_rate)
    assert (a100.overlap_compute_slowdown, a100.overlap_comm_rate) == (0.0, 1.0)          # Ampere: not measured, not carried
    source = yaml.safe_load((ROOT / "models" / "gpu" / "h100-sxm.yaml").read_text())["params"]["comm_overlap"]["source"]
    assert "h200-sxm-interleaved" in source and "session 43" in source


def _errors(name: str, without_interference: bool) -> dict[int, float]:
    """A published file's errors by run, as shipped or with the GPU card's comm_overlap taken off (reference/llm.py
    imports load_gpu when it prices a row, so the module attribute is what it reads)."""
    import simcluster.hardware.gpu as gpu_module
    from simcluster.reference.llm import validate_published_llm

    real = gpu_module.load_gpu

    def patched(path, *a, **k):
        cards = real(path, *a, **k)
        if without_interference:
            cards = (dataclasses.replace(cards[0], overlap_compute_slowdown=0.0, overlap_comm_rate=1.0), *cards[1:])
        return cards

    gpu_module.load_gpu = patched
    try:
        rows = validate_published_llm(PUBLISHED / name).rows
    finally:
        gpu_module.load_gpu = real
    return {r.run: r.error for r in rows if r.error is not None}


def test_interference_slows_the_h100_fsdp_rows_by_their_collectives_and_no_megatron_row():
    with_term, without = (_errors("llm-llmfoundry-mpt-h100-large-scale-fsdp.yaml", w) for w in (False, True))
    assert set(with_term) == set(without) == set(range(18))
    assert all(with_term[i] < without[i] for i in with_term)   # every FSDP row slower with the term
    # the no-checkpointing MPT 7b rows, whose collectives are the largest share of the step, move most (12-18 points)
    moved = {i: without[i] - with_term[i] for i in with_term}
    assert min(moved[i] for i in (9, 10, 11)) > max(moved[i] for i in (6, 7, 8)) + 0.05
    megatron = "llm-dgxc-benchmarking-v25.04-llama31-h100.yaml"
    assert _errors(megatron, False) == _errors(megatron, True)


def test_the_rows_that_prompted_it_are_development_and_say_so():
    """The H100 rows that prompted carrying the interference, and (cold read C46 item 1) the A100 rows the card-scope
    choice was made with in view: development by the structured `held_out: false`, not by a match on their wording."""
    for name in ("llm-llmfoundry-mpt-h100-large-scale-fsdp.yaml", "llm-fms-fsdp-h100-compile.yaml", "llm-fms-fsdp-a100.yaml",
                 "llm-fms-fsdp-a100-feb2024.yaml", "llm-fms-fsdp-a100-compile.yaml", "llm-torchtitan-fsdp2-a100.yaml"):
        sim = yaml.safe_load((PUBLISHED / name).read_text())["simcluster"]
        assert sim["held_out"] is False and sim["why"].startswith("development since session 43 (fsdpfam")


def _row(source, run, error, held_out, config="MPT 7b, 512 x h100_80gb, t1 p1 d512 c1 v1 z3 none", regime="ZeRO-3/FSDP"):
    return {"source": source, "run": run, "configuration": config, "error_pct": error, "held_out": held_out,
            "regime": f"llm | PyTorch FSDP | {regime} | bf16"}


def test_family_readout_lists_held_out_and_development_misses_apart(tmp_path, capsys):
    study = load_script("studies/fsdp_family.py")
    rows = [_row("llm-llmfoundry-mpt-h100-large-scale-fsdp", 9, 20.2, True),
            _row("llm-torchtitan-fsdp2-a100", 6, -3.0, True, "Llama 2 70B, 64 x A100 SXM 80GB, t1 p1 d64 c1 v1 z3 op"),
            _row("llm-fms-fsdp-h100", 0, 10.8, False, "Llama 2 7B (fms 7b), 96 x H100, t1 p1 d96 c1 v1 z3 none HSDP shard 8"),
            {**_row("llm-x", 0, 50.0, True), "regime": "llm | Megatron | TP | bf16"},    # another family: not counted
            {**_row("llm-y", 1, None, True)}]                                           # not compared: not counted
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"rows": rows}))
    assert study.main(["--misses", "--json", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("PyTorch FSDP family") and " 2 rows " in out[0] and "within 10%: 1 of 2 (50%" in out[0]
    dev = next(line for line in out if line.startswith("development"))
    assert " 1 rows " in dev and "within 10%: 0 of 1" in dev
    held_misses = out.index("  misses, held out: 1 of 2")
    assert "llm-llmfoundry-mpt-h100-large-scale-fsdp" in out[held_misses + 1] and out[held_misses + 1].endswith("+20.2%")
    assert "seq  2048" in out[held_misses + 1] and "AC none" in out[held_misses + 1]   # the sequence from the published file
    dev_misses = out.index("  misses, development: 1 of 1")
    assert "HSDP" in out[dev_misses + 1] and out[dev_misses + 1].endswith("+10.8%")


def test_family_readout_bad_input_is_one_line(tmp_path, capsys):
    study = load_script("studies/fsdp_family.py")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert study.main(["--json", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.json" in err[0] and "rows" in err[0]
    assert study.main(["--json", str(tmp_path / "absent.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "absent.json: cannot read" in err[0]
