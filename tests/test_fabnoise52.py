"""Session 52 (issue 41, helper fabnoise52): how far apart published multi-node nccl-tests runs of one machine kind
disagree. studies/fabnoise52.py prints its committed output; its pairing rule is checked on hand-picked rows read from
the published files (the numbers below are the files' own busbw columns)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
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


def test_the_two_nccltests309_clusters_pair_at_four_nodes_as_different_sources(rows, pairs):
    """Session 53 (fabpub53): nccl-tests#309's first cluster's tables (its 4-node run on VMs, 364.93 GB/s at 8 GiB) and
    the second reporter's cluster (324.52), both 4 x 8 H100 over 8 x 400G IB, all_reduce 8 GiB at NCCL's choice: the
    first cross-source pair at 4 nodes, spread 364.93 / 324.52 - 1 = 12.5%; at 2 nodes the same two agree within 0.4%
    at 8 GiB (468.46 / 466.73). The first cluster's peak file and its tables are one source_group, never paired as
    different sources."""
    first = _row(rows, "nccl-h100-ib-x2-x4-nccltests309-tables", 8 << 30, nodes=4)[0]
    second = _row(rows, "nccl-h100-ib-x2-x8-nccltests309-second", 8 << 30, nodes=4)[0]
    assert (first.busbw_GBps, second.busbw_GBps) == (364.93, 324.52) and first.source != second.source
    (p,) = _pair(pairs, first, second)
    assert p.relation == "different sources" and p.spread_pct == pytest.approx((364.93 / 324.52 - 1) * 100)
    two = [_row(rows, f, 8 << 30)[0] for f in ("nccl-h100-ib-x2-x4-nccltests309-tables", "nccl-h100-ib-x2-x8-nccltests309-second")]
    (p2,) = _pair(pairs, *two)
    assert p2.spread_pct == pytest.approx((468.46 / 466.73 - 1) * 100)
    peak = [r for r in rows if r.file == "nccl-h100-ib-x2-x4-nccltests309"]
    assert peak and {r.source for r in peak} == {first.source} == {"nccltests309-first"}


def test_no_source_outside_the_target_sits_at_its_noise_floor_so_no_collective_regime_is_marked(study, rows, pairs):
    """fabric.md's reading: of the sources outside 10% held out, none is at the floor of independent measurements of its
    kind (model misses or not told), so trust/noise.FLOOR_VERDICTS carries no across-nodes record. Recomputed from the
    records: a new file that puts a source at its floor fails here, and the record is then to be reconsidered. Session 54
    (mendA54, cold review A54 item 2): the MGHPCC DGX H100 file read 'noise floor' only because its floor was its own
    distance from peers that agree within ~1% (true by construction); with the peers' spread among themselves (revision
    3) its source (chris-nccl-notes, with the Lambda 1CC file, which is *) reads a model miss: paired rows' floor ~1%,
    the model 76.9% off."""
    from simcluster.reference.nccl_held_out import held_out_systems, sources
    from simcluster.trust.noise import FLOOR_VERDICTS

    held = {s.source: (s.rows, s.held_out_pct) for s in sources(held_out_systems())}
    verdicts = {v.name: v for v in study.classify(rows, pairs, held)}
    outside = [v for v in verdicts.values() if v.held_out_pct > study.TARGET_PCT]
    assert outside and [v.source for v in outside if v.verdict == "noise floor"] == []
    notes = verdicts["chris-nccl-notes [other files]"]
    assert notes.verdict == "model miss" and notes.floor_pct < 5 < 50 < notes.model_paired_pct
    assert not [v for v in FLOOR_VERDICTS if v.regime.startswith("collective")]


def test_a_source_far_from_peers_that_agree_is_a_miss_not_at_its_floor(study):
    """Cold review A54 item 2 (mendA54): a, b, c agree within 2% on a 2-node all_reduce; s measures 50 GB/s, the model
    (near a, b, c) 100% off s. The distance alone gives s a floor of ~100% (its own deviation: 'noise floor' by
    construction); the peers' median spread among themselves (2%) makes it a model miss. With one partner only (s and a)
    the two cannot be told apart: the distance stays the floor, and a model at it is not told (revision 4, mendF54, final
    read 54 item 6: before it, "noise floor" by construction)."""
    rows = [_synthetic(study, s, f"f{s}", K, AR2, 100.0 + i, 1.0) for i, s in enumerate("abc")]
    rows.append(_synthetic(study, "s", "fs", K, AR2, 50.0, 100.0))
    held = {"a": (1, 1.0), "b": (1, 1.0), "c": (1, 1.0), "s": (1, 100.0)}
    v = _verdicts(study, rows, held)["s"]
    assert v.floor_pct == pytest.approx(np.median([1.0, 2.0, 100 * (102 / 101 - 1)]))
    assert v.verdict == "model miss"
    assert study.floor_of("s", rows, study.pairs_of(rows))[("fs", 0)] == pytest.approx(100 * np.mean([0.0, 0.02, 0.04]) + 100)
    two = _verdicts(study, [rows[0], rows[3]], {"a": (1, 1.0), "s": (1, 100.0)})["s"]
    assert two.floor_pct == pytest.approx(100.0) and two.verdict == "not told: one partner source (its distance is the floor)"


def _synthetic(study, source, file, kind, key, busbw, model_pct, outlier=False, run=0):
    return study.Row(file, source, run, kind, key, busbw, model_pct, outlier, False)


K, K2 = ("H100", "rdma-ib", 3200, 8), ("H200", "rdma-ib", 3200, 8)
AR2, AG4 = (2, "all_reduce", False, (1 << 30,), None, None, None), (4, "all_gather", False, (1 << 30,), None, None, None)
AG8 = (8, "all_gather", False, (1 << 30,), None, None, None)


def _verdicts(study, rows, held):
    return {v.name: v for v in study.classify(rows, study.pairs_of(rows), held)}


def test_classify_on_synthetic_rows_reaches_each_verdict(study):
    """Cold review A52 items 2, 3 and 7: every branch of the verdict on hand-made rows (busbw in GB/s, the model's
    held-out error in %). Three sources a, b, c measure one 2-node all_reduce (spreads 2% / 4%: the floor); d has one
    2-node all_reduce row and one 4-node all_gather row, e a row of another shape only, f is a * slow cluster."""
    rows = [_synthetic(study, "a", "fa", K, AR2, 100.0, 1.0), _synthetic(study, "b", "fb", K, AR2, 102.0, 9.0),
            _synthetic(study, "c", "fc", K, AR2, 104.0, 1.0),
            _synthetic(study, "d", "fd", K, AR2, 50.0, 1.0, run=0), _synthetic(study, "d", "fd2", K, AG4, 80.0, 30.0, run=1),
            _synthetic(study, "e", "fe", K, AG8, 80.0, 30.0), _synthetic(study, "f", "ff", K, AR2, 20.0, 70.0, outlier=True),
            _synthetic(study, "g", "fg", K2, AR2, 10.0, 1.0), _synthetic(study, "h", "fh", K2, AR2, 10.1, 5.0)]
    rows[3] = dataclasses.replace(rows[3], key=(2, "all_reduce", False, (2 << 30,), None, None, None))  # d: no partner
    held = {"a": (1, 1.0), "b": (1, 9.0), "c": (1, 20.0), "d": (2, 15.5), "e": (1, 30.0), "f": (1, 70.0),
            "g": (1, 1.0), "h": (1, 5.0)}
    v = _verdicts(study, rows, held)
    assert v["a"].verdict == "noise floor"                    # 1% against partners 2% / 4% away (mean 3%; b-c 2%: mendA54)
    assert v["b"].verdict == "within 10%, above its floor"    # 9% > its partners' 2%/2%: above, but inside the target
    assert v["c"].verdict == "noise floor"                    # c's partners sit 3.8% / 1.9% from it: 1% at its floor
    held["c"] = (1, 20.0)
    rows_c = [dataclasses.replace(r, model_pct=20.0) if r.source == "c" else r for r in rows]
    assert _verdicts(study, rows_c, held)["c"].verdict == "model miss"          # outside 10%, above its floor
    # d: its 2-node all_reduce row (a size nobody else ran) judged on the kind's spread (3 file pairs, 3 sources),
    # its 4-node all_gather row not (no pair of that shape): partly told
    assert (v["d"].judged_rest, v["d"].rest) == (1, 2) and v["d"].verdict == "partly told (judged rows at the floor)"
    assert v["e"].verdict == "not told: no pair of its rows' shape (nodes, op)"
    assert v["f"].verdict == "outlier / slow cluster (held-out *): not judged"    # never a model miss
    # g and h: another kind with one file pair between two sources: too few for a kind spread; one partner source each:
    # g at the distance is not told (revision 4), h above it is above its floor, on one pair
    assert v["g"].verdict == "not told: one partner source (its distance is the floor)"
    assert v["h"].verdict == "within 10%, above its floor; on one file pair"
    lone = _verdicts(study, rows + [_synthetic(study, "i", "fi", K2, AG4, 5.0, 3.0)], {**held, "i": (1, 3.0)})
    assert lone["i"].verdict.startswith("not told: too few pairs of its kind")


def test_a_source_of_two_kinds_is_judged_per_kind(study):
    """Cold review A52 item 7: a source with an H100 row and an H200 row, each unpaired: each row is judged against its
    own kind's spread (the H100 one here), and the H200 row, whose kind has no pairs, is not judged."""
    rows = [_synthetic(study, s, f"f{s}", K, AR2, 100.0 + i, 1.0) for i, s in enumerate("abc")]
    odd = (2, "all_reduce", False, (4 << 30,), None, None, None)
    rows += [_synthetic(study, "x", "fx1", K, odd, 90.0, 1.0), _synthetic(study, "x", "fx2", K2, odd, 95.0, 40.0)]
    v = _verdicts(study, rows, {"a": (1, 1.0), "b": (1, 1.0), "c": (1, 1.0), "x": (2, 20.5)})["x"]
    assert v.kind == "H100 x8 InfiniBand 3200G/node / H200 x8 InfiniBand 3200G/node"
    assert (v.rest, v.judged_rest, v.rest_parts) == (2, 1, ("floor",))       # the 40% H200 row is not judged as H100
    assert v.verdict == "partly told (judged rows at the floor)"


