"""The lab's kernel-transport cards are the count models (issue 42): a card's answer (CPU per message, the rate and the
cores the answer path reports) at each registered held-out size is the registered read-out's prediction there, from the
same fit inputs; the committed cards are what the fit command writes today; cards without the count terms price as
before."""

from __future__ import annotations

import dataclasses
import math

import pytest
from conftest import ROOT

from simcluster.cards import load_nic
from simcluster.errors import ModelCardError
from simcluster.fit import host_counts, offload_counts, offload_readout, stack_cards, udp_counts, udp_receiver_counts
from simcluster.fit.host_stack_readout import bundle_rows
from simcluster.hardware import transport_counts
from simcluster.hardware.host_stack import Host, on_host
from simcluster.hardware.nic import NicParams, UdpReceiver
from simcluster.hardware.qperf_model import predict

CAL = ROOT / "calibration"
SIZES5 = CAL / "h200-transport-sizes5-2026-11-29"
SIZES6 = CAL / "h200-transport-sizes6-2026-11-29"
# committed card -> (transport, the registered held-out bundle it is fitted from, {side: the judged sizes of that read})
CARDS = {"local-lab-tcp-stack": ("tcp", CAL / "h200-transport-sizes3-2026-11-29/lab-sizes-none",
                                 {"both": (32768, 131072, 524288)}),
         "local-lab-tcp-gso-stack": ("tcp", SIZES6 / "lab-sizes-all-noshaping",
                                     {"both": (10240, 36864, 57344, 81920, 114688, 204800)}),
         "local-lab-udp-stack": ("udp", SIZES5 / "lab-sizes-none", {"sender": (14336, 20480, 28672, 40960, 61440),
                                                                    "receiver": (14336, 20480, 28672, 40960)})}
# the registered reads' errors of those rows, % (sizes3 README "Result" line 119; sizes6 README "Result": bundle 1's
# TSO/GRO rows, the push ACK rule; sizes5 README "Result": the lab none receiver rows of offload_readout, the lab none UDP
# sender rows of host_stack_readout)
REGISTERED = {"local-lab-tcp-stack": {"both": (3.9, -0.5, 10.6)},
              "local-lab-tcp-gso-stack": {"both": (-6.5, 2.8, 14.6, 12.1, 7.8, 3.6)},
              "local-lab-udp-stack": {"sender": (5.7, 6.6, 30.1, 6.6, 8.9), "receiver": (-5.1, -8.2, -10.6, -10.1)}}


def registered_rows(name: str) -> dict[str, dict[float, object]]:
    """{side: {m: row}} of the registered read-outs' judged rows of a card's bundle: host_stack_readout for the count
    models (TCP, the UDP sender), offload_readout for the TSO/GRO rule and the UDP receiver."""
    transport, bundle, _ = CARDS[name]
    if name == "local-lab-tcp-gso-stack":
        return {"both": {r.m: r for r in offload_readout.bundle_rows(bundle, []) if r.transport == "tcp"}}
    rows = {"both" if transport == "tcp" else "sender":
            {r.m: r for r in bundle_rows(bundle) if r.transport == transport and r.judged}}
    if transport == "udp":
        rows["receiver"] = {r.m: r for r in offload_readout.receiver_rows(bundle, False)}
    return rows


@pytest.mark.parametrize("name", CARDS)
def test_the_cards_answer_at_the_held_out_sizes_is_the_registered_prediction(name):
    transport, bundle, sizes = CARDS[name]
    rows = registered_rows(name)
    assert {side: tuple(sorted(r)) for side, r in rows.items()} == sizes    # the registered read's judged rows
    fitted = stack_cards._fitted(transport, bundle)[0]
    for card, rel in ((fitted, 1e-12), (load_nic(ROOT / f"models/nic/{name}.yaml")[0], 1e-3)):
        for side, by_m in rows.items():             # rel 1e-3: the committed file writes 4 significant digits per term
            both = 2.0 if side == "both" else 1.0   # TCP's models are both sides; the card one side, half of it
            way = "receive" if side == "receiver" else "send"
            for m, row in by_m.items():
                assert both * card.cpu_per_byte(m, way) == pytest.approx(row.predicted, rel=rel)
                rate = card.rate_Bps(streams=1, message_bytes=m)            # one stream: one core a side
                sender = rows.get("sender", {}).get(m, row).predicted     # UDP: the sender is the costlier side
                assert row.predicted <= sender
                assert rate == pytest.approx(min(card.wire_limit_Bps, both / sender), rel=rel)
                assert card.cores_used(rate, m, way) == pytest.approx(rate * row.predicted / both, rel=rel)
                assert on_host(card, Host(cores=16), 1, m, side=way) == pytest.approx(
                    (rate, card.cores_used(rate, m, way)), rel=rel)
    for side, by_m in rows.items():                 # the card's error at those sizes is the registered read's
        both = 2.0 if side == "both" else 1.0
        way = "receive" if side == "receiver" else "send"
        errors = [round((both * fitted.cpu_per_byte(m, way) / by_m[m].median - 1) * 100, 1) for m in sizes[side]]
        assert errors == list(REGISTERED[name][side])


