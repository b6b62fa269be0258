"""The multi-node nccl-tests source session 51 (nccl51, issue 41) recorded: Azure ND96asr_v4 2 x 8 A100 under AKS
(Azure/aks-rdma-infiniband tests/expected-output.md at 143a253). Transcription checks on the printed numbers, and the
file's place in `validate --published nccl --held-out-systems`: held out, its own source, fitted on the other systems
of its NIC family only, counted in the headline."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT

from simcluster.reference import nccl_held_out as ho
from simcluster.reference.nccl import read_nccl_file
from simcluster.scenario import load_variants

NAME = "nccl-azure-ndv4-a100-x2-aks"
PATH = ROOT / "calibration" / "published" / f"{NAME}.yaml"
DOC = yaml.safe_load(PATH.read_text())


@pytest.mark.parametrize("i", range(len(DOC["runs"])))
def test_row_identities(i):
    """Each row, both columns: busbw / algbw = 2 (n - 1) / n with n = 16 ranks (to the printed two decimals), algbw =
    bytes / time (GB/s, 1e9 B) within the rounding of the printed time; sizes are the factor-4 sweep's from 128 MiB."""
    run = DOC["runs"][i]
    assert run["op"] == "all_reduce" and run["ranks"] == 16 and run["nodes"] == 2
    assert run["bytes"] == 128 * 2**20 * 4**i
    for col in (run, run["in_place"]):
        assert abs(col["busbw_GBps"] - col["algbw_GBps"] * 2 * 15 / 16) <= 0.011
        assert col["algbw_GBps"] == pytest.approx(run["bytes"] / (col["time_us"] * 1e3), rel=0.003)


def test_file_is_held_out_and_loads_on_its_scenario():
    """Recorded before any prediction: held out, no row excepted, not development, not excluded, its own source (not a
    group: the NDm A100 v4 run is another source and another VM type; the grouped figure is in fabric-findings.md)."""
    sim = DOC["simcluster"]
    assert sim["held_out"] is True
    assert not {"runs_not_held_out", "runs_not_compared", "development_for", "excluded_why", "source_group"} & set(sim)
    ref = read_nccl_file(PATH)
    assert len(ref.runs) == 4
    machine = load_variants(str(PATH.parent / sim["scenario"]))[0][1].machine
    assert machine.nodes == 2 and machine.gpus_per_node == 8


@pytest.fixture(scope="module")
def results():
    return ho.held_out_systems()


def test_counted_in_the_held_out_table(results):
    """The system is in the verbs 200G family, predicted from the family's other sources only (never itself), its four
    rows compared; it counts once in the sources headline, as a fitted, non-development source."""
    mine = next(r for r in results if r.system == NAME)
    assert mine.family == "verbs 200G" and mine.rows == 4 and len(mine.row_errors_pct) == 4
    assert NAME not in mine.fitted_on and mine.fitted_on and mine.eta is not None
    assert not mine.development and not mine.outlier
    src = next(s for s in ho.sources(results) if NAME in s.systems)
    assert src.systems == (NAME,) and src.fitted and not src.development
    assert src.held_out_pct == pytest.approx(mine.held_out_pct)
    out = ho.text(results)
    assert any(line.startswith(NAME) for line in out.splitlines())
    within = sum(s.held_out_pct <= ho.TARGET_PCT for s in ho.sources(results))
    assert f"sources within 10%: {within} of {len(ho.sources(results))} (" in out
