"""One builder for every collective card (fit/cards.py::collective_document): `simcluster calibrate LOG ...` and
`simcluster calibrate BUNDLE` give the same document for the same traces, apart from where they came from."""

from pathlib import Path

import yaml

from simcluster.cli import main

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "calibration" / "h200x4-graph-2ranks-2026-11-22"     # all_reduce at 2 ranks: 3 rounds + a tuning log


def _without_source(card: dict) -> dict:
    card = dict(card, provenance=dict(card["provenance"]))
    for key in ("fitted_at", "bundle", "host"):
        card["provenance"].pop(key, None)
    return card


def test_a_card_from_logs_equals_the_card_from_their_bundle(tmp_path, capsys):
    rounds = [str(BUNDLE / "nccl-tests" / f"all_reduce-r{i}" / "stdout.txt") for i in (1, 2, 3)]
    tuning = str(BUNDLE / "nccl-tests" / "all_reduce-tuning" / "stdout.txt")
    assert main(["calibrate", *rounds, "--nccl-log", tuning, "--name", "nccl-tests-2ranks", "-o", str(tmp_path / "log.yaml")]) == 0
    assert main(["calibrate", str(BUNDLE), "-o", str(tmp_path / "bundle")]) == 0
    capsys.readouterr()
    from_log = yaml.safe_load((tmp_path / "log.yaml").read_text())
    from_bundle = yaml.safe_load((tmp_path / "bundle" / "collective-nccl-tests.yaml").read_text())
    assert from_bundle["provenance"]["bundle"] == str(BUNDLE) and "bundle" not in from_log["provenance"]
    assert _without_source(from_log) == _without_source(from_bundle)
    assert set(from_log) == {"kind", "name", "description", "machine", "params", "valid_range", "fit", "provenance"}
    assert from_log["params"]["model"] == "nccl-primitives" and from_log["provenance"]["nccl_log"][0]["path"] == tuning
    assert [t["path"] for t in from_log["provenance"]["traces"]] == rounds


def test_the_builder_takes_any_model_through_its_params_yaml():
    """Generic over the model: a chunked-ring fit and a primitives fit of the same log go through the same builder,
    each card's params being its model's own to_params_yaml()."""
    from simcluster.cards import collective_params
    from simcluster.fit.cards import collective_document
    from simcluster.traces import nccl_tests

    trace = nccl_tests.parse(BUNDLE / "nccl-tests" / "all_reduce-r1" / "stdout.txt")
    for model in ("chunked-ring", "nccl-primitives"):
        card, fitted = collective_document([trace], [], "x", model)
        assert card["params"] == fitted.to_params_yaml()
        assert collective_params(card, "x").to_params_yaml() == fitted.to_params_yaml()
        assert card["fit"]["in_sample_error"]["sizes_ge_1024B"]["sizes"] > 10
