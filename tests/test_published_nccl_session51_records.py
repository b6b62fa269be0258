"""The multi-node nccl-tests sources session 51 (nccl51, issue 41) recorded: Azure ND96asr_v4 2 x 8 A100 under AKS
(Azure/aks-rdma-infiniband tests/expected-output.md at 143a253; one source_group with the NDm A100 v4 file), Azure ND H100
v5 / ND H200 v5 2 x 8 (edwardsp/azcluster, one source_group) and Crusoe H200 2 x 8 (crusoecloud/solutions-library).
Transcription checks on the printed numbers, and the files' place in `validate --published nccl --held-out-systems`: held
out, fitted on the other sources of their NIC family only, each source counted once."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT

from simcluster.reference import nccl_held_out as ho
from simcluster.reference.nccl import read_nccl_file
from simcluster.scenario import load_variants

PUBLISHED = ROOT / "calibration" / "published"
NAME = "nccl-azure-ndv4-a100-x2-aks"
PATH = PUBLISHED / f"{NAME}.yaml"
DOC = yaml.safe_load(PATH.read_text())
AZC = ("nccl-azure-ndv5-h100-x2-azcluster", "nccl-azure-ndv5-h200-x2-azcluster")
H100 = yaml.safe_load((PUBLISHED / f"{AZC[0]}.yaml").read_text())
H200 = yaml.safe_load((PUBLISHED / f"{AZC[1]}.yaml").read_text())
CRUSOE = "nccl-crusoe-h200-ib-x2-cmk"
CRU = yaml.safe_load((PUBLISHED / f"{CRUSOE}.yaml").read_text())


@pytest.mark.parametrize("i", range(len(DOC["runs"])))
def test_row_identities(i):
    """Each row, both columns: busbw / algbw = 2 (n - 1) / n with n = 16 ranks (to the printed two decimals), algbw =
    bytes / time (GB/s, 1e9 B) within the rounding of the printed time (busbw to 0.015: both figures rounded); sizes are the factor-4 sweep's from 128 MiB."""
    run = DOC["runs"][i]
    assert run["op"] == "all_reduce" and run["ranks"] == 16 and run["nodes"] == 2
    assert run["bytes"] == 128 * 2**20 * 4**i
    for col in (run, run["in_place"]):
        assert abs(col["busbw_GBps"] - col["algbw_GBps"] * 2 * 15 / 16) <= 0.015   # both printed to 2 decimals: 0.005 x 1.875 + 0.005
        assert col["algbw_GBps"] == pytest.approx(run["bytes"] / (col["time_us"] * 1e3), rel=0.003)


NDM = "nccl-azure-ndmv4-a100-x2-mscclpp"


def test_file_is_held_out_and_loads_on_its_scenario():
    """Recorded before any prediction: held out, no row excepted, not development, not excluded. One source with the NDm
    A100 v4 run (the lead's decision after cold review A51 item 3: its scenario's machine: block is the NDm one's, a near
    twin), so both files name the NDm file as their source_group."""
    sim = DOC["simcluster"]
    assert sim["held_out"] is True
    assert not {"runs_not_held_out", "runs_not_compared", "development_for", "excluded_why"} & set(sim)
    ndm = yaml.safe_load((PUBLISHED / f"{NDM}.yaml").read_text())["simcluster"]
    assert sim["source_group"] == ndm["source_group"] == NDM
    ref = read_nccl_file(PATH)
    assert len(ref.runs) == 4
    machine = load_variants(str(PATH.parent / sim["scenario"]))[0][1].machine
    assert machine.nodes == 2 and machine.gpus_per_node == 8


@pytest.fixture(scope="module")
def results():
    return ho.held_out_systems()


