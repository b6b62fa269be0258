"""`simcluster validate --published nccl` reading its files (choosers, forced algorithms, size ranges, held-out flags)
and the command line's tables, JSON and one-line errors (split from test_reference.py, mendC47)."""

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from simcluster.cli import main
from simcluster.errors import SimclusterError
from simcluster.reference.nccl import validate_published_nccl

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "calibration" / "published"


def test_flipping_the_flag_in_the_file_flips_the_rows(tmp_path):
    doc = (PUBLISHED / "nccl-h200-x248-nccltests283.yaml").read_text()
    scenario = ROOT / "scenarios" / "published" / "nccltests283-h200-x248.yaml"
    path = tmp_path / "nccl-x.yaml"
    path.write_text(doc.replace("../../scenarios/published/nccltests283-h200-x248.yaml", str(scenario))
                    .replace("held_out: true", "held_out: false"))
    [row] = validate_published_nccl(path).rows
    assert row.held_out is False and row.predicted > 0


def _p6_copy(tmp_path, chooser=None):
    doc = yaml.safe_load((PUBLISHED / "nccl-aws-p6-b200-x4.yaml").read_text())
    doc["simcluster"]["scenario"] = str(ROOT / "scenarios" / "published" / "aws-p6-b200-x4.yaml")
    if chooser is not None:
        doc["simcluster"]["chooser"] = chooser
    path = tmp_path / "nccl-p6.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_chooser_the_source_names_picks_the_algorithm_per_size(tmp_path):
    """P6-B200 ran AWS's ofi tuner plugin: its regions at 32 ranks put a ring at 64 MiB, the NVLS tree at 128-256 MiB
    and a ring from 512 MiB; a chooser given for another rank count leaves NCCL's own decision (NVLS tree at 64 MiB)."""
    rows = {r.run: r.detail for r in validate_published_nccl(PUBLISHED / "nccl-aws-p6-b200-x4.yaml").rows}
    assert rows[6].startswith("ring/") and rows[7].startswith("nvls-tree/") and rows[8].startswith("nvls-tree/")
    assert all(rows[i].startswith("ring/") for i in range(9, 15))
    other = {"source": "x", "ranks": 64, "algorithms": [[None, "ring"]]}
    rows = {r.run: r.detail for r in validate_published_nccl(_p6_copy(tmp_path, other)).rows}
    assert rows[6].startswith("nvls-tree/")


def test_a_chooser_by_rank_count_and_for_one_collective(tmp_path):
    """The HyperPod p5 file's ofi tuner table: per rank count (`by_ranks`), for all_reduce only (`op`), a null entry
    leaving the size to NCCL; 16 ranks (2 nodes, where the plugin falls back) and all_gather get NCCL's own choice."""
    rows = {r.run: r for r in validate_published_nccl(PUBLISHED / "nccl-aws-p5-hyperpod-x2-x32-gpucomm.yaml").rows}
    ar = {(r.configuration.split(",")[1].strip(), r.configuration.split()[1].rstrip(",")): r.detail
          for r in rows.values() if r.configuration.startswith("all_reduce")}
    assert ar[("32 x 8 H100", "64MiB")].startswith("tree/") and ar[("32 x 8 H100", "512MiB")].startswith("nvls-tree/")
    assert ar[("4 x 8 H100", "64MiB")].startswith("ring/") and ar[("16 x 8 H100", "4GiB")].startswith("nvls-tree/")
    assert ar[("2 x 8 H100", "64MiB")].startswith("nvls-tree/")          # NCCL's own choice at 2 nodes
    assert not any(r.detail.startswith("tree/") for r in rows.values() if r.configuration.startswith("all_gather"))
    gap = {"source": "x", "op": "all_reduce", "by_ranks": {32: [[None, None]]}}
    p6 = {r.run: r.detail for r in validate_published_nccl(_p6_copy(tmp_path, gap)).rows}
    assert p6[6].startswith("nvls-tree/")                                   # null: NCCL's decision model
    other_op = {"source": "x", "op": "all_gather", "ranks": 32, "algorithms": [[None, "ring"]]}
    p6 = {r.run: r.detail for r in validate_published_nccl(_p6_copy(tmp_path, other_op)).rows}
    assert p6[6].startswith("nvls-tree/")


