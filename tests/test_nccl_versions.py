"""NCCL's tuner tables by release (collectives/nccl_versions.py): hand-picked rows against src/graph/tuning.cc at the
tags that changed them (github.com/NVIDIA/nccl), the lookup of a stated version, and one-line refusals; the keyed
tables are an opt-in (machine.nccl_tables: stated, session 51 tunoff51): by default every run is priced with 2.28.3's,
as on main 010a245e."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from conftest import ROOT, load_script

from simcluster.collectives.nccl_search import NcclTopology
from simcluster.collectives.nccl_tuner import decide, tuning_table
from simcluster.collectives.nccl_versions import (
    DEFAULT_TABLES,
    RELEASES,
    NcclRelease,
    parse_release,
    stated_release,
    tables_for,
)
from simcluster.collectives.tree_kernel import scenario_nccl
from simcluster.errors import ScenarioError, SimclusterError
from simcluster.machine_models import build_cluster
from simcluster.reference.nccl import validate_published_nccl
from simcluster.scenario import load_variants

PUBLISHED = ROOT / "calibration" / "published"
LAMBDA_SCENARIO = ROOT / "scenarios" / "published" / "b200-ib-8x400g-x2-lambda-dstack.yaml"


@pytest.mark.parametrize("version, release", [
    (None, (2, 28, 3)),            # no version stated: the model's default
    ((2, 22, 3), (2, 28, 3)),      # before 2.23: not keyed, the default
    ((2, 23, 4), (2, 23, 4)),
    ((2, 24, 3), (2, 24, 3)),
    ((2, 26, 2), (2, 25, 1)),      # 2.25.1 .. 2.26.6 share the tables
    ((2, 26), (2, 25, 1)),         # no patch: the minor's first tag read (2.26.2), the same tables
    ((2, 27, 7), (2, 27, 3)),
    ((2, 28), (2, 28, 3)),
    ((2, 28, 7), (2, 28, 7)),
    ((2, 28, 9), (2, 28, 9)),
    ((2, 29, 3), (2, 29, 2)),
    ((2, 29, 7), (2, 29, 7)),
    ((2, 30, 7), (2, 30, 3)),
    ((2, 31, 2), (2, 30, 3)),      # after the newest tag read (v2.30.7-1): its tables
])
def test_a_stated_version_finds_its_release(version, release):
    assert tables_for(version).release == release


def test_hand_picked_rows_match_tuning_cc():
    bw = "blackwell"
    # v2.25.1-1 l.162-174 (2*36.7, 2*29.0, 2*38.7 ...): every Blackwell cap 2 x Hopper's
    old = tables_for((2, 26, 2))
    assert old.per_ch_tree[bw] == (77.4, 82.8, 72.0) and old.per_ch_tree_ll128[bw] == (73.4, 73.4, 58.0)
    assert old.per_ch_nvls_tree is None and not old.nvls_efficiency and old.pat_factor == 0.75
    # v2.28.3-1 l.185, l.191: the model's default
    assert DEFAULT_TABLES.per_ch_tree[bw] == (70.0, 42.8, 24.0) and DEFAULT_TABLES.per_ch_tree_ll128[bw] == (55.6, 31.67, 20.0)
    assert tables_for((2, 28, 7)).per_ch_ring_ll128[bw] == (73.4, 34.6, 73.4)                     # v2.28.7-1 l.179
    t289 = tables_for((2, 28, 9))
    assert t289.hw_lat["net"]["NVLSTree"][2] == 20.9 and t289.per_ch_nvls_tree[bw][2] == 43.8      # v2.28.9-1 l.165, l.197
    assert t289.hw_lat["net"]["Ring"] == DEFAULT_TABLES.hw_lat["net"]["Ring"]
    t292 = tables_for((2, 29, 2))
    assert t292.per_ch_ring_ll128[bw] == (34.5, 34.6, 34.5) and t292.nvls_tree_correction         # v2.29.2-1 l.179, l.595
    assert tables_for((2, 29, 7)).per_ch_ring_ll128[bw] == (40.0, 40.0, 40.0)                     # v2.29.7-1 l.180
    assert tables_for((2, 30, 4)).per_ch_nvls_tree[bw] == (0.0, 96.0, 80.0)                       # v2.30.3-1 l.205
    t223 = tables_for((2, 23, 4))                                                                 # v2.23.4-1 l.146, l.193
    assert t223.pat_factor == 0.85 and bw not in t223.ll_max_bw and bw not in t223.per_ch_ring_ll128
    assert t223.arch_row(bw) == "hopper" and tables_for((2, 25, 1)).arch_row(bw) == bw


def test_releases_are_built_from_the_default_s_hopper_and_older_rows():
    """A guard on nccl_versions._releases' construction (final read 51 item 7), not an independent check of tuning.cc:
    every change read from v2.23.4-1 to v2.30.7-1 is Blackwell's, the NVLS rules or PAT, so _releases builds each release
    from the c.* tables and edits only Blackwell's row; this fails where a hand edit gives a release other Hopper /
    Ampere / Volta rows or latencies (other than the network NVLS-tree step) than the default's. The reading of tuning.cc
    behind it is pinned for Blackwell only (test_hand_picked_rows_match_tuning_cc)."""
    for t in RELEASES:
        for table in ("ll_max_bw", "per_ch_ring_ll128", "per_ch_tree_ll128", "per_ch_tree"):
            for arch in ("volta", "ampere", "hopper"):
                assert getattr(t, table)[arch] == getattr(DEFAULT_TABLES, table)[arch], (t.name, table, arch)
        assert t.hw_lat["nvlink"] == DEFAULT_TABLES.hw_lat["nvlink"] and t.hw_lat["pci"] == DEFAULT_TABLES.hw_lat["pci"]


def test_the_choice_follows_the_run_s_own_tables():
    """2 x 8 B200 over 8 x 400G (the Lambda file's shape, NCCL 2.26.2): 2.28.3's tables run the NVLS tree at 1 GiB;
    2.26.2's (the tree capped at 82.8 GB/s per channel at 2 nodes, the NVLS tree x 5/6 with no efficiency) run Tree."""
    topo = NcclTopology("blackwell", 8, 2, None, 8, 50e9, nvls=True)
    assert decide(topo, "all_reduce", 1 << 30).algorithm == "NVLSTree"
    old = NcclTopology("blackwell", 8, 2, None, 8, 50e9, nvls=True, nccl=(2, 26, 2))
    assert decide(old, "all_reduce", 1 << 30).algorithm == "Tree"
    # Hopper: the same tables in both releases bar the NVLS rule; the ring's row is the same
    h_new, h_old = NcclTopology("hopper", 8, 4, None, 8, 50e9), NcclTopology("hopper", 8, 4, None, 8, 50e9, nccl=(2, 26, 2))
    assert tuning_table(h_new)["all_reduce"]["Ring"] == tuning_table(h_old)["all_reduce"]["Ring"]


@pytest.mark.parametrize("text, parsed", [
    ("2.27.3+cuda12.9", (2, 27, 3)), ("v2.28.9-1", (2, 28, 9)), ("2.26.2 (README, written at bee97e7)", (2, 26, 2)),
    ("2.31.2-1+cuda13.3 (also reproduced with 2.29.7)", (2, 31, 2)), ("2.28", (2, 28)), (None, None), ("", None),
])
def test_stated_versions_parse(text, parsed):
    assert parse_release(text) == parsed


@pytest.mark.parametrize("bad, what", [("two.x", "malformed"), ("2.28x", "malformed"), ("3.0.1", "unknown"),
                                       (2.3, "quoted text"), (True, "quoted text")])
def test_a_malformed_or_unknown_version_is_one_line(bad, what):
    with pytest.raises(SimclusterError) as exc:
        parse_release(bad)
    assert what in str(exc.value) and "\n" not in str(exc.value)
    assert stated_release(bad) is None          # free text in a file: not stated, the default tables


@pytest.mark.parametrize("bad", [(3, 0), (2,), (2, 28, -1), ("2", "28")])
def test_a_version_tuple_it_cannot_key_is_refused(bad):
    with pytest.raises(SimclusterError) as exc:
        tables_for(bad)
    assert "unknown" in str(exc.value) and "\n" not in str(exc.value)


def test_the_scenario_key_keeps_the_patch():
    assert scenario_nccl("2.28.9") == "2.28.9" and scenario_nccl("2.28") == "2.28" and scenario_nccl("2.27.3+cuda12.9") == "2.27.3"


@pytest.mark.parametrize("bad", ["2.28.9x", "2.27.3.1", "2.30-rc", "NCCL 2.28", "3.0.1", "2.25.1"])
def test_the_scenario_key_refuses_malformed_text_in_one_line(bad):
    """Cold review B51 item 7: machine.nccl is read by nccl_versions.parse_release alone (the one parser), so text it
    cannot read whole is refused, not truncated to its major.minor (before: '2.28.9x' -> '2.28', priced on 2.28.3's
    tables under the opt-in); a release before 2.26 is refused as before."""
    with pytest.raises(ValueError) as exc:
        scenario_nccl(bad)
    assert bad[:6] in str(exc.value) or "2.26" in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_malformed_machine_nccl_is_one_line_at_its_key(tmp_path):
    """Through the scenario loader: the file, machine.nccl and what is expected, one line."""
    with pytest.raises(ScenarioError) as exc:
        _lambda(tmp_path, nccl="2.28.9x", nccl_tables="stated")
    line = exc.value.one_line()
    assert "s.yaml:" in line and "machine.nccl" in line and "'2.28.9x' is malformed" in line and "\n" not in line, line



def _rows(name: str, tables: str | None = None) -> list[tuple[str, float]]:
    """(what ran, predicted busbw GB/s to 4 digits) of each compared row of one published file (the detail's assumed-NIC
    note, mendA54, left off)."""
    rows = validate_published_nccl(PUBLISHED / f"nccl-{name}.yaml", tables).rows
    return [(r.detail.split("; NIC ")[0], float(f"{r.predicted / 1e9:.4g}")) for r in rows if r.predicted is not None]


def test_by_default_the_lambda_b200_rows_are_main_s_and_the_opt_in_tuner51_s():
    """Lambda B200 x 2, NCCL 2.26.2 (held out): the default (2.28.3's tables) runs the NVLS tree at every size, the
    numbers of main 010a245e's print (studies/nccl-published-session51-tuner51-before.txt l.207-212); the opt-in
    (2.26.2's tables) runs Tree / Simple from 512 MiB (the -optin print, l.210-212)."""
    head = [("nvls-tree/Simple", 354.3), ("nvls-tree/Simple", 391.6), ("nvls-tree/Simple", 509.7)]
    assert _rows("b200-ib-x2-lambda-dstack") == head + [("nvls-tree/Simple", 600.2), ("nvls-tree/Simple", 658.6),
                                                        ("nvls-tree/Simple", 692.4)]
    assert _rows("b200-ib-x2-lambda-dstack", "2.28.3") == _rows("b200-ib-x2-lambda-dstack")
    assert _rows("b200-ib-x2-lambda-dstack", "stated") == head + [("tree/Simple", 482.3), ("tree/Simple", 542.9),
                                                                  ("tree/Simple", 579.3)]


def test_by_default_the_20_rack_rows_are_main_s_and_the_opt_in_tuner51_s():
    """CoreWeave GB200 NVL72 x 20 racks, NCCL 2.26.2 (development): 8 / 16 GiB ring / Simple by default (main's,
    +27.9 / +40.7%), tree / Simple with the opt-in (+38.1 / +47.0%); 512 MiB-4 GiB tree / Simple in both."""
    tree = [("tree/Simple", 116.8), ("tree/Simple", 199.6), ("tree/Simple", 309.4), ("tree/Simple", 426.8)]
    assert _rows("gb200-nvl72-multirack-coreweave") == tree + [("ring/Simple", 487.9), ("ring/Simple", 570.9)]
    assert _rows("gb200-nvl72-multirack-coreweave", "stated") == tree + [("tree/Simple", 526.7), ("tree/Simple", 596.5)]


def _lambda_file(tmp_path, **keys):
    """The Lambda scenario with its card paths absolute and `keys` set in machine:, written to tmp_path / s.yaml."""
    doc = yaml.safe_load(LAMBDA_SCENARIO.read_text())
    m = doc["machine"]
    for block in (m, m["gpu"], m["nic"], m["nvls"]):
        block["card"] = str((LAMBDA_SCENARIO.parent / block["card"]).resolve())
    m.update(keys)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _lambda(tmp_path, **keys):
    """_lambda_file's scenario built as a Cluster."""
    return build_cluster(load_variants(_lambda_file(tmp_path, **keys), 2)[0][1].machine)


def test_an_opt_in_collective_answer_says_so_and_prints_no_band(tmp_path):
    """Cold review B51 item 2: `predict collective` on a machine that opts in (machine.nccl_tables: stated, NCCL 2.26.2)
    says in a note which release's tables priced the choice and that it is an unvalidated opt-in, and its trust lines
    and --json say unvalidated with no band (the default's band named as not applied); the default prints its band
    and no such note."""
    from simcluster.predict_collective import sweep_from_scenario

    opted = sweep_from_scenario(str(_lambda_file(tmp_path, nccl="2.26.2", nccl_tables="stated")), "all_reduce", "512M",
                                "2G", 2, None)[0]
    assert any("2.25.1's tuner tables (NCCL 2.26.2 stated;" in n and "opt-in" in n and "unvalidated" in n
               for n in opted.notes), opted.notes     # the tables that priced it: 2.26.2 keys to 2.25.1's
    lines = opted.trust_lines()
    assert lines and all("unvalidated, no band" in x and "opted in" in x and "not applied" in x for x in lines), lines
    rows = opted.to_json()["rows"]
    assert all(r["validation"]["status"] == "unvalidated" and r.get("time_s_band") is None for r in rows), rows[0]
    default = sweep_from_scenario(str(_lambda_file(tmp_path, nccl="2.26.2")), "all_reduce", "512M", "2G", 2, None)[0]
    assert not any("tuner tables" in n for n in default.notes)
    assert all("80% band" in x for x in default.trust_lines()) and default.to_json()["rows"][0]["time_s_band"]


def test_the_opt_in_note_names_the_tables_used_not_the_version_stated(tmp_path):
    """Final read 51 item 1: with a stated NCCL newer than any release read (2.99.1), the note names the tables that
    priced the choice (the newest keyed, 2.30.3's) and says the stated version is newer than the newest read."""
    from simcluster.predict_collective import sweep_from_scenario

    notes = sweep_from_scenario(str(_lambda_file(tmp_path, nccl="2.99.1", nccl_tables="stated")), "all_reduce", "512M",
                                "2G", 2, None)[0].notes
    note = [n for n in notes if "tuner tables" in n]
    assert len(note) == 1 and "2.99.1's" not in note[0], notes
    assert note[0].startswith("NCCL's choice priced with 2.30.3's tuner tables (NCCL 2.99.1 stated, newer than the "
                              "newest release read, 2.30.7;"), note[0]


def test_the_scenario_key_opts_in_and_the_default_keeps_2_28_3(tmp_path):
    """machine.nccl_tables: the default ('2.28.3') prices the choice with 2.28.3's tables whatever machine.nccl says;
    'stated' with machine.nccl's (2.26.2: Tree over the NVLS tree at 1 GiB on the Lambda shape)."""
    default = _lambda(tmp_path, nccl="2.26.2")
    assert default.nccl == NcclRelease((2, 26, 2), "2.28.3") and default.nccl_topology.nccl is None
    assert decide(default.nccl_topology, "all_reduce", 1 << 30).algorithm == "NVLSTree"
    assert _lambda(tmp_path, nccl="2.26.2", nccl_tables="2.28.3").nccl_topology == default.nccl_topology
    opted = _lambda(tmp_path, nccl="2.26.2", nccl_tables="stated")
    assert opted.nccl_topology.nccl == (2, 26, 2)
    assert decide(opted.nccl_topology, "all_reduce", 1 << 30).algorithm == "Tree"


def test_the_opt_in_without_a_stated_nccl_is_one_line_at_its_key(tmp_path):
    """Final read 51 item 8: machine.nccl_tables: stated with no machine.nccl would do nothing; it is refused."""
    with pytest.raises(ScenarioError) as exc:
        _lambda(tmp_path, nccl_tables="stated")
    line = exc.value.one_line()
    assert "s.yaml:" in line and "machine.nccl_tables" in line and "stated needs machine.nccl" in line, line
    assert "\n" not in line


@pytest.mark.parametrize("bad", ["2.26.2", "yes", True, 2.28])
def test_a_bad_nccl_tables_is_one_line_at_its_key(tmp_path, bad):
    with pytest.raises(ScenarioError) as exc:
        _lambda(tmp_path, nccl="2.26.2", nccl_tables=bad)
    line = exc.value.one_line()
    assert "s.yaml:" in line and "machine.nccl_tables" in line and "expected one of 2.28.3, stated" in line, line
    assert "\n" not in line


def test_the_tuner_release_is_the_stated_version_only_with_the_opt_in_resolved_once():
    assert NcclRelease((2, 26, 2), "2.28.3").tuner is None and NcclRelease((2, 26, 2), "stated").tuner == (2, 26, 2)
    assert NcclRelease((2, 26, 2), "stated").opted_in == "2.25.1" and NcclRelease((2, 26, 2)).opted_in == ""
    assert dataclasses.replace(NcclRelease((2, 26, 2)), tables="stated").tuner == (2, 26, 2)   # resolved again on a change
    with pytest.raises(SimclusterError) as exc:
        NcclRelease((2, 26, 2), "keyed")
    assert "machine.nccl_tables 'keyed': expected one of 2.28.3, stated" == str(exc.value)


@pytest.mark.parametrize("what, printed", [("published", "nccl-published-session51-tuner51-optin.txt"),
                                           ("held-out-systems", "nccl-heldout-systems-session51-tuner51-optin.txt")])
def test_the_opt_in_study_prints_its_committed_output(capsys, what, printed):
    load_script("studies/nccl_tables_stated.py").main(what)
    assert capsys.readouterr().out == (ROOT / "studies" / printed).read_text()


def test_the_default_tables_are_one_release_everywhere():
    """Final read 51 item 3: the 2.28.3 default is DEFAULT_RELEASE; TABLES_DEFAULT and tree_kernel.MODEL_NCCL derive from
    it, and the two documents below collectives/ in the import layers (machine_document, scenario_machine) keep their
    own literal, checked here to equal it."""
    from simcluster.collectives.nccl_versions import DEFAULT_RELEASE, TABLES_DEFAULT
    from simcluster.collectives.tree_kernel import MODEL_NCCL
    from simcluster.machine_document import MACHINE
    from simcluster.scenario_machine import Machine

    assert TABLES_DEFAULT == ".".join(map(str, DEFAULT_RELEASE)) and MODEL_NCCL == DEFAULT_RELEASE[:2]
    assert MACHINE.model_fields["nccl_tables"].default == TABLES_DEFAULT
    assert Machine.__dataclass_fields__["nccl_tables"].default == TABLES_DEFAULT