def test_the_gso_card_is_the_push_rule_that_the_sixth_sweeps_registered_read_printed():
    """The GSO card is the rule that won the held-out comparison (sizes6 README "Result": the push rule 7.1%, 9 of 12,
    against the fifth sweep's 7.9%, 8 of 12): its ack_rule names the count its bundle's sweep registered, and its
    both-sides answer at each held-out size is the `predicted` column the registered read printed at the run
    (readout-offload.txt, 3 decimals in s/GB)."""
    nic, doc = load_nic(ROOT / "models/nic/local-lab-tcp-gso-stack.yaml")
    bundle = CARDS["local-lab-tcp-gso-stack"][1]
    assert doc["params"]["ack_rule"] == "tso-push" == offload_readout.tso_ack_rule_name(bundle)
    assert offload_readout.tso_ack_rule(bundle) is transport_counts.push_acks
    printed = {int(cols[3]): float(cols[8]) for line in (SIZES6 / "readout-offload.txt").read_text().splitlines()
               if (cols := line.split())[:3] == [bundle.name, "tcp", "both"]}
    assert sorted(printed) == list(CARDS["local-lab-tcp-gso-stack"][2]["both"])
    for m, predicted in printed.items():
        assert round(2 * nic.cpu_per_byte(m) * 1e9, 3) == pytest.approx(predicted, abs=1.5e-3)
    # the fifth sweep's bundle keeps its registered count: its read-out still fits gso_acks there
    assert offload_readout.tso_ack_rule(SIZES5 / "lab-sizes-all-noshaping") is transport_counts.gso_acks


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
    udp = NicParams("udp", 1e10, 1.0, 1e-6, 0.0, message_bytes=16384, cpu_s_per_split=1.0, cpu_s_per_fragment=10.0)
    terms = udp_counts.UdpTerms(False, 0.0, 1.0, 10.0, 0.0)
    for m in (1024, 2048, 4096, 32768, 65507, 131072, 1 << 20):
        assert tcp.per_message(m) == host_counts.CountTerms(host_counts.MSS, 0.0, 0.0, 1.0, 0.0).per_message(m)
        if m <= transport_counts.UDP_MAX:          # a UDP datagram's largest payload over IPv4
            assert udp.per_message(m) == terms.per_datagram(m)
    assert tcp.per_message(1024) == 0.5 and udp.per_message(1024) == 10.0 and udp.per_message(4096) == 31.0


def test_a_udp_datagram_above_65507_bytes_is_refused_not_priced_as_fragments():
    """65535 - 20 - 8 = 65507 B is the largest UDP payload over IPv4: pricing 1 MiB as 709 MTU fragments was a number
    for a datagram that cannot exist. The card's message_size says so at its line; a direct call says so in one line."""
    udp = load_nic(ROOT / "models/nic/local-lab-udp-stack.yaml")[0]
    assert udp.cpu_per_byte(65507) > 0 and udp.cpu_per_byte(65507, "receive") > 0
    for m in (65508, 1 << 20):
        with pytest.raises(ValueError, match="at most 65507 B") as err:
            udp.cpu_per_byte(m)
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="at most 65507 B"):
        NicParams("udp", 1e10, 1.0, 1e-6, 0.0)         # qperf's 64 KiB default is no UDP datagram
    assert NicParams("tcp", 1e10, 1.0, 1e-6, 0.0).cpu_per_byte(1 << 20) == 0.0     # TCP: a stream, any size


def test_a_udp_card_asking_for_a_64_kib_datagram_is_a_one_line_card_error(tmp_path):
    text = (ROOT / "models/nic/local-lab-udp-stack.yaml").read_text().replace("message_size: 16KiB", "message_size: 64KiB")
    path = tmp_path / "udp.yaml"
    path.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == "message_size: 64KiB")
    with pytest.raises(ModelCardError) as err:
        load_nic(path)
    assert err.value.one_line().startswith(f"{path}:{line}: params.message_size: a UDP datagram carries at most 65507 B")


