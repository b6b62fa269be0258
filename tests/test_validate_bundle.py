"""`simcluster validate BUNDLE --card CARD`: every collective of a trace bundle in one table, each op's rounds
reduced to their median, the ops the card was fitted on told apart from the ones it never saw."""

import json
import shutil

from conftest import FIXTURES, OPS, ROOT

from simcluster.cards import load_collective
from simcluster.cli import main
from simcluster.fit.validate import summary, validate
from simcluster.traces import nccl_tests

BUNDLE = ROOT / "calibration" / "h200x2-graph-2026-11-22"
CARD = ROOT / "models" / "collective" / "h200x2-primitives.yaml"   # fitted on this bundle's all_reduce (+ host rounds)


def test_every_op_of_a_bundle_is_validated_and_marked_in_sample_or_held_out(capsys, tmp_path):
    plot = tmp_path / "bundle.png"
    assert main(["validate", str(BUNDLE), "--card", str(CARD), "--json", "--plot", str(plot)]) == 0
    report = json.loads(capsys.readouterr().out)
    ops = {o["op"]: o for o in report["ops"]}
    assert list(ops) == list(OPS) and report["skipped"] == []
    assert [op for op, o in ops.items() if o["in_sample"]] == ["all_reduce"]
    params, _ = load_collective(str(CARD))
    for op, o in ops.items():
        rounds = sorted(BUNDLE.glob(f"nccl-tests/{op}-r[0-9]*/stdout.txt"))
        assert o["rounds"] == len(rounds) >= 3 and o["ranks"] == 2 and o["cuda_graph"]
        alone = summary(validate(params, nccl_tests.median_trace([nccl_tests.parse(p) for p in rounds])))
        assert o["summary"] == alone
    assert plot.stat().st_size > 10_000


def test_a_broken_log_is_named_and_everything_else_still_validated(capsys, tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    broken = bundle / "nccl-tests" / "reduce-r2" / "stdout.txt"
    broken.write_text((FIXTURES / "qperf_seed000.txt").read_text())
    for every in sorted((bundle / "nccl-tests").glob("alltoall-r[0-9]*/stdout.txt")):
        every.write_text("")
    assert main(["validate", str(bundle), "--card", str(CARD), "--json"]) == 3
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 4 and "reduce" in err[0] and str(broken) in err[0]
    assert all("alltoall" in line for line in err[1:])
    ops = {o["op"]: o for o in json.loads(captured.out)["ops"]}
    assert list(ops) == [op for op in OPS if op != "alltoall"] and ops["reduce"]["rounds"] == 2


def test_what_a_bundle_cannot_answer_is_a_one_line_error(capsys):
    calibration = ROOT / "calibration"
    for argv in (["validate", str(calibration / "h200x4-graph-2ranks-2026-11-22"), "--card", str(CARD),
                  "--op", "reduce"],                                                 # all_reduce only
                 ["validate", str(calibration / "local-2026-11-22"), "--card", str(CARD)],  # no nccl-tests runs
                 ["validate", str(calibration), "--card", str(CARD)],               # not a bundle
                 ["validate", str(BUNDLE)]):                                          # no --card
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("simcluster: error:"), argv


def test_one_log_the_card_was_fitted_on_is_said_to_be_in_sample(capsys):
    notes = {}
    for log in ("all_reduce-r1", "reduce-r1"):
        assert main(["validate", str(BUNDLE / "nccl-tests" / log / "stdout.txt"), "--card", str(CARD)]) == 0
        notes[log] = "fitted on this log" in capsys.readouterr().out
    assert notes == {"all_reduce-r1": True, "reduce-r1": False}


def test_a_bundle_the_cards_profile_was_measured_on_is_in_sample(capsys):
    profiled = ROOT / "models" / "collective" / "h200x2-profiled.yaml"    # profile learned on graph2, AR of graph A
    for bundle, expected in (("h200x2-graph2-2026-11-22", "profile"), ("h200x2-graph-2026-11-22", None)):
        assert main(["validate", str(ROOT / "calibration" / bundle), "--card", str(profiled), "--json"]) == 0
        basis = {o["op"]: o["basis"] for o in json.loads(capsys.readouterr().out)["ops"]}
        held = [op for op, b in basis.items() if b == "held out"]
        assert held == ([] if expected else [op for op in OPS if op != "all_reduce"])
        assert all("profile" in b for b in basis.values()) == bool(expected)