def test_the_region_tuners_protocol_runs_with_its_algorithm(tmp_path):
    """AWS's region tuner sets the cost of one algorithm-protocol pair (nccl_ofi_regions.cpp,
    region_get_coll_info_internal_v3: collCostTable[algorithm][protocol] = 0.0), so a chooser entry `ring/LL128` runs
    LL128 where NCCL's own protocol for a forced ring would be Simple (session 43, engineer efa); `ring` alone keeps
    NCCL's; a protocol the algorithm cannot run here (NVLS tree, Simple only) is skipped as the tuner skips a pair NCCL
    marked ignored, NCCL's protocol for the algorithm runs and the row says so (session 43, mendC43)."""
    rows = {r.configuration: r.detail for r in validate_published_nccl(PUBLISHED / "nccl-aws-p5-hyperpod-x2-x32-gpucomm.yaml").rows}
    assert rows["all_reduce 1GiB, 4 x 8 H100"] == "ring/LL128"            # the ring LL128 region (NCCL alone: Simple)
    assert rows["all_reduce 8GiB, 4 x 8 H100"] == "ring/Simple"
    assert rows["all_reduce 256MiB, 16 x 8 H100"] == "tree/LL128"          # the tree LL128 region up to 288 MiB at 128 ranks
    plain = {"source": "x", "ranks": 32, "algorithms": [[None, "ring"]]}
    pair = {"source": "x", "ranks": 32, "algorithms": [[None, "ring/LL128"]]}
    ran = [{r.run: r.detail for r in validate_published_nccl(_p6_copy(tmp_path, c)).rows}[14] for c in (plain, pair)]
    assert ran == ["ring/Simple", "ring/LL128"]
    bad = {"source": "x", "ranks": 32, "algorithms": [[None, "nvls-tree/LL128"]]}
    checked = validate_published_nccl(_p6_copy(tmp_path, bad))
    assert not checked.skipped
    assert {r.run: r.detail for r in checked.rows}[14] == "nvls-tree/Simple (LL128 skipped: not runnable here, NCCL's)"