@pytest.mark.parametrize("rule", transport_counts.TSO_ACK_COUNTS)
def test_the_tso_card_prices_the_batching_rules_one_definition(rule):
    assert offload_counts.skbs is transport_counts.gso_skbs and offload_counts.gso_acks is transport_counts.gso_acks
    terms = offload_counts.TsoTerms(msg=1.0, skb=10.0, ack=100.0, byte=0.001, acks=transport_counts.TSO_ACK_COUNTS[rule])
    card = stack_cards.tso_nic(terms, rule)
    assert card.ack_rule == rule                     # the card names the count its terms were fitted with
    for m in (1024, 2048, 20480, 65160, 65161, 98304, 163840, 1 << 20):
        assert 2 * card.cpu_per_byte(m) == pytest.approx(terms.cost(m), rel=1e-12)
    if rule == "tso-push":                           # one per write + one per 2 x 65160 B, at most one per two MSS
        assert [card.per_message(m) - card.cpu_s_per_message - card.cpu_s_per_packet * card.packets(m)
                for m in (1024, 98304)] == pytest.approx([50.0 * 0.5, 50.0 * (1 + 98304 / (2 * 65160))])
        return
    # the rule's own counts, not the count model's: 1 KiB one ACK per two writes, 96 KiB two super-packets and one ACK,
    # 1 MiB 17 super-packets and 8.5 ACKs (the count model's delayed-ACK rule would say 1.4 x 16 = 22.4)
    assert [transport_counts.gso_acks(m) for m in (1024, 98304, 1 << 20)] == [0.5, 1.0, 8.5]
    assert card.packets(98304) == 2 and card.packets(1 << 20) == 17
    assert transport_counts.acks(1 << 20, transport_counts.GSO) == pytest.approx(22.4)


def test_the_udp_cards_receive_side_is_the_receivers_count_model():
    terms = udp_receiver_counts.ReceiverTerms(False, 1e-7, 3e-6, 4e-7, 0.0, 6e-6)
    rx = UdpReceiver(1e-7, 3e-6, 4e-7, 0.0, 6e-6)
    for m in (1024, 4096, 14336, 40960, 61440):
        for gap in (1e-7, 2e-6, 5e-6, 2e-5):
            assert rx.per_datagram(m, gap) == terms.per_datagram(m, gap)
    card = NicParams("udp", 12.5e9, 0.97, 8e-6, 1e-10, 7.6e-7, 16384, cores_per_stream=1.0, cpu_s_per_split=6.6e-7,
                     cpu_s_per_fragment=1.7e-6, receiver=rx)
    m = 20480
    gap = card.cpu_per_byte(m) * m                  # one stream flat out: the sender's CPU per datagram
    assert card.cpu_per_byte(m, "receive") * m == terms.per_datagram(m, gap)
    assert card.cpu_per_byte(m, "receive") < card.cpu_per_byte(m)
    # a stream the wire paces slower leaves the receiver idle longer between datagrams: it wakes for each (W = 1)
    slow = dataclasses.replace(card, line_rate_Bps=1e8)
    assert slow.cpu_per_byte(m, "receive") * m == pytest.approx(rx.busy(m) + rx.cpu_s_per_wakeup, rel=1e-12)
    assert card.at_clock(2.0).cpu_per_byte(m, "receive") < card.cpu_per_byte(m, "receive")
    assert card.at_clock(2.0).receiver.wakeup_latency_s == rx.wakeup_latency_s     # a latency, not a core's work
    with pytest.raises(ValueError, match="side must be one of"):
        card.cpu_per_byte(m, "both")


def test_a_card_without_the_count_terms_prices_as_before():
    """Every other shipped NIC card (seeds, RDMA, PSM, EFA...): c(m) = copy + csum + (msg + pkt x packets) / m; the one
    card with a verbs block (hardware/verbs.py, tests/test_rdma_ops.py) adds its per-operation cost."""
    others = [p for p in sorted((ROOT / "models/nic").glob("*.yaml"))
              if p.stem not in CARDS and p.stem != "rdma-polled-verbs-100g"]
    assert len(others) >= 10
    for path in others:
        nic, card = load_nic(path)
        assert not {"cpu_per_ack", "cpu_per_split_datagram", "cpu_per_fragment", "ack_rule", "receiver"} & set(card["params"])
        for m in (64, 1448, 65536, 1 << 20):
            packets = max(1, math.ceil(m / nic.segment_bytes))
            old = nic.cpu_s_per_byte + nic.csum_s_per_byte + (nic.cpu_s_per_message + nic.cpu_s_per_packet * packets) / m
            assert nic.cpu_per_byte(m) == old == nic.cpu_per_byte(m, "receive"), path.name


