"""A band measured on an earlier model (trust/moved.py, session 41): registered rows carry today's prediction beside the
registered one, the band's residual stays the registered one, and an answer whose band's rows mostly moved says so."""

import json

import pytest
from conftest import ROOT, load_script

from simcluster.trust.band import trust_of
from simcluster.trust.moved import MOVE_THRESHOLD, moves_of
from simcluster.trust.regime import Regime
from simcluster.trust.table import Residual, Table

FAM, KEY = "llm eager", "llm | PyTorch eager | DDP | bf16"


def _rows(moves: list[float | None], rho: float = 1.05) -> list[Residual]:
    """Rows of one regime from 3 sources; moves[i] today / registered (None: a row predicted by today's model)."""
    return [Residual(FAM, KEY, f"set{i % 3}", f"row {i}", 2.0, rho, "H200", m, "" if m is None else f"c{i % 3}")
            for i, m in enumerate(moves)]


def test_a_regime_whose_registered_rows_mostly_moved_says_its_band_is_an_earlier_models():
    rows = _rows([1.10, 1.12, 1.15, 0.99, None, 1.30])   # 4 of 6 moved beyond 2%
    trust = trust_of(Regime(FAM, KEY, 2.0, "H200"), Table(rows))
    assert trust.status == "validated" and trust.moves.moved == 4 and trust.moves.registered == 5
    assert "band measured on an earlier model: today's model moved beyond +-2% on 4 of its 5 registered rows" in trust.text()
    assert "median +12.0%" in trust.text() and "-1.0..+30.0%" in trust.text()
    doc = trust.to_json()["model_moved"]
    assert doc["moved_rows"] == 4 and doc["band_measured_on_earlier_model"] and doc["registered_at"] == {"c0": 2, "c2": 2, "c1": 1}
    # the band itself is the registered residuals': unchanged by the move
    assert trust.rho == Table(_rows([None] * 6)).regimes[KEY].bounds()


def test_a_band_with_half_or_fewer_of_its_rows_moved_says_nothing():
    for moves in ([1.10, 1.10, 1.10, 1.0, 1.0, None], [1.01, 0.99, 1.019, 1.0, 1.0, 1.0], [None] * 6):
        trust = trust_of(Regime(FAM, KEY, 2.0, "H200"), Table(_rows(moves)))
        assert "earlier model" not in trust.text(), moves
    assert "model_moved" not in trust.to_json()   # no registered row: nothing to say


def test_the_threshold_is_strict_and_an_unvalidated_regime_reads_its_familys_pooled_rows():
    edge = 1 + MOVE_THRESHOLD
    assert moves_of(_rows([edge, edge, edge])).moved == 0
    pooled = _rows([1.2] * 6) + [Residual(FAM, "llm | PyTorch eager | CP | bf16", "set9", "cp", 2.0, 1.0, "H200", None, "")]
    trust = trust_of(Regime(FAM, "llm | PyTorch eager | CP | bf16", 2.0, "H200"), Table(pooled))
    assert trust.pooled and trust.moves.rows == 7 and trust.moves.moved == 6 and "earlier model" in trust.text()


def test_the_table_keeps_the_move_through_json_and_refuses_a_bad_one(tmp_path):
    from simcluster.errors import SimclusterError
    from simcluster.trust.table import load_table

    doc = Table(_rows([1.1, None, 1.0])).to_json()
    back = Table.from_json(json.loads(json.dumps(doc)), "t")
    assert [r.moved for r in back.residuals] == [1.1, None, 1.0] and back.residuals[0].registered_at == "c0"
    assert doc["model_moves_by_regime"][KEY]["registered_rows"] == 2
    doc["rows"][0]["today_over_registered"] = -1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(SimclusterError, match=r"rows\[0\].today_over_registered"):
        load_table(str(bad))


def test_every_local_spec_answer_says_its_band_is_of_earlier_models_registered_predictions():
    """Review A 2 (session 40), adapted: the shipped table's `llm local spec` rows were registered by every set of
    heldout/moe_lab.REGISTERED, each at its registering commit, and today's model has moved on most of them: the answer's
    trust line names every set's commit and says the band is an earlier model's (no hand-written caveat any more)."""
    from simcluster.heldout import moe_lab
    from simcluster.trust.moved import registering_commit
    from simcluster.trust.regime import llm_regime

    trust = trust_of(llm_regime("megatron-local-spec", 1, 1, 1, 1, True, "bf16", 2))
    text = trust.text()
    assert "band measured on an earlier model" in text
    for folder in (f for f in moe_lab.REGISTERED if moe_lab.read_set(ROOT / f)[0]):   # a set not yet run has no rows
        first = (ROOT / folder / "registered.yaml").read_text().splitlines()[0]
        commit = first.split("model at ")[1][:8]
        assert registering_commit(ROOT / folder) == commit and f"{commit} (" in text, (folder, commit)
    assert trust.to_json()["model_moved"]["registered_rows"] == trust.rows   # every local-spec row is a registered one


def test_the_moe_lab_reader_prices_today_as_the_studys_comparison_does():
    """One path: heldout/moe_lab.todays_step_s is the step studies/megatron_moe/compare.py prints as 'predicted'."""
    from simcluster.heldout import moe_lab

    compare = load_script("studies/megatron_moe/compare.py")
    folder = next(ROOT / f for f in reversed(moe_lab.REGISTERED) if any((ROOT / f).glob("megatron-moe-*.json")))   # the last run
    doc, _ = moe_lab.run_document(next(folder.glob("megatron-moe-*.json")))
    m = {**doc["model"], "ep": doc["parallel"]["ep"]}
    assert moe_lab.todays_step_s(doc, doc["world_size"]) == pytest.approx(compare.predicted_s(m, doc["world_size"], "H200")[0], rel=1e-12)


def test_a_registered_step_sets_today_is_its_registration_scripts_prediction_today():
    """One path: the cudnnstep set's today's step beside each registered row (heldout/eager_regimes.todays_step_s) is what
    its registration script (validation/eager_cudnn_steps.predict, which wrote `today` at bf03707e) predicts now, so the
    move reads the model, not a second pricing."""
    from simcluster.heldout import eager_cudnnstep

    script = load_script("validation/eager_cudnn_steps.py")
    rows = {r["label"]: r["today_s"] for r in eager_cudnnstep.held_out_rows()}
    matched = 0
    for row in script.ROWS:
        _, mode, preset, seq, _ = row
        label = f"{preset} {mode} seq {seq} mb 1"
        if label in rows:
            matched += 1
            assert rows[label] == pytest.approx(script.predict(row)["step_ms"] / 1e3, rel=1e-9), label
    assert rows and matched == len(rows)