def test_a_source_mixing_a_slow_cluster_file_is_judged_on_its_other_rows_only(study):
    """Cold review B53 item 1 (mendB53): source m has a * file (a slow cluster, 20 GB/s, the model 70% off) and a file
    of another shape; the * row is neither paired with a, b, c nor judged, so m's verdict comes from its other row alone
    (not "model miss" on the slow cluster's distance from the healthy sources), and m is not an outlier source.
    Cold review B55 item 3 (mendB55): m is printed as two parts, each with its own rows and figure: the * part's 70%
    never labels the other part's verdict (m's whole-source 41% did before)."""
    rows = [_synthetic(study, s, f"f{s}", K, AR2, 100.0 + 2 * i, 1.0) for i, s in enumerate("abc")]
    rows += [_synthetic(study, "m", "fm1", K, AR2, 20.0, 70.0, outlier=True), _synthetic(study, "m", "fm2", K, AG8, 80.0, 12.0)]
    both = _verdicts(study, rows, {"a": (1, 1.0), "b": (1, 1.0), "c": (1, 1.0), "m": (2, 41.0)})
    assert "m" not in both
    v, slow = both["m [other files]"], both["m [* files]"]
    assert (v.paired, v.floor_pct, v.rest, v.outlier, v.rows, v.held_out_pct) == (0, None, 1, False, 1, 12.0)
    assert v.verdict == "not told: no pair of its rows' shape (nodes, op)"
    assert (slow.rows, slow.held_out_pct, slow.verdict) == (1, 70.0, "outlier / slow cluster (held-out *): not judged")
    alone = _verdicts(study, rows[:4], {"a": (1, 1.0), "b": (1, 1.0), "c": (1, 1.0), "m": (1, 70.0)})["m"]
    assert alone.verdict == "outlier / slow cluster (held-out *): not judged"