def test_counted_in_the_held_out_table(results):
    """The system is in the verbs 200G family, predicted from the family's other sources only (never itself nor its NDm
    twin), its four rows compared; with the NDm file it counts once in the sources headline (10 rows), as a fitted,
    non-development source."""
    mine = next(r for r in results if r.system == NAME)
    assert mine.family == "verbs 200G" and mine.rows == 4 and len(mine.row_errors_pct) == 4
    assert not {NAME, NDM} & set(mine.fitted_on) and mine.fitted_on and mine.eta is not None
    assert not mine.development and not mine.outlier
    src = next(s for s in ho.sources(results) if NAME in s.systems)
    assert set(src.systems) == {NAME, NDM} and src.rows == 10 and src.fitted and not src.development
    assert len([s for s in ho.sources(results) if NDM in s.systems]) == 1
    out = ho.text(results)
    assert any(line.startswith(NAME) for line in out.splitlines())
    assert f"= {NDM}: 2 files of one source" in out
    within = sum(s.held_out_pct <= ho.TARGET_PCT for s in ho.sources(results))
    assert f"sources within 10%: {within} of {len(ho.sources(results))} (" in out


@pytest.mark.parametrize("i", range(len(H100["runs"])))
def test_nd_h100_v5_row_identities(i):
    """The ND H100 v5 table, both columns: busbw = algbw x 30 / 16 (16 ranks) to the printed decimals, algbw = bytes /
    time within the printed time's rounding; sizes 64 MiB x 2^i."""
    run = H100["runs"][i]
    assert run["op"] == "all_reduce" and run["ranks"] == 16 and run["bytes"] == 64 * 2**20 * 2**i
    for col in (run, run["in_place"]):
        assert abs(col["busbw_GBps"] - col["algbw_GBps"] * 2 * 15 / 16) <= 0.015   # both printed to 2 decimals: 0.005 x 1.875 + 0.005
        assert col["algbw_GBps"] == pytest.approx(run["bytes"] / (col["time_us"] * 1e3), rel=0.003)


def test_azcluster_files_are_one_held_out_source():
    """Both azcluster files: held out, one source_group; the H200 rows are 10-cycle means at 16 GiB (no time printed),
    the CollNet (NCCL_COLLNET_ENABLE=1) AKS figure kept out of the runs."""
    for doc in (H100, H200):
        sim = doc["simcluster"]
        assert sim["held_out"] is True and sim["source_group"] == "edwardsp-azcluster"
        assert not {"runs_not_held_out", "development_for", "excluded_why"} & set(sim)
    assert [r["busbw_GBps"] for r in H200["runs"]] == [483.31, 483.26]
    assert all(r["bytes"] == 16 * 2**30 and "time_us" not in r for r in H200["runs"])
    assert "COLLNET_ENABLE=1" in H200["other_configurations"][0]["note"]


def test_azcluster_counted_once_in_the_held_out_table(results):
    """The two files are left out of the fit together (verbs 400G, neither fitted on the other) and count once."""
    files = [r for r in results if r.system in AZC]
    assert len(files) == 2 and all(r.family == "verbs 400G" and r.source == "edwardsp-azcluster" for r in files)
    for r in files:
        assert not set(AZC) & set(r.fitted_on) and r.fitted_on and not r.development
    src = [s for s in ho.sources(results) if s.source == "edwardsp-azcluster"]
    assert len(src) == 1 and set(src[0].systems) == set(AZC) and src[0].rows == 11
    assert "= edwardsp-azcluster: 2 files of one source" in ho.text(results)


def test_crusoe_h200_row_and_place(results):
    """The one Crusoe row: busbw = algbw x 30 / 16 and algbw = bytes / time (both columns); held out, its own source in
    the verbs 400G family, fitted on the family's other sources only; its notes say the prediction was not blind."""
    (run,) = CRU["runs"]
    for col in (run, run["in_place"]):
        assert abs(col["busbw_GBps"] - col["algbw_GBps"] * 2 * 15 / 16) <= 0.15   # printed to 1 decimal: 0.05 x 1.875 + 0.05
        assert col["algbw_GBps"] == pytest.approx(run["bytes"] / (col["time_us"] * 1e3), rel=0.003)
    assert CRU["simcluster"]["held_out"] is True and "NOT blind" in CRU["notes"]
    mine = next(r for r in results if r.system == CRUSOE)
    assert mine.family == "verbs 400G" and mine.rows == 1 and CRUSOE not in mine.fitted_on and mine.fitted_on
    assert next(s for s in ho.sources(results) if CRUSOE in s.systems).systems == (CRUSOE,)
