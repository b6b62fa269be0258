"""A plan's exact ties are broken by the configuration (sweep/store.configuration_key), not by the point hash: the
hash carries simcluster's code digest, so breaking ties on it let any code change swap two configurations with equal
numbers (session 53: the seed000-ddp plan's top pick flipped between seed000-tcp-100g and seed000-roce-100g)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import yaml
from test_plan_search import _plan
from test_sweep_spec import MODELS

import simcluster
from simcluster.plan import search
from simcluster.report import html
from simcluster.sweep import store

ROOT = Path(__file__).resolve().parent.parent
NICS = [str(MODELS / "nic/roce-800g.yaml"), str(MODELS / "nic/roce-400g.yaml")]   # written out of name order on purpose


def test_configuration_key_reads_only_the_parameters_numbers_as_numbers():
    a = {"point_hash": "f" * 64, "param.machine.nodes": 2, "param.machine.nic.card": "b.yaml", "cost.total": 1.0}
    b = {"point_hash": "0" * 64, "param.machine.nodes": 16, "param.machine.nic.card": "a.yaml", "cost.total": 9.0}
    # the keys in name order: nic.card first, so 'a.yaml' decides before the node count
    assert store.configuration_key(b) < store.configuration_key(a)
    c = dict(b, **{"param.machine.nic.card": "b.yaml"})
    assert store.configuration_key(a) < store.configuration_key(c)          # 2 < 16 as numbers ('16' < '2' as text)
    assert store.configuration_key(a) == store.configuration_key(dict(a, point_hash="1", **{"cost.total": 5.0}))
    missing = dict(a, **{"param.machine.nodes": None})
    assert store.configuration_key(a) < store.configuration_key(missing)    # a missing value sorts last
    mixed = dict(a, **{"param.machine.nodes": "[1, 2]"})                      # a mixed column is stored as text
    assert store.configuration_key(a) < store.configuration_key(mixed)


def _tied_rows(hashes):
    """Three configurations with equal numbers, their hashes given (as another code digest would give others)."""
    return [{"status": "ok", "point_hash": h, "param.machine.nodes": 1, "param.machine.nic.card": card,
             "cost.time_to_train_s": 100.0, "cost.total": 5.0, "jobs[0].samples_per_s": 10.0}
            for h, card in zip(hashes, ("../nic/seed000-tcp-100g.yaml", "../nic/seed000-roce-100g.yaml", "../nic/roce-400g.yaml"),
                               strict=True)]


def _picks(a):
    def card(r):
        return r["param.machine.nic.card"]

    return card(a["cheapest_within"]), card(a["fastest"]), [card(r) for r in a["top_by_throughput"]]


def test_tied_rows_are_picked_by_configuration_whatever_their_hashes():
    plan = search.PlanSpec(None, None, 1000.0, ())
    picks = [_picks(search.answer(_tied_rows(h), plan, include_unvalidated=True)) for h in (("1", "2", "3"), ("3", "2", "1"))]
    assert picks[0] == picks[1] == ("../nic/roce-400g.yaml", "../nic/roce-400g.yaml",
                                    ["../nic/roce-400g.yaml", "../nic/seed000-roce-100g.yaml", "../nic/seed000-tcp-100g.yaml"])
    fronts = [[r["param.machine.nic.card"] for r in html.pareto(_tied_rows(h))] for h in (("1", "2", "3"), ("3", "2", "1"))]
    assert fronts[0] == fronts[1] == ["../nic/roce-400g.yaml"]                       # the tie kept once, the same one



def test_the_report_top_table_without_a_throughput_is_in_configuration_order():
    """Cold review C53 item 9: with no throughput column to rank by, the report's top table followed the store's order
    (parts sorted by file name); it follows the configuration, whatever order the rows arrive in."""
    gpus = {"../nic/seed000-tcp-100g.yaml": 8, "../nic/seed000-roce-100g.yaml": 16, "../nic/roce-400g.yaml": 24}  # the label
    rows = [{**{k: v for k, v in r.items() if k != "jobs[0].samples_per_s"}, "machine.gpus": gpus[r["param.machine.nic.card"]]}
            for r in _tied_rows(("1", "2", "3"))]
    assert html.throughput_key(rows) == (None, "")
    tops = []
    for order in (rows, rows[::-1]):
        page = html.build(order, "ties", "fig", top_n=2)["report.html"]
        tops.append(re.findall(r"<td>(\d+) GPUs</td>", page[page.index("<h2>Top configurations"):]))
    assert tops[0] == tops[1] == ["24", "16"]   # roce-400g, seed000-roce-100g: the cards in name order

def _two_nic_plan(tmp_path):
    """The tiny LLM plan on one node over two NIC cards priced alike: on one node the NIC carries nothing, so the
    two points' numbers are equal and only the tie rule tells them apart."""
    path = _plan(tmp_path, nodes=(1,), search_space={"tp": [1], "pp": [1], "micro_batch": [1], "zero": [1]})
    doc = yaml.safe_load(path.read_text())
    doc["sweep"]["keys"]["machine.nic.card"] = NICS
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    cat = yaml.safe_load((tmp_path / "cat.yaml").read_text())
    cat["nics"]["roce-800g"] = dict(cat["nics"]["roce-400g"])
    (tmp_path / "cat.yaml").write_text(yaml.safe_dump(cat))
    return path


