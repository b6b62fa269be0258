"""Session 52 (issue 41, helper fabnoise52): how far apart published multi-node nccl-tests runs of one machine kind
disagree. studies/fabnoise52.py prints its committed output; its pairing rule is checked on hand-picked rows read from
the published files (the numbers below are the files' own busbw columns)."""

from __future__ import annotations

import pytest
from conftest import ROOT, load_script


@pytest.fixture(scope="module")
def study():
    return load_script("studies/fabnoise52.py")


@pytest.fixture(scope="module")
def rows(study):
    return study.collect()


@pytest.fixture(scope="module")
def pairs(study, rows):
    return study.pairs_of(rows)


def _row(rows, file, size, nodes=2, algorithm=None):
    found = [r for r in rows if r.file == file and r.key[0] == nodes and r.key[3] == (size,) and r.key[4] == algorithm]
    assert len(found) >= 1, (file, size)
    return found


def _pair(pairs, a, b):
    return [p for p in pairs if {id(p.a), id(p.b)} == {id(a), id(b)}]


def test_the_study_prints_its_committed_output(study, capsys):
    study.main()
    assert capsys.readouterr().out == (ROOT / "studies" / "fabnoise52.txt").read_text()


def test_two_clouds_h100_ib_512mib_rows_pair_as_different_sources(rows, pairs):
    """Nebius's Kubernetes run (413.79 GB/s) and Together's (418.12), both 2 x 8 H100 over 8 x 400G IB, all_reduce
    512 MiB at NCCL's choice: one configuration from two sources, spread 418.12 / 413.79 - 1 = 1.05%."""
    nebius = _row(rows, "nccl-h100-ib-x2-nebius-skypilot", 512 << 20)[0]     # run 0, the Kubernetes run
    together = _row(rows, "nccl-h100-ib-x2-together-skypilot", 512 << 20)[0]
    assert (nebius.busbw_GBps, together.busbw_GBps) == (413.79, 418.12)
    (p,) = _pair(pairs, nebius, together)
    assert p.relation == "different sources"
    assert p.spread_pct == pytest.approx((418.12 / 413.79 - 1) * 100)


def test_azure_h200_measured_twice_pairs_in_its_file_and_with_crusoe(rows, pairs):
    """edwardsp/azcluster's ND H200 v5, all_reduce 16 GiB measured twice (VM 483.31, container 483.26): a same-file
    pair; Crusoe's 2 x 8 H200 over IB at 16 GiB (486.6) pairs with both as another source. The H100 v5 file of the same
    source has no 16 GiB row, and an H100 is another machine kind: no pair across GPUs."""
    vm, container = _row(rows, "nccl-azure-ndv5-h200-x2-azcluster", 16 << 30)
    crusoe = _row(rows, "nccl-crusoe-h200-ib-x2-cmk", 16 << 30)[0]
    (same,) = _pair(pairs, vm, container)
    assert same.relation == "same file" and same.spread_pct == pytest.approx((483.31 / 483.26 - 1) * 100)
    assert [p.relation for p in _pair(pairs, vm, crusoe) + _pair(pairs, container, crusoe)] == ["different sources"] * 2
    h100 = _row(rows, "nccl-azure-ndv5-h100-x2-azcluster", 8 << 30)[0]
    assert not any(h100 in (p.a, p.b) and "h200" in (p.a.file + p.b.file) for p in pairs)


def test_a_forced_algorithm_is_part_of_the_configuration(rows, pairs):
    """Together's 2-node 32 GiB rows forced Ring and forced Tree: each pairs with its twin file's row of the same
    algorithm only (same source), never ring with tree."""
    ring = _row(rows, "nccl-b200-ib-x62-together-0511", 32 << 30, algorithm="ring")[0]
    tree = _row(rows, "nccl-b200-ib-x62-together-0511", 32 << 30, algorithm="tree")[0]
    assert not _pair(pairs, ring, tree)
    twins = [p for p in pairs if ring in (p.a, p.b)]
    assert len(twins) == 1 and twins[0].relation == "same source"
    assert {p.a.file for p in twins} | {p.b.file for p in twins} == {"nccl-b200-ib-x62-together-0511",
                                                                     "nccl-b200-ib-x64-together-scaling"}


def test_no_model_figure_enters_a_pair(study, rows, pairs):
    """The spread is measured busbw against measured busbw: changing every row's model error leaves the pairs' spreads."""
    import dataclasses

    moved = [dataclasses.replace(r, model_pct=r.model_pct + 50) for r in rows]
    assert [p.spread_pct for p in study.pairs_of(moved)] == [p.spread_pct for p in pairs]


def test_no_source_outside_the_target_sits_at_its_noise_floor_so_no_collective_regime_is_marked(study, rows, pairs):
    """fabric.md's reading: of the sources outside 10% held out, none is at the floor of independent measurements of its
    kind (model misses or not told), so trust/noise.FLOOR_VERDICTS carries no across-nodes record. Recomputed from the
    records: a new file that puts a source at its floor fails here, and the record is then to be reconsidered."""
    from simcluster.reference.nccl_held_out import held_out_systems, sources
    from simcluster.trust.noise import FLOOR_VERDICTS

    held = {s.source: (s.rows, s.held_out_pct) for s in sources(held_out_systems())}
    verdicts = study.classify(rows, pairs, held)
    outside = [v for v in verdicts if v.held_out_pct > study.TARGET_PCT]
    assert outside and not [v.source for v in outside if v.verdict == "noise floor"]
    assert not [v for v in FLOOR_VERDICTS if v.regime.startswith("collective")]
