"""`simcluster validate --decisions` (simcluster/reference/decisions.py): NCCL's logged decisions against the decision
model, held out where a log's content differs from the model's sources (split from test_reference.py, mendC47)."""

import json
from pathlib import Path

from simcluster.reference.decisions import validate_decisions

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "calibration" / "published"


def test_decisions_agree_with_every_tuning_log_and_none_is_held_out():
    """930 of 930 logged (log, op, size) decisions, as tests/test_nccl_tuner.py counts them, through the command's
    library; every log here is in calibration/nccl-decision-model.yaml or says what one there says (the fifth machine's,
    session 25: the same decisions), so none is held out."""
    v = validate_decisions(ROOT / "calibration")
    t = v.totals()
    assert (t["logs"], t["decisions"], t["agree"], t["channels_agree"]) == (43, 930, 930, 930)
    assert t["held_out_decisions"] == 0 and not v.skipped
    assert all("(hopper), 1 node, NCCL 2.28.3, NVLS off" in s.configuration for s in v.sources)


def _bundle_with_log(tmp_path: Path, text: str) -> Path:
    bundle = tmp_path / "bundle"
    run = bundle / "nccl-tests" / "all_reduce-tuning"
    run.mkdir(parents=True)
    (run / "stdout.txt").write_text(text)
    manifest = {"host": {"gpus": [{"name": "NVIDIA H200"}]}, "runs": [
        {"tool": "nccl-tests", "run_id": "all_reduce-tuning", "status": "ok", "path": "nccl-tests/all_reduce-tuning",
         "meta": {"op": "all_reduce", "role": "tuning"}}]}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


def test_held_out_means_other_content_not_other_bytes_and_a_disagreement_is_shown(tmp_path):
    log = ROOT / "calibration/h200x4-graph-2026-11-22/nccl-tests/all_reduce-tuning/stdout.txt"
    text = log.read_text() + "\n"                                        # other bytes, the same decisions: in sample
    [source] = validate_decisions(_bundle_with_log(tmp_path / "a", text)).sources
    assert not source.held_out and source.agree == source.decisions == 30
    changed = text.replace("AllReduce: 8 Bytes -> Algo RING", "AllReduce: 8 Bytes -> Algo TREE")   # every rank's line
    [source] = validate_decisions(_bundle_with_log(tmp_path / "b", changed)).sources
    assert source.held_out and source.agree == 29 and "logged TREE/LL" in source.misses[0]
    multi = text.replace("nNodes 1 ", "nNodes 2 ")
    [source] = validate_decisions(_bundle_with_log(tmp_path / "c", multi)).sources
    assert "multi-node" in source.unavailable