@pytest.mark.parametrize("chooser, match", [
    ({"source": "x", "by_ranks": {32: [[None, "ring"]]}, "ranks": 32}, "by_ranks: expected"),
    ({"source": "x", "by_ranks": {"abc": [[None, "ring"]]}}, "by_ranks.abc: expected a rank count"),   # not a rank count
    ({"source": "x", "ranks": 32, "algorithms": [[None, "pat-tree"]]}, "unknown algorithm"),
    ({"source": "x", "ranks": 32, "algorithms": [[None, "ring/LL64"]]}, "unknown protocol 'LL64'"),   # session 43
    ({"source": "x", "ranks": 32, "algorithms": [[1, "ring"]]}, "last entry must be"),
    ({"source": "x", "ranks": 32, "algorithms": "ring"}, "algorithms: expected a list"),
    ({"source": "x", "ranks": 32, "algorithms": [[5, "ring", 1], [None, "ring"]]}, "algorithms[0]: expected [below_bytes, algorithm]"),
    ({"source": "x", "ranks": 32, "algorithms": [[5, "ring"], [3, "tree"], [None, "ring"]]}, "below_bytes must increase"),
    ({"source": "x", "ranks": 32}, "algorithms: missing"),
    ({"source": "x", "op": "foo", "ranks": 32, "algorithms": [[None, "ring"]]}, "op: unknown collective 'foo'"),
    ({"source": "x", "ranks": 32, "algorithms": [[None, "ring"]], "tuner": 1}, "unknown key 'tuner'"),
])
def test_a_bad_chooser_is_refused_as_the_file_is_read_in_one_line_at_its_line(tmp_path, capsys, chooser, match):
    """The chooser is part of the file's read (reference.nccl.read_nccl_file), not checked when a prediction first asks
    for it: a bad one is the reader's one-line error, FILE:LINE: simcluster.chooser.KEY."""
    assert main(["validate", "--published", "nccl", str(_p6_copy(tmp_path, chooser))]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert re.search(r"nccl-p6\.yaml:\d+: simcluster\.chooser", err), err


def test_the_cli_prints_tables_and_si_json(capsys):
    assert main(["validate", "--published", "nccl", str(PUBLISHED / "nccl-aws-p5en-x4.yaml")]) == 0
    text = capsys.readouterr().out
    assert "busbw GB/s" in text and "held out: no" in text and "aws-p5en-x4" in text
    assert main(["validate", "--decisions", str(ROOT / "calibration" / "h200x2-rounds-2026-11-22"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["totals"]["agree"] == doc["totals"]["decisions"] == 151
    assert main(["validate", "--published", "nccl", str(PUBLISHED / "nccl-aws-p5en-x4.yaml"), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["metric"] == "busbw_Bps" and 3e11 < row["measured"] < 4e11 and row["held_out"] is False


@pytest.mark.parametrize("argv, match", [
    (["validate", "--published", "nccl", "--card", "x.yaml"], "--card does not apply to --published"),
    (["validate", "--published", "nccl", "--decisions", "calibration"], "does not apply"),
    (["validate", "--published", "gpu"], "invalid choice"),
    (["validate", "--published", "nccl", "/nonexistent"], "no such file or folder"),
    (["validate", "--decisions", "/nonexistent"], "not a folder"),
    (["validate"], "needs a trace"),
])
def test_usage_mistakes_are_one_line(capsys, argv, match):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "\n" not in err


@pytest.mark.parametrize("edit, match", [
    (lambda d: d.pop("simcluster"), "missing key 'simcluster'"),
    (lambda d: d["simcluster"].update(held_out="yes"), "simcluster.held_out: expected true or false, got .yes."),
    (lambda d: d["simcluster"].update(fitted=True), "unknown key 'fitted'"),
    (lambda d: d.update(kind="published-llm-run"), "expected published-nccl-run"),
    (lambda d: d["simcluster"].update(runs_not_held_out=["0"]), "runs_not_held_out"),
    (lambda d: d["simcluster"].update(runs_not_compared={"a": "why"}), "runs_not_compared"),
])
def test_a_bad_reference_file_is_one_line(tmp_path, capsys, edit, match):
    doc = yaml.safe_load((PUBLISHED / "nccl-aws-p5en-x4.yaml").read_text())
    edit(doc)
    path = tmp_path / "nccl-bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SimclusterError, match=match):
        validate_published_nccl(path)
    assert main(["validate", "--published", "nccl", str(path)]) == 2
    assert "\n" not in capsys.readouterr().err.strip()


def test_a_row_that_cannot_be_predicted_is_named_and_the_exit_is_partial(tmp_path, capsys):
    folder = tmp_path / "published"
    folder.mkdir()
    doc = yaml.safe_load((PUBLISHED / "nccl-aws-p5en-x4.yaml").read_text())
    doc["simcluster"]["scenario"] = str(tmp_path / "missing-scenario.yaml")
    (folder / "nccl-a.yaml").write_text(yaml.safe_dump(doc))
    shutil.copy(PUBLISHED / "nccl-gcp-a3mega-x2-unverified.yaml", folder)
    assert main(["validate", "--published", "nccl", str(folder)]) == 3
    captured = capsys.readouterr()
    assert "simcluster: skipped" in captured.err and "missing-scenario" in captured.err
    assert "not predicted: system unidentified" in captured.out


def _nccl1368_copy(tmp_path: Path, edit) -> Path:
    doc = yaml.safe_load((PUBLISHED / "nccl-h100-roce-x5-nccl1368.yaml").read_text())
    doc["simcluster"]["scenario"] = str((PUBLISHED / doc["simcluster"]["scenario"]).resolve())
    edit(doc)
    path = tmp_path / "nccl-x.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("algorithm", ["NCCL_ALGO=Tree", "NCCL_ALGO=ring (forced)", "NCCL_ALGO=PAT (forced)", "Ring", "nccl's choice", 3])
def test_an_unknown_forced_algorithm_is_refused_not_priced_as_nccls_choice(tmp_path, capsys, algorithm):
    path = _nccl1368_copy(tmp_path, lambda d: d["runs"][1].update(algorithm=algorithm))
    v = validate_published_nccl(path)
    assert not v.rows and len(v.skipped) == 1
    assert v.skipped[0].startswith(f"{path}: runs[1]: algorithm ") and "not a forced algorithm the reader knows" in v.skipped[0]
    assert main(["validate", "--published", "nccl", str(path)]) == 3
    assert "Traceback" not in capsys.readouterr().err


def test_a_peak_is_taken_over_the_range_the_source_ran(tmp_path):
    """nccl#1368 ran -e 1G and nccl-tests#100 -e 8G (each file's max_size, from its `tool` line): the model's peak is
    searched up to there; without max_size it is searched to 16 GiB and comes out higher on #1368 (the row as it read
    before the reading fix: Ring 194.2 GB/s at 16 GiB against 187.9 at 1 GiB)."""
    capped = {r.run: r for r in validate_published_nccl(PUBLISHED / "nccl-h100-roce-x5-nccl1368.yaml").rows}
    assert capped[0].detail == "ring/Simple at 1024 MiB (peak)" and capped[1].detail == "tree/Simple at 1024 MiB (peak)"
    [row] = validate_published_nccl(PUBLISHED / "nccl-a100-hdr-x2-nccltests100.yaml").rows
    assert row.detail.endswith("at 8192 MiB (peak)")

    def uncapped(d):
        for run in d["runs"]:
            run.pop("max_size")
    wide = {r.run: r for r in validate_published_nccl(_nccl1368_copy(tmp_path, uncapped)).rows}
    assert wide[0].detail == "ring/Simple at 16384 MiB (peak)" and wide[0].predicted > capped[0].predicted
    assert wide[1].predicted > capped[1].predicted


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["runs"][0].update(max_size="big"), "runs[0]: key 'max_size': 'big' is not a size > 0"),
    (lambda d: d["runs"][0].update(max_size=0), "runs[0]: key 'max_size': 0 is not a size > 0"),
    (lambda d: d["runs"][0].update(size="1GiB", bytes=2**30), "runs[0]: max_size is for a row without a size"),
])
def test_a_bad_max_size_is_one_line_naming_the_run(tmp_path, edit, match):
    v = validate_published_nccl(_nccl1368_copy(tmp_path, edit))
    assert len(v.skipped) == 1 and match in v.skipped[0] and "nccl-x.yaml" in v.skipped[0]


def test_a_max_size_below_64_mib_is_shown_as_not_compared(tmp_path, capsys):
    path = _nccl1368_copy(tmp_path, lambda d: d["runs"][0].update(max_size="32M"))
    rows = validate_published_nccl(path).rows
    assert [r.run for r in rows] == [0, 1] and rows[0].predicted is None and rows[1].predicted is not None
    assert rows[0].unavailable == "max_size below 64 MiB (the comparison starts at 64 MiB)"
    main(["validate", "--published", "nccl", str(path)])
    assert "not compared: max_size below 64 MiB (the comparison starts at 64 MiB)" in capsys.readouterr().out


def test_nccls_own_choice_is_no_algorithm_or_a_default_text(tmp_path):
    own = {r.run: r.predicted for r in validate_published_nccl(_nccl1368_copy(tmp_path, lambda d: d["runs"][1].pop("algorithm"))).rows}
    said = validate_published_nccl(_nccl1368_copy(tmp_path, lambda d: d["runs"][1].update(algorithm="default (NCCL's choice)"))).rows
    assert {r.run: r.predicted for r in said} == own
