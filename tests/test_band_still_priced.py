"""Registered rows today's model still prices within 2% (trust/moved.py, session 42, cold read D 41 5; renamed and read
with today's step by the cold read of session 42): every band with registered rows says how many of them today's model
still prices as registered (held-out residuals of today's model, measured / today's step), their mean |error| and how
many lie inside the answer's band; the moved flag keeps counting rows (docs/models/trust.md, "Why the flag counts
rows")."""

import json

from simcluster.trust.band import trust_of
from simcluster.trust.moved import moves_of
from simcluster.trust.regime import Regime
from simcluster.trust.table import Residual, Table, conformal_bounds

FAM, KEY = "llm eager", "llm | PyTorch eager | PP | bf16"


def _row(i: int, move: float | None, rho: float, source: str) -> Residual:
    return Residual(FAM, KEY, source, f"row {i}", 2.0, rho, "H200", move, "" if move is None else f"c-{source}")


def _pp_like() -> list[Residual]:
    """52 registered rows from 4 sets, 27 of them moved beyond 2% (PP's count before eager-today), rho spread 0.95..1.15."""
    return [_row(i, 1.08 if i < 27 else 1.005, 0.95 + 0.2 * i / 51, f"set{i % 4}") for i in range(52)]


def _trust(rows):
    return trust_of(Regime(FAM, KEY, 2.0, "H200"), Table(rows))


def test_a_flag_falling_by_dilution_says_both_counts_and_what_re_measured_the_band():
    """Cold read D 41 5: PP's flag fell when eager-today's two rows, registered with today's model, joined (27 of 52 ->
    27 of 54). The flag counts rows (docs/models/trust.md), so it falls; the answer now says so and says what today's
    model's rows read, instead of falling silent."""
    before = _trust(_pp_like())
    assert before.moves.earlier_model and "band measured on an earlier model" in before.text()
    after = _trust(_pp_like() + [_row(52, 1.0, 1.02, "today"), _row(53, 0.999, 1.04, "today")])
    assert not after.moves.earlier_model
    text = after.text()
    assert "today's model moved beyond +-2% on 27 of its 54 rows since registration (not more than half: not flagged)" in text
    assert "registered rows today's model still prices within +-2%: 27 (5 sources)" in text
    doc = after.to_json()["model_moved"]["still_priced_by_todays_model"]
    assert doc["rows"] == 27 and doc["sources"] == 5 and doc["band_rows_inside"][1] == 54
    assert f"{doc['inside_band']} of 27 inside the band (all its rows: {doc['band_rows_inside'][0]} of 54)" in text


def test_a_flagged_band_says_how_many_rows_today_s_model_re_measured_their_error_and_coverage():
    # 20 moved rows (registered on an earlier model, rho 1.00..1.19) and 5 today's: rho 1.00, 1.02, 1.04, 1.06, 1.30
    rows = [_row(i, 1.10, 1.0 + 0.01 * i, f"old{i % 3}") for i in range(20)]
    rows += [_row(20 + i, 1.0, rho, f"new{i % 2}") for i, rho in enumerate((1.00, 1.02, 1.04, 1.06, 1.30))]
    trust = _trust(rows)
    lo, hi = trust.rho
    # extrapolated since session 54 (rule54, trust/targets): these rows' mean |error| is over llm eager's 8% target
    assert trust.moves.earlier_model and trust.status == "extrapolated" and lo <= 1.06 <= hi < 1.30
    assert trust.outside.startswith("held-out mean |error| ") and trust.outside.endswith("over the llm eager family's 8% target")
    doc = trust.to_json()["model_moved"]["still_priced_by_todays_model"]
    mean = 100 * sum(abs(1 / r - 1) for r in (1.00, 1.02, 1.04, 1.06, 1.30)) / 5
    assert doc == {"rows": 5, "sources": 2, "mean_abs_error_pct": round(mean, 1), "inside_band": 4,
                   "band_rows_inside": [sum(lo <= r.rho <= hi for r in rows), 25]}
    text = trust.text()
    assert text.index("band measured on an earlier model") < text.index("still prices within +-2%: 5 (2 sources)")
    assert f"(2 sources): mean |error| {mean:.1f}% (today's step), 4 of 5 inside the band" in text