def test_the_not_blind_rows_are_shown_beside_the_figures_without_them(capsys):
    """Cold review A53 item 3 (mendA53): nccl-tests#309's first cluster's 16 table rows and xa2a53's 2 EP-backend alltoall
    rows (final read 53 item 3, mendF53) are held out by commit order but not blind; studies/fabpub53_not_blind.py
    prints the held-out headline and fabnoise52's regime floors with and without them (the files out of the fit too),
    and its committed output is what it prints."""
    mod = load_script("studies/fabpub53_not_blind.py")
    mod.main()
    out = capsys.readouterr().out
    assert out == (ROOT / "studies" / "fabpub53_not_blind.txt").read_text()
    with_, without = (int(line.split(" rows: ")[0].rsplit(" ", 1)[1]) for line in out.splitlines() if " rows: mean" in line)
    assert with_ - without == 18 == sum(1 for r in load_script("studies/fabnoise52.py").collect()
                                        if r.file in mod.NOT_BLIND)


def test_the_best_of_two_files_are_files_the_study_reads(study, rows):
    """Cold review B55 item 1 (mendB55): the files whose busbw is the better of out-of-place and in-place (marked + in
    part 1) name files the study reads, and each says so in its notes."""
    assert set(study.BEST_OF_TWO) <= {r.file for r in rows}
    for name in study.BEST_OF_TWO:
        assert "best of" in (ROOT / "calibration" / "published" / f"{name}.yaml").read_text().lower()
    # final read 55: the converse (a study file whose notes say best-of and that the tuple misses), and the mark printed
    saying = {r.file for r in rows if "best of" in (ROOT / "calibration" / "published" / f"{r.file}.yaml").read_text().lower()}
    assert saying == set(study.BEST_OF_TWO)
    # the mark on a synthetic row (today no best-of file enters a pair, so part 1 prints none), an outlier's too
    row = next(r for r in rows if r.file == study.BEST_OF_TWO[0])
    assert study.file_label(row).endswith("+") and study.file_label(dataclasses.replace(row, outlier=True)).endswith("*+")
    assert not study.file_label(next(r for r in rows if r.file not in study.BEST_OF_TWO)).endswith("+")
    # and in the committed print, every occurrence of such a file carries it (none today: the MIT file has no partner)
    printed = (ROOT / "studies" / "fabnoise52.txt").read_text()
    paired = {r.file for p in study.pairs_of(rows) for r in (p.a, p.b)}
    for name in study.BEST_OF_TWO:
        assert len(re.findall(rf"{re.escape(name)}[*~]*\+", printed)) == printed.count(name)
        assert (name in paired) == (name in printed)
