"""Scenario loading and the CLI's promises: one-line errors with exit 2, round trips."""

import json

import pytest
from conftest import FIXTURES, ROOT

from simcluster.cli import main
from simcluster.traces import nccl_tests

CARD = ROOT / "models" / "collective" / "h200x2-nvlink.yaml"
GOOD = f"""name: t
machine:
  card: {CARD}
  gpus_per_node: 2
jobs:
  - kind: collective_sweep
    op: all_reduce
    max_size: 1M
"""


def _one_line_error(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("simcluster: error:") and "\n" not in err and "Traceback" not in err
    return err


def test_quickstart_runs(capsys):
    assert main(["run", str(ROOT / "scenarios" / "quickstart.yaml"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jobs"][0]["rows"][0]["size_B"] == 1024
    # the measured columns are validate's own numbers: all_reduce in sample (the card's provenance), all_gather
    # held out; the DES job runs the same card, chunk by chunk, and has no measurement
    reduce, gather, des = out["jobs"]
    assert reduce["measured"]["basis"].startswith("in sample") and gather["measured"]["basis"] == "held out"
    assert des["engine"] == "des" and des["card"] == reduce["card"] and "measured" not in des
    closed = {row["size_B"]: row["time_s"] for row in reduce["rows"]}
    assert all(row["time_s"] == pytest.approx(closed[row["size_B"]], rel=1e-9) for row in des["rows"])
    bundle = ROOT / "calibration" / "h200x2-graph-2026-11-22"
    assert main(["validate", str(bundle), "--card", str(ROOT / "models/collective/h200x2-primitives.yaml"),
                 "--op", "all_gather", "--json"]) == 0
    validated = json.loads(capsys.readouterr().out)["ops"][0]
    assert gather["measured"]["summary"] == validated["summary"] and gather["measured"]["rounds"] == 3
    predicted = {row["size_B"]: row["time_s"] for row in gather["rows"]}
    for row in gather["measured"]["rows"]:
        if row["size_B"] in predicted:
            assert row["predicted_s"] == predicted[row["size_B"]]


def test_a_sweep_beside_a_measurement_that_does_not_parse_keeps_the_prediction(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(GOOD + f"    measured: {FIXTURES / 'qperf_seed000.txt'}\n")
    assert main(["run", str(path)]) == 3
    captured = capsys.readouterr()
    assert "1MiB" in captured.out and "has no all_reduce at 2 ranks" in captured.out
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "skipped" in err[0] and "qperf_seed000.txt" in err[0]


def test_sweep_measured_and_card_keys_are_checked(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(GOOD + "    measured: no/such/bundle\n")
    err = _one_line_error(capsys, ["run", str(path)])
    assert "jobs[0].measured" in err and "not found" in err and f"{path}:9" in err
    nic = ROOT / "models" / "nic" / "seed000-roce-100g.yaml"
    path.write_text(GOOD.replace("  gpus_per_node: 2\n", f"  gpus_per_node: 2\n  nodes: 2\n  nic: {{card: {nic}, per_node: 1}}\n"
                                 "  fabric: {kind: leaf-spine, down_ports: 2, spines: 1}\n")
                    + f"    card: {CARD}\n")
    err = _one_line_error(capsys, ["run", str(path)])
    assert "jobs[0].card" in err and "one-node sweep" in err


def test_unknown_key_names_file_line_and_key(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("    max_size: 1M", "    max_size: 1M\n    bandwith: 100Gbps"))
    err = _one_line_error(capsys, ["run", str(path)])
    assert f"{path}:9" in err and "jobs[0].bandwith" in err and "unknown key" in err


def test_a_dlio_workload_given_as_a_scenario_says_what_it_is(capsys):
    workload = ROOT / "scenarios" / "workloads" / "unet3d_h100.yaml"
    err = _one_line_error(capsys, ["run", str(workload)])
    assert "DLIO workload config, not a scenario" in err and "storage max-accelerators" in err


def test_unit_typo(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("max_size: 1M", "max_size: 16GiBs"))
    err = _one_line_error(capsys, ["run", str(path)])
    assert "jobs[0].max_size" in err and "16GiBs" in err and f"{path}:8" in err


def test_missing_card(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace(str(CARD), "models/none.yaml"))
    err = _one_line_error(capsys, ["run", str(path)])
    assert "machine.card" in err and "not found" in err


def test_bad_inputs_on_the_command_line(tmp_path, capsys):
    (tmp_path / "empty.txt").write_text("")
    _one_line_error(capsys, ["parse", str(tmp_path / "empty.txt")])
    _one_line_error(capsys, ["calibrate", str(FIXTURES / "qperf_seed000.txt"), "-o", str(tmp_path / "c.yaml")])
    _one_line_error(capsys, ["predict", "collective", "--card", str(CARD), "--op", "allfoo", "--ranks", "2"])
    _one_line_error(capsys, ["predict", "collective", "--card", str(CARD), "--op", "all_reduce", "--ranks", "2",
                             "-e", "8Q"])
    _one_line_error(capsys, ["nonsense"])
    assert not (tmp_path / "c.yaml").exists()


def test_prediction_is_valid_nccl_tests_output(tmp_path, capsys):
    assert main(["predict", "collective", "--card", str(CARD), "--op", "all_gather", "--ranks", "2",
                 "-b", "1K", "-e", "1G", "-f", "4"]) == 0
    path = tmp_path / "pred.txt"
    path.write_text(capsys.readouterr().out)
    trace = nccl_tests.parse(path)
    assert trace.op == "all_gather" and trace.nranks == 2 and trace.nodes == 1
    assert [r.size_bytes for r in trace.rows][:2] == [1024, 4096] and len(trace.rows) == 11


def test_calibrate_writes_card_with_provenance(tmp_path, capsys, h200_log):
    out = tmp_path / "card.yaml"
    assert main(["calibrate", str(h200_log("all_reduce")), "-o", str(out)]) == 0
    import yaml

    card = yaml.safe_load(out.read_text())
    trace = card["provenance"]["traces"][0]
    assert len(trace["sha256"]) == 64 and trace["nccl_version"] == "2.28.3" and trace["tool_version"] == "2.19.6"
    assert card["valid_range"]["ranks"] == [2] and card["params"]["link_bandwidth"].endswith("GB/s")
    assert main(["validate", str(h200_log("all_reduce")), "--card", str(out), "--json",
                 "--plot", str(tmp_path / "v.png")]) == 0
    assert (tmp_path / "v.png").stat().st_size > 10_000


def test_same_scenario_same_numbers(capsys):
    runs = []
    for _ in range(2):
        main(["run", str(ROOT / "scenarios" / "quickstart.yaml"), "--json"])
        runs.append(capsys.readouterr().out)
    assert runs[0] == runs[1]


def test_every_command_line_option_says_what_it_is():
    """`simcluster CMD --help` explains every argument: none is printed without a help line."""
    import argparse

    from simcluster.cli import build_parser

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, path + [name])
            elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                yield " ".join(path + [action.dest]), action.help

    missing = [where for where, text in walk(build_parser(), ["simcluster"]) if not text]
    assert not missing, missing
