"""The lab's kernel-transport NIC cards, fitted through the count models (issue 42; docs/models/nic-and-cpu.md, "Cards
from the count models"): one qperf-sizes bundle (one configuration of one sweep) -> a TCP or a UDP card whose answers
(hardware/nic.py: cost per byte, rate, cores) are the count model's predictions.

    python -m simcluster.fit.stack_cards tcp|udp BUNDLE OUT.yaml

The fit is the registered read-out's own (fit/host_stack_readout.py): host_counts.bundle_inputs + fit_medians for TCP
(both sides, fitted on the bundle's TCP 1-4 KiB and its run's UDP train), udp_counts.bundle_inputs + fit_medians for the
UDP sender (fitted on m <= 8 KiB and the run's loopback per-byte cost). Same inputs, same terms, so the card's answer at
a held-out size is the read-out's prediction there (tests/test_stack_cards.py), and the transport band
(heldout/transport.py) checks the model the answers use.

Per side: TCP's count model is one stream's whole work (client + server + ksoftirqd): each side of the card carries half
of every term (the lab charges the receive path to either process, docs/models/nic-and-cpu.md). The UDP card is the
sender's count model (the costlier side per byte above 4 KiB in every lab configuration; the receiver's drops are not
modelled), used for both sides.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from simcluster.fit import host_counts, udp_counts
from simcluster.hardware.nic import NicParams
from simcluster.hardware.transport_counts import MSS

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


def udp_nic(terms: udp_counts.UdpTerms) -> NicParams:
    """The UDP sender's count model as a card (both sides priced as the sender)."""
    return NicParams("udp", LINE_RATE_Bps, UDP_EFFICIENCY, LAB_LATENCY_S, terms.byte, terms.dgram, UDP_MESSAGE,
                     cores_per_stream=1.0, cpu_s_per_split=terms.split, cpu_s_per_fragment=terms.frag)


def tcp_terms(bundle: Path) -> host_counts.CountTerms:
    """The TCP count model of one configuration bundle, fitted as the registered read-out fits it."""
    return host_counts.fit_medians(*host_counts.bundle_inputs(bundle))


def udp_terms(bundle: Path) -> udp_counts.UdpTerms:
    """The UDP sender's count model of one configuration bundle, fitted as the registered read-out fits it."""
    return udp_counts.fit_medians(*udp_counts.bundle_inputs(bundle))


def _runs(bundle: Path, test: str, sizes) -> list[Path]:
    """The stdout of every run of `test` at the given sizes in a bundle, and its manifest (the runs' CPU seconds)."""
    found = [p for m in sorted(sizes) for p in sorted(bundle.glob(f"qperf-sizes/{test}-m{int(m)}-*/stdout.txt"))]
    return [bundle / "manifest.json", *found] if found else []


def _inputs(transport: str, bundle: Path) -> list[Path]:
    """The files the fit reads: TCP 1-4 KiB and the UDP train (the bundle's own without GSO, else the run's loopback);
    the UDP sender's sizes <= FIT_HIGH and, for a lab bundle, the run's loopback ones."""
    sibling = host_counts.loopback_sibling(bundle)
    if transport == "tcp":
        seg, sizes, _, _ = host_counts.bundle_inputs(bundle)
        tcp = _runs(bundle, "tcp_bw", [m for m in sizes if host_counts.FIT_LOW <= m <= host_counts.FIT_HIGH])
        train = bundle if seg == host_counts.MSS else sibling
        return tcp + (_runs(train, "udp_bw", host_counts.TRAIN) if train is not None else [])
    small = [m for m in udp_counts.bundle_inputs(bundle)[1] if m <= udp_counts.FIT_HIGH]
    loop = [] if sibling is None or sibling == bundle else _runs(sibling, "udp_bw", small)
    return _runs(bundle, "udp_bw", small) + loop


def _held_out_notes(transport: str, bundle: Path, nic: NicParams) -> list[str]:
    """The card's answer at each size the read-out judges in this bundle, beside the measured median (held out: the fit
    never read these sizes); TCP compared both sides (twice the card's one side)."""
    from simcluster.fit.host_stack_readout import bundle_rows

    side = 2.0 if transport == "tcp" else 1.0
    rows = [r for r in bundle_rows(bundle) if r.transport == transport and r.judged]
    return [f"held out {int(r.m)} B: card {side * nic.cpu_per_byte(r.m) * 1e9:.3f} s/GB "
            f"({'both sides' if transport == 'tcp' else 'sender'}), measured median {r.median * 1e9:.3f} s/GB, "
            f"{side * nic.cpu_per_byte(r.m) / r.median - 1:+.1%}" for r in rows]


WHAT = {"tcp": ("TCP stack, one stream: the count model (fit/host_counts.py) fitted on TCP 1-4 KiB and the run's UDP "
               "4 -> 16 KiB train"),
        "udp": ("UDP sender: the count model (fit/udp_counts.py) fitted on udp_bw <= 8 KiB and the run's loopback "
                "per-byte cost; the receiver (its drops) is not modelled, both sides are priced as the sender")}


def _fitted(transport: str, bundle: Path) -> tuple[NicParams, str]:
    """The card's parameters and a note of the fitted terms (core-seconds per event, as fitted)."""
    if transport == "tcp":
        t = tcp_terms(bundle)
        return tcp_nic(t), (f"both sides: {t.msg * 1e9:.0f} ns per message + {t.pkt * 1e9:.0f} ns per {t.seg:.0f}-B "
                            f"packet + {t.ack * 1e9:.0f} ns per ACK + {t.byte * 1e9:.3f} s/GB; each side half")
    u = udp_terms(bundle)
    return udp_nic(u), (f"sender: {u.dgram * 1e9:.0f} ns per datagram + {u.split * 1e9:.0f} ns per fragmented datagram "
                        f"+ {u.frag * 1e9:.0f} ns per IP fragment + {u.byte * 1e9:.3f} s/GB")


def card(transport: str, bundle: Path, name: str) -> dict:
    """A NIC card of one lab configuration's TCP stack (both-sides count model, half per side) or UDP sender."""
    from simcluster.cards import nic_params_yaml
    from simcluster.errors import CalibrationError
    from simcluster.fit.bundle_files import bundle_provenance
    from simcluster.fit.host_stack import bundle_samples, config_label

    bundle = Path(bundle)
    if transport not in ("tcp", "udp"):
        raise CalibrationError(f"transport {transport!r}: expected tcp or udp")
    config = config_label(bundle_samples(bundle)[1])
    nic, fitted = _fitted(transport, bundle)
    what = WHAT[transport]
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