def test_the_still_priced_rows_are_read_with_today_s_step_not_the_registered_one():
    """Cold read of session 42: a row within 2% is a residual of today's model at measured / today's step = rho / move,
    not the registered rho. rho 1.0 registered, today's step 1.5% longer: today's error is +1.5%, not 0%."""
    rows = [_row(0, 1.015, 1.0, "a"), _row(1, 0.985, 1.0, "b")]
    r = moves_of(rows).still_priced((0.98, 1.001))
    assert r["mean_abs_error_pct"] == 1.5                       # |1.015 - 1| and |0.985 - 1|
    assert r["inside_band"] == 1                                # 1 / 1.015 = 0.985 inside, 1 / 0.985 = 1.015 outside


def test_no_row_re_measured_and_no_registered_row():
    none = _trust([_row(i, 0.9, 1.0 + 0.01 * i, f"s{i % 3}") for i in range(6)])
    assert "registered rows today's model still prices within +-2%: none (6 of 6 moved)" in none.text()
    assert none.to_json()["model_moved"]["still_priced_by_todays_model"]["mean_abs_error_pct"] is None
    unregistered = _trust([_row(i, None, 1.0, f"s{i % 3}") for i in range(6)])
    assert "still prices" not in unregistered.text() and "model_moved" not in unregistered.to_json()
    # rows predicted by today's code but never registered are not counted as still priced
    mixed = moves_of([_row(0, None, 1.0, "a"), _row(1, 1.0, 1.1, "b")])
    assert mixed.still_priced()["rows"] == 1 and "inside_band" not in mixed.still_priced()


def test_the_threshold_edge_is_today_s_and_the_table_json_carries_the_subset():
    edge = [_row(0, 1.02, 1.02, "a"), _row(1, 1.0201, 1.0, "b"), _row(2, 0.98, 0.98, "c")]   # today: 1.0, -, 1.0
    assert moves_of(edge).still_priced()["rows"] == 2 and moves_of(edge).moved == 1
    doc = json.loads(json.dumps(Table(edge).to_json()))
    assert doc["model_moves_by_regime"][KEY]["still_priced_by_todays_model"]["inside_band"] == 2


def test_the_accuracy_page_has_the_still_priced_column():
    from simcluster.trust import report

    page = report.accuracy_page(Table(_pp_like()))
    assert "| registered rows today's model still prices within 2% |" in page and "| 27 of 52 (+8.0%), **earlier model** | 25 (4 sources), 22 inside |" in page


def test_every_band_of_the_shipped_table_counts_its_still_priced_rows_as_recounted_here():
    """Each band of the shipped table: the still-priced subset recounted from the rows themselves (|move - 1| <= 2%, rho
    / move inside the band's own conformal bounds, their sources, today's mean |error|) is what Moves reports."""
    from simcluster.trust.table import load_table

    table = load_table()
    bands = [g.rows for g in table.regimes.values()] + [table.family_rows(f) for f in {r.family for r in table.residuals}]
    seen = 0
    for rows in bands:
        m = moves_of(rows)
        if not m.registered:
            continue
        seen += 1
        band = conformal_bounds([r.rho for r in rows])
        kept = [r for r in rows if r.moved is not None and abs(r.moved - 1) <= 0.02 + 1e-9]
        got = m.still_priced(band)
        assert got["rows"] == len(kept) and got["sources"] == len({r.source for r in kept})
        assert got["inside_band"] == sum(band[0] <= r.rho / r.moved <= band[1] for r in kept)
        assert got["band_rows_inside"] == [sum(band[0] <= r.rho <= band[1] for r in rows), len(rows)]
        if kept:
            mean = 100 * sum(abs(r.moved / r.rho - 1) for r in kept) / len(kept)
            assert abs(got["mean_abs_error_pct"] - mean) <= 0.05
    assert seen
