"""Issue 45: limits before work. Counts and sizes that would take minutes or gigabytes are refused when the input
is read, with one line naming the key and the limit."""

import pytest
import yaml
from conftest import ROOT

from simcluster.cli import main

MODELS = ROOT / "models"


def _scenario(tmp_path, nodes, gpus, nics, extra_job=None):
    doc = {"name": "limits", "machine": {"card": str(MODELS / "collective" / "h200x4-nvlink.yaml"), "gpus_per_node": gpus,
                                         "nodes": nodes, "nic": {"card": str(MODELS / "nic" / "roce-400g.yaml"), "per_node": nics},
                                         "fabric": {"kind": "leaf-spine"}},
           "jobs": [extra_job or {"kind": "qperf", "tests": ["tcp_bw"]}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _one_line(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.startswith("simcluster: error:") and "\n" not in err
    return err


@pytest.mark.parametrize("nodes,gpus,nics,expect", [
    (16384, 8, 16, "16384 nodes x 16 NICs is 262,144 NICs; at most 131,072"),
    (2, 8, 1024, "machine.nic.per_node: expected an integer from 1 to 64, got 1024")])
def test_nic_counts_are_bounded_before_the_fabric_is_built(tmp_path, capsys, nodes, gpus, nics, expect):
    assert expect in _one_line(capsys, ["run", _scenario(tmp_path, nodes, gpus, nics)])
