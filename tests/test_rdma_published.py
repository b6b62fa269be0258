"""heldout/rdma_published.py: the published per-core RDMA rows against the host-stack model (issue 42, rdmapub)."""

from pathlib import Path

import pytest
import yaml
from conftest import one_line_refusal

from simcluster.errors import CalibrationError
from simcluster.heldout import rdma_published
from simcluster.trust.band import trust_of
from simcluster.trust.build import transport_residuals
from simcluster.trust.regime import transport_regime
from simcluster.trust.table import Table

ROOT = Path(__file__).resolve().parent.parent


def test_the_once_only_read_is_reproduced_with_the_card_as_shipped():
    # registered: the file committed at 5393cfa before any prediction; read once at 5b3c667
    # (validation/rdma_published-predicted-once.txt). Changing the card changes these: record a new read, do not edit.
    rows = {r.id: r for r in rdma_published.read()}
    assert {k for k, r in rows.items() if r.compare == "none"} == {
        "erpc-small-rpc-per-nic", "snap-rdma-like-per-core", "snap-gbps-per-core", "herd-system-rate"}
    errors = {k: round(r.error * 100, 1) for k, r in rows.items() if r.error is not None}
    assert errors == {"erpc-small-rpc-per-core": 2240.0, "erpc-large-rpc-one-core": 29.3,
                      "perftest65-send-1024": 564.2, "perftest273-write-8-postlist": 338.7}
    assert not [r for r in rows.values() if r.met]
    recorded = (ROOT / "validation" / "rdma_published-predicted-once.txt").read_text()
    for value in ("+2240.0%", "+29.3%", "+564.2%", "+338.7%", "judged 4, met 0"):
        assert value in recorded


def test_a_cheaper_card_meets_the_bounds_and_misses_the_point_the_other_way(tmp_path):
    # the rows can pass: a card at 100 ns per message is within both perftest bounds; the eRPC point then reads -50%
    card = yaml.safe_load(rdma_published.CARD.read_text())
    card["params"]["cpu_per_message"] = "100ns"
    path = tmp_path / "cheap.yaml"
    path.write_text(yaml.safe_dump(card))
    rows = {r.id: r for r in rdma_published.read(card=path)}
    assert rows["perftest65-send-1024"].met and rows["perftest273-write-8-postlist"].met
    assert rows["erpc-small-rpc-per-core"].error == pytest.approx(1.0, rel=1e-9)   # 100 ns vs 50 ns measured


def test_the_cost_row_is_a_transport_residual_of_the_ud_regime():
    rows = rdma_published.held_out_rows()
    assert [(r["transport"], r["source"], r["m"]) for r in rows] == [("rdma_ud", "published erpc2019", 32.0)]
    (res,) = transport_residuals(rows)
    assert res.family == "transport" and res.regime == transport_regime("rdma_ud").key
    assert res.rho == pytest.approx(50e-9 / 1.17e-6, rel=1e-6)      # measured / predicted cost per byte
    trust = trust_of(transport_regime("rdma_ud"), Table([res]))
    assert trust.own == (1, 1) and trust.status == "unvalidated"       # one row, one source: too few for its own band
    assert trust_of(transport_regime("rdma_rc"), Table([res])).own == (0, 0)   # RC: bounds only, no point row


def test_other_rdma_cards_carry_no_host_cost_but_the_polled_verbs_card():
    others = dict(rdma_published.other_rdma_cards())
    verbs = others.pop("rdma-polled-verbs-100g")          # session 36: 33.07 + 109.8 ns per WQE posted alone
    assert verbs == pytest.approx(142.87e-9, rel=1e-6)
    assert "seed000-roce-100g" in others and all(cost == 0 for cost in others.values())


def _set(row: int, key: str, value):
    return lambda d: d["rows"][row].__setitem__(key, value)


@pytest.mark.parametrize(("edit", "where", "says"), [
    (_set(0, "compare", "bogus"), "rows[0].compare", "expected one of cost, bound, rate, none, got 'bogus'"),
    (lambda d: d["rows"][0].pop("rpcs_per_second"), "rows[0].rpcs_per_second", "`rpcs_per_second` is missing"),
    (_set(0, "rpcs_per_second", "ten"), "rows[0].rpcs_per_second", "expected a number > 0, got 'ten'"),
    (_set(0, "rpcs_per_second", 0), "rows[0].rpcs_per_second", "expected a number > 0, got 0"),
    (_set(0, "rpcs_per_second", True), "rows[0].rpcs_per_second", "expected a number > 0, got True"),
    (_set(0, "messages_per_rpc_per_core", -2), "rows[0].messages_per_rpc_per_core", "expected a number > 0, got -2"),
    (_set(0, "message", "abc"), "rows[0].message", "expected a message size > 0 (e.g. 32B, 8MB), got 'abc'"),
    (_set(0, "message", "0B"), "rows[0].message", "expected a message size > 0"),
    (_set(1, "throughput", "fast"), "rows[1].throughput", "expected a throughput > 0 (e.g. 75Gbps), got 'fast'"),
    (_set(1, "cores", "nan"), "rows[1].cores", "expected a number > 0, got 'nan'"),
    (_set(3, "msg_rate_Mpps", [5.6]), "rows[3].msg_rate_Mpps", "expected a number > 0, got [5.6]"),
    (_set(4, "duration_s", 0), "rows[4].duration_s", "expected a number > 0, got 0"),
    (lambda d: d["rows"][0].pop("source"), "rows[0].source", "expected the source's name (a non-empty string), got None"),
    (_set(3, "source", " "), "rows[3].source", "expected the source's name (a non-empty string), got ' '"),
    (lambda d: d["rows"][0].pop("transport"), "rows[0].transport", "expected one of rdma_rc, rdma_ud (a compared row), got None"),
    (_set(1, "transport", "rdma_uc"), "rows[1].transport", "expected one of rdma_rc, rdma_ud (a compared row), got 'rdma_uc'"),
    (lambda d: d["rows"].__setitem__(2, "a row"), "rows[2]", "expected a mapping of the row's keys, got str 'a row'"),
    (lambda d: d.__setitem__("rows", {"a": 1}), "rows", "expected a list of rows, got dict"),
])
def test_bad_rows_get_a_one_line_error_naming_the_file_row_and_key(tmp_path, edit, where, says):
    text = one_line_refusal(rdma_published.read, rdma_published.FILE, edit, tmp_path, CalibrationError)
    assert text.startswith(f"{tmp_path / rdma_published.FILE.name}: {where}: ") and says in text