COUNT_TERMS = [(f"  transport: {t}\n  {key}: 1us\n", f"params.{key}") for key, t in
               (("cpu_per_ack", "rdma"), ("cpu_per_ack", "udp"), ("cpu_per_fragment", "tcp"), ("cpu_per_split_datagram", "psm"))]
RULES = [("  transport: udp\n  ack_rule: tso-gro\n", "params.ack_rule"),
         ("  transport: tcp\n  ack_rule: tso-gro\n", "segment_size: 65160B"),
         ("  transport: tcp\n  ack_rule: tso-push\n", "tso-push is TCP's with 64 KiB super-packets"),
         ("  transport: tcp\n  ack_rule: sometimes\n", "expected one of delayed"),
         ("  transport: tcp\n  receiver:\n    cpu_per_datagram: 1us\n    cpu_per_wakeup: 1us\n    wakeup_latency: 5us\n",
          "params.receiver"),
         ("  transport: udp\n  receiver:\n    cpu_per_datagram: 1us\n", "params.receiver: missing key 'cpu_per_wakeup'")]


@pytest.mark.parametrize("params, said", COUNT_TERMS + RULES)
def test_a_count_term_rule_or_receiver_of_another_transport_is_a_one_line_card_error(tmp_path, params, said):
    path = tmp_path / "bad.yaml"
    path.write_text(f"kind: nic\nname: bad\ndescription: x\nparams:\n{params}  line_rate: 100Gbps\n  efficiency: 0.9\n"
                    f"  latency: 5us\n  cpu_per_byte: 0s/GB\n  message_size: 64KiB\n")
    with pytest.raises(ModelCardError) as err:
        load_nic(path)
    assert said in err.value.one_line() and "\n" not in err.value.one_line()
    if said.startswith("params."):     # FILE:LINE of the key named (the rule is NicParams', read at the card's key)
        key = said.split(".")[1].split(":")[0]
        line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith(f"{key}:"))
        assert err.value.one_line().startswith(f"{path}:{line}: {said}"), err.value.one_line()


def test_the_transport_term_rule_is_nicparams_alone():
    """One rule for which terms a transport may have: NicParams refuses them by card key; the card declaration
    (card_params.Nic) reads the same terms without a rule of its own."""
    from simcluster import card_document, card_params
    from simcluster.hardware.nic import ACK_RULES, TRANSPORTS, CardTermError, NicParams

    with pytest.raises(CardTermError) as err:
        NicParams("udp", 1e10, 0.9, 5e-6, 0.0, cpu_s_per_ack=1e-6)
    assert err.value.key == "cpu_per_ack"
    doc = {"transport": "udp", "line_rate": "100Gbps", "efficiency": 0.9, "latency": "5us", "cpu_per_byte": "0s/GB",
           "message_size": "64KiB", "cpu_per_ack": "1us"}
    declared = card_document.declared(doc, "x.yaml", card_params.NIC, transport=TRANSPORTS, ack_rule=ACK_RULES)
    assert declared.cpu_per_ack == pytest.approx(1e-6)


def test_the_card_command_refuses_bad_input_in_one_line(capsys, tmp_path):
    for argv, said in ((["tcp"], "expected tcp|udp BUNDLE OUT.yaml"), (["rdma", str(tmp_path), "x.yaml"], "expected tcp|udp"),
                       (["tcp", str(tmp_path), str(tmp_path / "x.yaml")], "not a trace bundle")):
        assert stack_cards.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and "\n" not in err
    out = tmp_path / "lab.yaml"
    assert stack_cards.main(["udp", str(CARDS["local-lab-udp-stack"][1]), str(out)]) == 0
    assert load_nic(out)[0].cpu_s_per_fragment > 0 and load_nic(out)[0].receiver.cpu_s_per_wakeup > 0
    assert stack_cards.main(["udp", str(SIZES5 / "loopback-sizes"), str(out)]) == 2
    assert "a UDP card is a lab configuration's" in capsys.readouterr().err
