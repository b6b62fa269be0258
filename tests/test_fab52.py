"""Session 52 (issue 41, helper fab52): H200 against H100 across nodes. studies/fab52_h200.py prints its committed
output, and the model prices an H200 node's collectives as an H100 node's (NCCL keys its choice, channels and tuner
rates by compute capability, sm90 for both: src/graph/tuning.cc, search.cc, nvls.cc at v2.26.2-1 / v2.29.7-1), so a
scenario that differs only in its GPU card predicts the same all_reduce."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import ROOT, load_script

from simcluster import scenario
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.ring_flows import ring_flows
from simcluster.machine_models import build_cluster

AZURE_H200 = ROOT / "scenarios" / "published" / "azure-ndv5-h200-x2-azcluster.yaml"


def test_the_study_prints_its_committed_output(capsys):
    study = load_script("studies/fab52_h200.py")
    study.main()
    assert capsys.readouterr().out == (ROOT / "studies" / "fab52_h200.txt").read_text()


def _cluster(tmp_path, gpu_card: str):
    doc = copy.deepcopy(yaml.safe_load(AZURE_H200.read_text()))
    for key in ("card", "gpu", "nic", "nvls"):
        sub = doc["machine"][key]
        if isinstance(sub, dict):
            sub["card"] = str((AZURE_H200.parent / sub["card"]).resolve())
        else:
            doc["machine"][key] = str((AZURE_H200.parent / sub).resolve())
    doc["machine"]["gpu"]["card"] = str(ROOT / "models" / "gpu" / gpu_card)
    path = tmp_path / f"{gpu_card}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return build_cluster(scenario.load(path).machine)


@pytest.mark.parametrize("size", [64 << 20, 1 << 30, 16 << 30])
def test_an_h200_node_prices_as_an_h100_node(tmp_path, size):
    h200, h100 = _cluster(tmp_path, "h200-sxm.yaml"), _cluster(tmp_path, "h100-sxm.yaml")
    assert h200.arch == h100.arch == "hopper"
    a = predict_fabric(h200, "all_reduce", size, None, ring_flows(h200))
    b = predict_fabric(h100, "all_reduce", size, None, ring_flows(h100))
    assert a.algorithm == b.algorithm == "nvls-tree"
    assert a.time_s == b.time_s
