"""The lab's kernel-transport NIC cards, fitted through the count models (issue 42; docs/models/nic-and-cpu.md, "Cards
from the count models"): one qperf-sizes bundle (one configuration of one sweep) -> a TCP or a UDP card whose answers
(hardware/nic.py: cost per byte on each side, rate, cores) are the registered read-outs' predictions.

    python -m simcluster.fit.stack_cards tcp|udp BUNDLE OUT.yaml

Each fit is the registered read-out's own, so the card's answer at a held-out size is the prediction that read judges
there (tests/test_stack_cards.py):
- TCP with TSO/GRO (the unshaped lab with offloads all, offload_counts.TSO_CONFIG): the batching rule,
  offload_counts.fit_tso on the bundle's TCP 1-4 KiB and its two largest sizes (fit/offload_readout.py's read) with the
  ACK count its sweep registered (offload_readout.tso_ack_rule_name: the sixth sweep's push rule, else the fifth's),
  written on the card as its ack_rule, which hardware/nic.py prices by (transport_counts.TSO_ACK_COUNTS);
- any other TCP configuration: the count model, host_counts.bundle_inputs + fit_medians (fitted on TCP 1-4 KiB and the
  run's UDP train; fit/host_stack_readout.py's read);
- UDP (a lab configuration): the sender's count model, udp_counts.bundle_inputs + fit_medians (m <= 8 KiB and the run's
  loopback per-byte cost; host_stack_readout's read), and the receive side the receiver's count model,
  udp_receiver_counts.fit on m <= 8 KiB and the largest size with the runs' wake-ups (offload_readout's read), its
  wake-ups at a size from the sender's predicted time per datagram there, as the read predicts them.

Per side: the TCP models are one stream's whole work (client + server + ksoftirqd): each side of the card carries half
of every term (the lab charges the receive path to either process, docs/models/nic-and-cpu.md). The UDP card's send and
receive sides are the two models. Loopback has no UDP card (its sender's two skb regimes are not card terms).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from simcluster.errors import CalibrationError
from simcluster.fit import host_counts, udp_counts
from simcluster.fit import offload_counts as oc
from simcluster.fit import udp_receiver_counts as rc
from simcluster.fit.offload_readout import tso_ack_rule, tso_ack_rule_name
from simcluster.hardware.nic import NicParams, UdpReceiver
from simcluster.hardware.transport_counts import GSO, MSS, TSO_ACK_COUNTS

LINE_RATE_Bps = 100e9 / 8      # the lab's tc tbf rate (100gbit: not binding at one stream's CPU-bound rate)
LAB_LATENCY_S = 8.07e-6        # qperf tcp_lat in the same lab (models/nic/local-lab-tcp-400mbit.yaml)
TCP_EFFICIENCY = MSS / 1514    # payload per MTU-1500 frame on the wire (Ethernet header and FCS)
UDP_EFFICIENCY = 1472 / 1514   # one unfragmented datagram's payload per frame
TCP_MESSAGE = 65536.0          # qperf's default message size
UDP_MESSAGE = 16384.0


def tcp_nic(terms: host_counts.CountTerms) -> NicParams:
    """One side of the TCP count model's stream: half of each both-sides term."""
    return NicParams("tcp", LINE_RATE_Bps, TCP_EFFICIENCY, LAB_LATENCY_S, terms.byte / 2, terms.msg / 2, TCP_MESSAGE,
                     0.0, terms.pkt / 2, terms.seg, cores_per_stream=1.0, cpu_s_per_ack=terms.ack / 2)


def tso_nic(terms: oc.TsoTerms, rule: str) -> NicParams:
    """One side of the TSO/GRO batching rule's stream: half of each both-sides term, 64 KiB super-packets, `rule` the
    card ack_rule key (transport_counts.TSO_ACK_COUNTS) of the count the terms were fitted with."""
    return NicParams("tcp", LINE_RATE_Bps, TCP_EFFICIENCY, LAB_LATENCY_S, terms.byte / 2, terms.msg / 2, TCP_MESSAGE,
                     0.0, terms.skb / 2, GSO, cores_per_stream=1.0, cpu_s_per_ack=terms.ack / 2, ack_rule=rule)


def udp_nic(terms: udp_counts.UdpTerms, receiver: rc.ReceiverTerms) -> NicParams:
    """The UDP sender's count model as the send side, the receiver's as the receive side."""
    rx = UdpReceiver(receiver.dgram, receiver.wake, receiver.frag, receiver.byte, float(receiver.latency))
    return NicParams("udp", LINE_RATE_Bps, UDP_EFFICIENCY, LAB_LATENCY_S, terms.byte, terms.dgram, UDP_MESSAGE,
                     cores_per_stream=1.0, cpu_s_per_split=terms.split, cpu_s_per_fragment=terms.frag, receiver=rx)


def is_tso(bundle: Path) -> bool:
    """Whether a bundle is the TSO/GRO batching rule's configuration (the unshaped lab with offloads all)."""
    return oc.bundle_costs(bundle)[0] == oc.TSO_CONFIG