def test_a_file_that_is_not_yaml_is_one_line(tmp_path):
    path = tmp_path / "rows.yaml"
    path.write_text("rows: [\n")
    with pytest.raises(CalibrationError) as info:
        rdma_published.read(path)
    assert str(info.value).startswith(str(path)) and "not valid YAML" in str(info.value)


def test_an_rdma_qperf_answer_carries_the_one_card_caveat(tmp_path, capsys):
    """The RDMA rows price seed004's card only; an RDMA answer says so, a TCP one does not (trust/band.RDMA_CAVEAT)."""
    import json

    from simcluster.cards import load_nic
    from simcluster.cli import main
    from simcluster.trust.band import RDMA_CAVEAT

    nic, _ = load_nic(rdma_published.CARD)
    assert f"{rdma_published.CARD.stem} prices interrupt-driven completions ({nic.cpu_s_per_message * 1e6:.2f} us" in RDMA_CAVEAT
    verbs, _ = load_nic(ROOT / "models" / "nic" / "rdma-polled-verbs-100g.yaml")
    assert (f"{verbs.verbs.cpu_s_per_wqe * 1e9:.2f} ns per WQE, {verbs.verbs.cpu_s_per_doorbell * 1e9:.1f} ns per doorbell"
            in RDMA_CAVEAT)
    # what the band is and what the rows check (cold read B, 6): the host cost per WQE does not bind at 64 KiB
    assert RDMA_CAVEAT.startswith("RDMA: the band printed is the transport family's pooled band (held-out TCP and UDP")
    assert f"({verbs.cores_used(verbs.wire_limit_Bps, 65536):.3f} of a core at the wire's rate)" in RDMA_CAVEAT
    assert verbs.message_bytes == 65536 and "qperf's 64 KiB" in RDMA_CAVEAT
    zero = [c for name, c in rdma_published.other_rdma_cards() if name != "rdma-polled-verbs-100g"]
    assert all(cost == 0 for cost in zero) and "the other RDMA cards price 0 s" in RDMA_CAVEAT
    scenario = tmp_path / "rdma-qperf.yaml"
    scenario.write_text(f"""name: rdma-qperf
machine:
  gpus_per_node: 1
  nodes: 2
  nic: {{card: {ROOT}/models/nic/seed000-roce-100g.yaml, per_node: 1}}
  fabric: {{kind: leaf-spine, down_ports: 2, spines: 1}}
  host: {{cores: 8}}
jobs:
  - {{kind: qperf, tests: [rc_bw, rc_lat, tcp_bw]}}
""")
    assert main(["run", str(scenario)]) == 0
    text = capsys.readouterr().out
    assert text.count("caveat: RDMA: the band printed is the transport family's pooled band") == 1     # one per regime
    assert main(["run", str(scenario), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    job = doc["jobs"][0] if "jobs" in doc else doc
    by = job["validation_by_test"]
    assert by["rc_bw"]["caveat"] == by["rc_lat"]["caveat"] == RDMA_CAVEAT and "caveat" not in by["tcp_bw"]
    assert trust_of(transport_regime("rdma_ud")).caveat == RDMA_CAVEAT


def test_the_read_out_prints_bad_input_as_one_line(tmp_path, monkeypatch, capsys):
    """validation/rdma_published.py: a published file that does not read is one line on stderr and exit 1, no
    traceback; the shipped files read and exit 0."""
    from conftest import load_script

    from simcluster.heldout import rdma_published

    script = load_script("validation/rdma_published.py")
    assert script.main() == 0
    capsys.readouterr()
    bad = tmp_path / "host-stack-rdma.yaml"
    bad.write_text("rows: {not: a list}\n")
    monkeypatch.setattr(rdma_published, "FILE", bad)
    assert script.main() == 1
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert err.startswith("error: ") and "\n" not in err and str(bad) in err and "Traceback" not in cap.err


def test_the_read_out_takes_no_arguments():
    """validation/rdma_published.py has no positionals: any argument is argparse's usage error (exit 2), not ignored."""
    import os
    import subprocess
    import sys

    got = subprocess.run([sys.executable, str(ROOT / "validation" / "rdma_published.py"), "calibration/elsewhere.yaml"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert got.returncode == 2 and "usage:" in got.stderr and "unrecognized arguments" in got.stderr