def _hash_order(path):
    sweep, plan = search.read_plan(path)
    pts, _ = search.candidates(sweep, plan)
    by_card = {dict(p.params)["machine.nic.card"]: p.hash for p in pts}
    return sorted(by_card, key=by_card.get)


def test_a_code_digest_change_does_not_swap_tied_configurations(tmp_path, monkeypatch):
    path = _two_nic_plan(tmp_path)
    monkeypatch.setitem(simcluster._DIGEST, "code", "digest-0")
    first = _hash_order(path)
    for i in range(1, 40):                     # another digest that orders the two hashes the other way
        monkeypatch.setitem(simcluster._DIGEST, "code", f"digest-{i}")
        if _hash_order(path) != first:
            break
    else:
        pytest.fail("no digest among 40 reorders the two hashes")
    answers = []
    for digest in ("digest-0", f"digest-{i}"):
        monkeypatch.setitem(simcluster._DIGEST, "code", digest)
        result = search.run_plan(path, tmp_path / digest, workers=0, progress=io.StringIO(), include_unvalidated=True)
        rows = sorted(result.rows, key=lambda r: r["param.machine.nic.card"])
        assert len(rows) == 2 and rows[0]["jobs[0].tokens_per_s"] == rows[1]["jobs[0].tokens_per_s"]   # a real tie
        assert rows[0]["cost.total"] == rows[1]["cost.total"]
        answers.append(result.answer)
    assert answers[0]["fastest"]["point_hash"] != answers[1]["fastest"]["point_hash"]      # the hashes did change
    for a in answers:
        assert a["fastest"]["param.machine.nic.card"] == NICS[1]                           # roce-400g < roce-800g
        assert a["cheapest_within"]["param.machine.nic.card"] == NICS[1]
        assert [r["param.machine.nic.card"] for r in a["top_by_throughput"]] == sorted(NICS)


def test_seed000_ddp_plan_top_pick(tmp_path):
    """The shipped plan's one-node tie (the NIC carries nothing on one server): 100 GbE RoCE and TCP cost the same, so
    the tie rule picks seed000-roce-100g ('roce' < 'tcp'). At 76e5c24e the hash picked seed000-tcp-100g, at dac541c5
    seed000-roce-100g: the code digest decided; now the configuration does."""
    a = search.run_plan(ROOT / "scenarios/plans/seed000-ddp.yaml", tmp_path, workers=0, progress=io.StringIO()).answer
    top = a["top_by_throughput"]
    assert [(r["param.machine.nodes"], Path(r["param.machine.nic.card"]).stem) for r in top] == [
        (1, "seed000-roce-100g"), (1, "seed000-tcp-100g"), (1, "roce-400g")]
    assert top[0]["pessimistic.time_to_train_s"] == top[1]["pessimistic.time_to_train_s"]
    assert top[0]["pessimistic.cost"] == top[1]["pessimistic.cost"]                        # the tie the rule decides
    assert a["fastest"]["point_hash"] == top[0]["point_hash"]   # cheapest_within is a trust-rule outcome, not a tie: not pinned here (final read 53 item 7)