def tcp_terms(bundle: Path) -> host_counts.CountTerms:
    """The TCP count model of one configuration bundle, fitted as the registered read-out fits it."""
    return host_counts.fit_medians(*host_counts.bundle_inputs(bundle))


def tso_terms(bundle: Path) -> oc.TsoTerms:
    """The TSO/GRO batching rule of one unshaped offloads-all bundle, fitted as offload_readout fits it (the ACK count
    its sweep registered)."""
    return oc.fit_tso(oc.medians(oc.bundle_costs(bundle)[1].get(("tcp", "both"), {})), acks=tso_ack_rule(bundle))


def udp_terms(bundle: Path) -> udp_counts.UdpTerms:
    """The UDP sender's count model of one configuration bundle, fitted as the registered read-out fits it."""
    return udp_counts.fit_medians(*udp_counts.bundle_inputs(bundle))


def receiver_terms(bundle: Path) -> rc.ReceiverTerms:
    """The UDP receiver's count model of one lab bundle, fitted as offload_readout fits it."""
    return rc.fit(rc.medians(rc.bundle_points(bundle)), False)


def _runs(bundle: Path, test: str, sizes) -> list[Path]:
    """The stdout of every run of `test` at the given sizes in a bundle, and its manifest (the runs' CPU seconds)."""
    found = [p for m in sorted(sizes) for p in sorted(bundle.glob(f"qperf-sizes/{test}-m{int(m)}-*/stdout.txt"))]
    return [bundle / "manifest.json", *found] if found else []


def _inputs(transport: str, bundle: Path) -> list[Path]:
    """The files the fit reads: TCP 1-4 KiB and the UDP train (the bundle's own without GSO, else the run's loopback);
    the UDP sender's sizes <= FIT_HIGH and, for a lab bundle, the run's loopback ones."""
    sibling = host_counts.loopback_sibling(bundle)
    if transport == "tcp" and is_tso(bundle):
        return _runs(bundle, "tcp_bw", oc.tso_fit_sizes(oc.bundle_costs(bundle)[1][("tcp", "both")]))
    if transport == "tcp":
        seg, sizes, _, _ = host_counts.bundle_inputs(bundle)
        tcp = _runs(bundle, "tcp_bw", [m for m in sizes if host_counts.FIT_LOW <= m <= host_counts.FIT_HIGH])
        train = bundle if seg == host_counts.MSS else sibling
        return tcp + (_runs(train, "udp_bw", host_counts.TRAIN) if train is not None else [])
    small = [m for m in udp_counts.bundle_inputs(bundle)[1] if m <= udp_counts.FIT_HIGH]
    loop = [] if sibling is None or sibling == bundle else _runs(sibling, "udp_bw", small)
    return _runs(bundle, "udp_bw", sorted({*small, *rc.fit_sizes(rc.bundle_points(bundle))})) + loop


def judged_rows(transport: str, bundle: Path) -> list[tuple[str, object]]:
    """(card side, row) of every row the registered read-outs judge in this bundle for this card: TCP both sides
    (offload_readout's TSO/GRO rows or host_stack_readout's count-model rows), the UDP sender (host_stack_readout) and
    the UDP receiver (offload_readout)."""
    from simcluster.fit import host_stack_readout, offload_readout

    if transport == "tcp" and is_tso(bundle):
        return [("both", r) for r in offload_readout.bundle_rows(bundle, []) if r.transport == "tcp"]
    rows = [(r.side, r) for r in host_stack_readout.bundle_rows(bundle) if r.transport == transport and r.judged]
    return rows + ([("receiver", r) for r in offload_readout.receiver_rows(bundle, False)] if transport == "udp" else [])


def answer(nic: NicParams, side: str, m: float) -> float:
    """The card's cost per byte on a read-out row's side: TCP both sides = twice one side (each carries half)."""
    return 2.0 * nic.cpu_per_byte(m) if side == "both" else nic.cpu_per_byte(m, "receive" if side == "receiver" else "send")


def _held_out_notes(transport: str, bundle: Path, nic: NicParams) -> list[str]:
    """The card's answer at each size the read-outs judge in this bundle, beside the measured median (held out: the fit
    never read these sizes)."""
    return [f"held out {int(r.m)} B: card {answer(nic, side, r.m) * 1e9:.3f} s/GB "
            f"({'both sides' if side == 'both' else side}), measured median {r.median * 1e9:.3f} s/GB, "
            f"{answer(nic, side, r.m) / r.median - 1:+.1%}" for side, r in judged_rows(transport, bundle)]


