"""The lab's kernel-transport cards are the count models (issue 42): a card's answer (CPU per message, the rate and the
cores the answer path reports) at each registered held-out size is the registered read-out's prediction there, from the
same fit inputs; the committed cards are what the fit command writes today; cards without the count terms price as
before."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT

from simcluster.cards import load_nic
from simcluster.errors import ModelCardError
from simcluster.fit import host_counts, stack_cards, udp_counts
from simcluster.fit.host_stack_readout import bundle_rows
from simcluster.hardware import transport_counts
from simcluster.hardware.host_stack import Host, on_host
from simcluster.hardware.nic import NicParams
from simcluster.hardware.qperf_model import predict

CAL = ROOT / "calibration"
# committed card -> (transport, the registered held-out bundle it is fitted from, the judged sizes of that read)
CARDS = {"local-lab-tcp-stack": ("tcp", CAL / "h200-transport-sizes3-2026-11-29/lab-sizes-none", (32768, 131072, 524288)),
         "local-lab-tcp-gso-stack": ("tcp", CAL / "h200-transport-sizes3-2026-11-29/lab-sizes-all-noshaping",
                                     (32768, 131072, 524288)),
         "local-lab-udp-stack": ("udp", CAL / "h200-transport-udp4-2026-11-29/lab-sizes-none", (12288, 24576, 49152))}
# the registered reads' errors of those rows, % (each sweep's README "Result": sizes3 lines 119 and 122, udp4 line 95)
REGISTERED = {"local-lab-tcp-stack": (3.9, -0.5, 10.6), "local-lab-tcp-gso-stack": (-21.2, 43.4, 34.7),
              "local-lab-udp-stack": (6.5, 14.4, 23.4)}


@pytest.mark.parametrize("name", CARDS)
def test_the_cards_answer_at_the_held_out_sizes_is_the_registered_prediction(name):
    transport, bundle, sizes = CARDS[name]
    rows = {r.m: r for r in bundle_rows(bundle) if r.transport == transport and r.judged}
    assert sorted(rows) == list(sizes)              # the registered read's judged rows of this configuration
    both = 2.0 if transport == "tcp" else 1.0       # TCP's count model is both sides; the card one side, half of it
    for card, rel in ((stack_cards._fitted(transport, bundle)[0], 1e-12), (load_nic(ROOT / f"models/nic/{name}.yaml")[0], 1e-3)):
        for m, row in rows.items():                 # rel 1e-3: the committed file writes 4 significant digits per term
            assert both * card.cpu_per_byte(m) == pytest.approx(row.predicted, rel=rel)
            assert both * card.per_message(m) / m + both * card.cpu_s_per_byte == pytest.approx(row.predicted, rel=rel)
            rate = card.rate_Bps(streams=1, message_bytes=m)            # one stream: one core a side (cores_per_stream)
            assert rate == pytest.approx(min(card.wire_limit_Bps, both / row.predicted), rel=rel)
            assert card.cores_used(rate, m) == pytest.approx(rate * row.predicted / both, rel=rel)
            assert on_host(card, Host(cores=16), 1, m) == pytest.approx((rate, card.cores_used(rate, m)), rel=rel)
    fitted = stack_cards._fitted(transport, bundle)[0]
    errors = [round((both * fitted.cpu_per_byte(m) / rows[m].median - 1) * 100, 1) for m in sizes]
    assert errors == list(REGISTERED[name])           # the card's error at those sizes is the registered read's


def test_a_qperf_answer_from_the_card_is_the_count_model_at_its_message_size():
    nic, _ = load_nic(ROOT / "models/nic/local-lab-tcp-stack.yaml")
    terms = stack_cards.tcp_terms(CARDS["local-lab-tcp-stack"][1])
    assert nic.message_bytes == 65536 and terms.seg == host_counts.MSS
    got = predict(nic, ("tcp_bw",))["tcp_bw"]
    assert got == pytest.approx(min(nic.wire_limit_Bps, 2 / terms.cost(65536)), rel=1e-3)
    assert got < nic.wire_limit_Bps                 # CPU-bound: the count model sets the answer, not the wire


@pytest.mark.parametrize("name", CARDS)
def test_the_committed_cards_are_what_the_fit_command_writes_today(name):
    transport, bundle, _ = CARDS[name]
    committed = load_nic(ROOT / f"models/nic/{name}.yaml")[1]
    fresh = stack_cards.card(transport, bundle.relative_to(ROOT), name)
    assert committed["params"] == fresh["params"]
    assert committed["fit"] == fresh["fit"]
    assert [t["path"] for t in committed["provenance"]["traces"]] == [t["path"] for t in fresh["provenance"]["traces"]]


def test_the_cards_count_rules_are_the_fits_one_definition():
    assert host_counts.acks is transport_counts.acks and host_counts.packets is transport_counts.packets
    assert host_counts.fragments is transport_counts.fragments
    tcp = NicParams("tcp", 1e10, 1.0, 1e-6, 0.0, segment_bytes=host_counts.MSS, cpu_s_per_ack=1.0)
    udp = NicParams("udp", 1e10, 1.0, 1e-6, 0.0, cpu_s_per_split=1.0, cpu_s_per_fragment=10.0)
    terms = udp_counts.UdpTerms(False, 0.0, 1.0, 10.0, 0.0)
    for m in (1024, 2048, 4096, 32768, 131072, 1 << 20):
        assert tcp.per_message(m) == host_counts.CountTerms(host_counts.MSS, 0.0, 0.0, 1.0, 0.0).per_message(m)
        assert udp.per_message(m) == terms.per_datagram(m)
    assert tcp.per_message(1024) == 0.5 and udp.per_message(1024) == 10.0 and udp.per_message(4096) == 31.0


def test_a_card_without_the_count_terms_prices_as_before():
    """Every other shipped NIC card (seeds, RDMA, PSM, EFA...): c(m) = copy + csum + (msg + pkt x packets) / m."""
    others = [p for p in sorted((ROOT / "models/nic").glob("*.yaml")) if p.stem not in CARDS]
    assert len(others) >= 10
    for path in others:
        nic, card = load_nic(path)
        assert not {"cpu_per_ack", "cpu_per_split_datagram", "cpu_per_fragment"} & set(card["params"])
        for m in (64, 1448, 65536, 1 << 20):
            packets = max(1, math.ceil(m / nic.segment_bytes))
            old = nic.cpu_s_per_byte + nic.csum_s_per_byte + (nic.cpu_s_per_message + nic.cpu_s_per_packet * packets) / m
            assert nic.cpu_per_byte(m) == old, path.name


@pytest.mark.parametrize("key, transport", [("cpu_per_ack", "rdma"), ("cpu_per_ack", "udp"),
                                            ("cpu_per_fragment", "tcp"), ("cpu_per_split_datagram", "psm")])
def test_a_count_term_of_another_transport_is_a_one_line_card_error(tmp_path, key, transport):
    path = tmp_path / "bad.yaml"
    path.write_text(f"kind: nic\nname: bad\ndescription: x\nparams:\n  transport: {transport}\n  line_rate: 100Gbps\n"
                    f"  efficiency: 0.9\n  latency: 5us\n  cpu_per_byte: 0s/GB\n  message_size: 64KiB\n  {key}: 1us\n")
    with pytest.raises(ModelCardError) as err:
        load_nic(path)
    assert f"params.{key}" in err.value.one_line() and "\n" not in err.value.one_line()


def test_the_card_command_refuses_bad_input_in_one_line(capsys, tmp_path):
    for argv, said in ((["tcp"], "expected tcp|udp BUNDLE OUT.yaml"), (["rdma", str(tmp_path), "x.yaml"], "expected tcp|udp"),
                       (["tcp", str(tmp_path), str(tmp_path / "x.yaml")], "not a trace bundle")):
        assert stack_cards.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and "\n" not in err
    out = tmp_path / "lab.yaml"
    assert stack_cards.main(["udp", str(CARDS["local-lab-udp-stack"][1]), str(out)]) == 0
    assert load_nic(out)[0].cpu_s_per_fragment > 0
