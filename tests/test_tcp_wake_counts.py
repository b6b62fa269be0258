"""The TCP receiver's wake-up rule and the ACK count from it (fit/tcp_wake_counts.py; development, not registered):
its queue relation, its fit on known points, its refusals, and its development read of the H200 sweeps pinned (the
numbers docs/models/nic-and-cpu-findings.md, "tcpwake", reports)."""

from __future__ import annotations

import pytest
from conftest import ROOT

from simcluster.errors import CalibrationError
from simcluster.fit import offload_counts as oc
from simcluster.fit import tcp_wake_counts as tw
from simcluster.hardware import transport_counts

K = 1024
SWEEPS = [ROOT / "calibration" / f"h200-transport-{s}" / "lab-sizes-all-noshaping"
          for s in ("sizes-2026-11-28", "sizes2-2026-11-28", "sizes3-2026-11-29", "sizes5-2026-11-29")]


def _points(latency: float, arrival: float, terms: oc.TsoTerms) -> dict[float, tw.WritePoint]:
    """Points obeying the rule exactly: the sender 3 us + 0.15 ns/B per write, the server 1.5 us + 0.1 ns/B."""
    out = {}
    for m in (1 * K, 2 * K, 4 * K, 40 * K, 320 * K, 640 * K):
        s, server = 3e-6 + 0.15e-9 * m, 1.5e-6 + 0.1e-9 * m
        w = (s - server) / latency
        acks = w + arrival * oc.skbs(m)
        cost = terms.msg + terms.skb * oc.skbs(m) + terms.ack * acks + terms.byte * m
        out[m] = tw.WritePoint(s, server, cost, w, float(oc.skbs(m)), acks)
    return out


def test_the_fit_recovers_a_rule_the_points_obey_and_predicts_between():
    terms = oc.TsoTerms(1e-6, 2e-6, 9e-6, 0.2e-9)
    points = _points(7e-6, 0.25, terms)
    rule = tw.fit(points)
    assert rule.latency == pytest.approx(7e-6) and rule.arrival == pytest.approx(0.25)
    assert 40 * K not in rule.fitted                     # a size between is predicted, not read
    for m in (40 * K, 96 * K, 160 * K):                  # s and R are straight lines in m here, so the rule is exact
        s, server = 3e-6 + 0.15e-9 * m, 1.5e-6 + 0.1e-9 * m
        assert rule.wakes(m) == pytest.approx((s - server) / 7e-6)
        assert rule.acks(m) == pytest.approx(rule.wakes(m) + 0.25 * oc.skbs(m))
        assert rule.per_message(m) == pytest.approx(terms.msg + terms.skb * oc.skbs(m) + terms.ack * rule.acks(m)
                                                    + terms.byte * m, rel=1e-6)
    assert rule.wakes_at(1e-6, 2e-6) == 0.0              # a reader slower than its sender never sleeps


def test_the_fit_refuses_missing_sizes_and_a_reader_that_never_slept():
    points = _points(7e-6, 0.25, oc.TsoTerms(1e-6, 2e-6, 9e-6, 0.2e-9))
    with pytest.raises(CalibrationError, match="two or more sizes in 1-4 KiB"):
        tw.fit({m: p for m, p in points.items() if m <= 4 * K})
    awake = {m: tw.WritePoint(p.s, p.server, p.cost, 0.0, p.skbs, p.acks) for m, p in points.items()}
    with pytest.raises(CalibrationError, match="slept"):
        tw.fit(awake)


def test_the_registered_rule_and_the_card_are_untouched():
    """The wake-up rule is beside the registered batching rules, not in them: the fifth sweep's count stays gso_acks,
    and no card prices by the wake-up rule (the TSO/GRO card's ack_rule is one of transport_counts.TSO_ACK_COUNTS)."""
    assert oc.gso_acks is transport_counts.gso_acks
    assert set(transport_counts.TSO_ACK_COUNTS.values()) == {transport_counts.gso_acks, transport_counts.push_acks}
    assert [oc.gso_acks(m * K) for m in (20, 40, 96, 160)] == [1, 1, 1, 1.5]


@pytest.mark.skipif(not all(p.is_dir() for p in SWEEPS), reason="the H200 sweeps' bundles are not in this checkout")
def test_the_development_read_is_the_one_the_findings_report():
    report = tw.folder_report(SWEEPS)
    last = report.splitlines()[-1]
    assert last.startswith("mean |error| over 10 rows: wake-ups 43.1%")
    assert "ACKs 25.4%" in last and "cost 13.4% (registered 13.2%)" in last
    rows = {line.split()[0].split("/")[0] + f"/{line.split()[1]}": line.split()[-2:] for line in report.splitlines()
            if line.startswith("sizes")}
    assert rows["sizes5-2026-11-29/20480"] == ["-11.2%", "-18.0%"]       # the rule's cost error, the registered one's
    assert rows["sizes2-2026-11-28/65536"] == ["+50.3%", "+25.6%"]


def test_the_command_says_in_one_line_when_a_bundle_has_no_tso_rows(capsys):
    loopback = ROOT / "calibration" / "h200-transport-sizes5-2026-11-29" / "loopback-sizes"
    if not loopback.is_dir():
        pytest.skip("the fifth run's bundles are not in this checkout")
    assert tw.main([str(loopback)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no TSO/GRO" in err