WHAT = {"tcp": ("TCP stack, one stream: the count model (fit/host_counts.py) fitted on TCP 1-4 KiB and the run's UDP "
               "4 -> 16 KiB train"),
        "tso-gro": ("TCP stack with TSO/GRO, one stream: the batching rule (fit/offload_counts.py: 64 KiB "
                    "super-packets, an ACK per second one) fitted on TCP 1-4 KiB and the bundle's two largest sizes"),
        "tso-push": ("TCP stack with TSO/GRO, one stream: the batching rule (fit/offload_counts.py: 64 KiB "
                     "super-packets) with the push ACK rule (transport_counts.push_acks: one ACK per write and one per "
                     "two super-packets' bytes) fitted on TCP 1-4 KiB and the bundle's two largest sizes"),
        "udp": ("UDP stack, one stream: the sender's count model (fit/udp_counts.py) fitted on udp_bw <= 8 KiB and the "
                "run's loopback per-byte cost; the receive side the receiver's (fit/udp_receiver_counts.py: wake-ups "
                "per datagram from the sender's pace) fitted on udp_bw <= 8 KiB and the largest size")}

ACKS_SAID = {"tso-gro": "one per second super-packet", "tso-push": "one per write + one per 2 x 65160 B"}


def _fitted(transport: str, bundle: Path) -> tuple[NicParams, str]:
    """The card's parameters and a note of the fitted terms (core-seconds per event, as fitted)."""
    if transport == "tcp" and is_tso(bundle):
        g = tso_terms(bundle)
        nic = tso_nic(g, tso_ack_rule_name(bundle))
        return nic, (f"both sides: {g.msg * 1e9:.0f} ns per write + {g.skb * 1e9:.0f} ns per 65160-B super-packet "
                     f"+ {g.ack * 1e9:.0f} ns per ACK ({ACKS_SAID[nic.ack_rule]}) + {g.byte * 1e9:.3f} s/GB; each side half")
    if transport == "tcp":
        t = tcp_terms(bundle)
        return tcp_nic(t), (f"both sides: {t.msg * 1e9:.0f} ns per message + {t.pkt * 1e9:.0f} ns per {t.seg:.0f}-B "
                            f"packet + {t.ack * 1e9:.0f} ns per ACK + {t.byte * 1e9:.3f} s/GB; each side half")
    if udp_counts.bundle_inputs(bundle)[0]:
        raise CalibrationError("a UDP card is a lab configuration's: loopback's sender has two skb regimes "
                               "(fit/offload_counts.py) that are not card terms", where=str(bundle))
    u, r = udp_terms(bundle), receiver_terms(bundle)
    return udp_nic(u, r), (f"sender: {u.dgram * 1e9:.0f} ns per datagram + {u.split * 1e9:.0f} ns per fragmented "
                           f"datagram + {u.frag * 1e9:.0f} ns per IP fragment + {u.byte * 1e9:.3f} s/GB; receiver: "
                           f"{r.dgram * 1e9:.0f} ns per datagram + {r.wake * 1e9:.0f} ns per wake-up + "
                           f"{r.frag * 1e9:.0f} ns per IP fragment + {r.byte * 1e9:.3f} s/GB, wake-up latency "
                           f"{r.latency * 1e6:.2f} us")


def card(transport: str, bundle: Path, name: str) -> dict:
    """A NIC card of one lab configuration's TCP stack (both-sides count model, half per side) or UDP sender."""
    from simcluster.cards import nic_params_yaml
    from simcluster.fit.bundle_files import bundle_provenance
    from simcluster.fit.host_stack import bundle_samples, config_label

    bundle = Path(bundle)
    if transport not in ("tcp", "udp"):
        raise CalibrationError(f"transport {transport!r}: expected tcp or udp")
    config = config_label(bundle_samples(bundle)[1])
    nic, fitted = _fitted(transport, bundle)
    what = WHAT[nic.ack_rule if nic.ack_rule in TSO_ACK_COUNTS else transport]
    manifest = json.loads((bundle / "manifest.json").read_text())
    return {"kind": "nic", "name": name,
            "description": (f"This machine's {what} (python -m simcluster.fit.stack_cards {transport} {bundle}; "
                            f"configuration: {config}). Latency carried from models/nic/local-lab-tcp-400mbit.yaml "
                            f"(qperf tcp_lat in the same lab); line rate the lab's tbf 100gbit."),
            "params": nic_params_yaml(nic),
            "fit": {"notes": [fitted, *_held_out_notes(transport, bundle, nic)]},
            "provenance": bundle_provenance(_inputs(transport, bundle), bundle, manifest)}


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring); bad input is one line on stderr and exit status 2."""
    from simcluster.card_document import dump_card
    from simcluster.errors import SimclusterError

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if len(args) != 3 or args[0] not in ("tcp", "udp"):
            raise SimclusterError("expected tcp|udp BUNDLE OUT.yaml (BUNDLE: one qperf-sizes configuration folder)")
        transport, bundle, out = args[0], Path(args[1]), Path(args[2])
        out.write_text(dump_card(card(transport, bundle, out.stem)))
        print(f"wrote {out}")
    except (SimclusterError, OSError, ValueError) as exc:
        print(f"simcluster.fit.stack_cards: {exc.one_line() if isinstance(exc, SimclusterError) else exc}",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
