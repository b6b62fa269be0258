"""Issue 41 (session 42, onenode): the `collective one node` band's coverage by source, read from the shipped table
(trust/build.source_coverage, studies/onenode_by_source.py)."""

import statistics

import pytest
from conftest import ROOT, load_script

from simcluster.trust.build import held_out_coverage, source_coverage
from simcluster.trust.table import Residual, Table, load_table

FAMILY = "collective one node"
# The shipped table's one-node coverage with each source left out (error_bands.json as shipped at main 00129b00).
# `simcluster validate --error-bands` regenerates the table: update these three from
# `python studies/onenode_by_source.py` (its "all" line) and docs/accuracy.md's coverage table, on purpose.
# session 44: OCI's 2 x GB200.4 file is development (its rows prompted the NVLS fill mendA44 adopted above 8 GPUs only;
# held_out false), so its 10 rows left the table: 6 sources, 73.7% by source (68.9% with them)
# session 47 (mendA47): the OCI BM.GPU4.8 one-node A100 row, recorded alone and predicted once, joined as a 7th source:
# one row, inside the family pool's band, so by source 73.67 -> 77.43% (one row weighing as much as a machine's hundreds)
# session 49 (nccl49): OCI's GB200 quick-start page, one rack (64 GPUs in one NVLink domain), one tray and two trays'
# alltoall, recorded alone and predicted once: 10 rows, one source (its files' source_group, which the collective rows
# now carry into the bands as the LLM rows did: three files counted as three sources before), 77.43 -> 73.38% by source
SHIPPED_CHECKED, SHIPPED_COVERED, SHIPPED_BY_SOURCE_PCT = 1465, 1136, 73.38


def _table() -> Table:
    key = "collective | all_reduce | nvlink-card | >=64MiB | nvlink-h200"
    rows = [Residual(FAMILY, key, s, f"{s} {i}", 2.0, rho) for i, (s, rho) in
            enumerate([("a", 1.00), ("a", 1.02), ("b", 0.99), ("b", 1.01), ("c", 1.00), ("c", 0.98), ("c", 1.03)])]
    rows += [Residual(FAMILY, "collective | all_reduce | nvls | >=64MiB | nvlink-gb200", "d", "d 0", 8.0, 1.50)]
    return Table(rows)


def test_source_coverage_is_the_per_source_split_of_held_out_coverage():
    table = _table()
    by_source = source_coverage(table, FAMILY)
    assert set(by_source) == {"a", "b", "c", "d"}
    # d's regime has no other source's rows: its band is the family's pool ([0.98, 1.03]), which misses 1.50
    assert [c.covered for c in by_source["d"]] == [False] and not by_source["d"][0].validated
    cov = next(c for c in held_out_coverage(table) if c.family == FAMILY)
    assert cov.covered == sum(c.covered for v in by_source.values() for c in v)
    assert cov.by_source_pct == pytest.approx(100 * statistics.fmean(sum(c.covered for c in v) / len(v)
                                                                     for v in by_source.values()))


def test_shipped_table_one_node_coverage_is_the_pinned_one():
    """The shipped numbers the docs cite (73.7% by source since session 44): a regeneration that moves them fails here until the
    constants above and the docs are updated together."""
    table = load_table()
    cov = next(c for c in held_out_coverage(table) if c.family == FAMILY)
    assert (cov.checked, cov.covered) == (SHIPPED_CHECKED, SHIPPED_COVERED)
    assert round(cov.by_source_pct, 2) == SHIPPED_BY_SOURCE_PCT
    by_source = source_coverage(table, FAMILY)       # each source's rows: covered when rho lies in the band given
    for checks in by_source.values():                 # with that source left out, recounted from the bands here
        for c in checks:
            assert c.covered == (c.band[0] <= c.row.rho <= c.band[1]) and c.row.source not in ("", None)
    assert sum(c.covered for v in by_source.values() for c in v) == SHIPPED_COVERED


def test_nvls_chunk_follows_nccls_rule_at_the_oci_and_coreweave_sizes():
    study = load_script("studies/onenode_by_source.py")
    kib = 1024
    # 8 ranks, 32 channels (2.26): 128 KiB from 64 x 32 x 8 x 128 KiB = 2 GiB, 64 KiB from 128 MiB, 32 KiB from 16 MiB
    assert study.nvls_chunk(2 * 2**30, 32, 8) == 128 * kib and study.nvls_chunk(2**30, 32, 8) == 64 * kib
    assert study.nvls_chunk(128 * 2**20, 32, 8) == 64 * kib and study.nvls_chunk(64 * 2**20, 32, 8) == 32 * kib
    assert study.nvls_chunk(8 * 2**20, 32, 8) == 16 * kib
    # 72 ranks (32 heads): the switch to 128 KiB is at 8 GiB
    assert study.nvls_chunk(4 * 2**30, 32, 32) == 64 * kib and study.nvls_chunk(8 * 2**30, 32, 32) == 128 * kib


def test_study_prints_every_source_and_refuses_a_table_without_the_family(tmp_path, capsys):
    study = load_script("studies/onenode_by_source.py")
    study.main([])
    out = capsys.readouterr().out
    assert "each source weighing one" in out and "host-launched" in out and "nccl-oci-gb200-x2-mnnvl-oke" in out
    empty = tmp_path / "t.json"
    empty.write_text('{"rows": []}')
    with pytest.raises(SystemExit, match="no `collective one node` rows"):
        study.main(["--table", str(empty), "--published", str(ROOT / "calibration" / "published")])
    with pytest.raises(SystemExit, match=r"^error: --table .*missing.json: no such file$"):
        study.main(["--table", str(tmp_path / "missing.json")])
    broken = tmp_path / "broken.json"
    broken.write_text('{"rows": [')
    with pytest.raises(SystemExit, match=r"^error: .*broken.json: cannot read the error-band table"):
        study.main(["--table", str(broken)])
    malformed = tmp_path / "malformed.json"
    malformed.write_text('{"rows": [{"family": "collective one node"}]}')
    with pytest.raises(SystemExit, match=r"^error: .*malformed.json: not an error-band table"):
        study.main(["--table", str(malformed)])


def test_fill_prints_the_oci_rows_with_a_two_loop_fill(capsys):
    """Session 42's print (collectives-findings: the fill alone 11.6 -> 7.2%, covering 1 of 10) read OCI's rows from the
    shipped table; since session 44 that file is development (held_out false: the fill was adopted with its rows in
    view), so the table holds none and the study says so instead of printing a figure from rows it no longer has."""
    study = load_script("studies/onenode_by_source.py")
    study.main(["--fill"])
    out = capsys.readouterr().out
    assert "no nccl-oci-gb200-x2-mnnvl-oke rows in the table" in out
    assert "mean |error|" not in out.split("no nccl-oci-gb200-x2-mnnvl-oke rows")[1]
