"""NIC transport models: what moving bytes costs the host, per transport (docs/models/nic-and-cpu.md).

One side (sender or receiver) of a stream of m-byte messages costs the host, in core-seconds per byte,

    c(m) = copy + csum + (msg + pkt * packets(m) + ack * acks(m) + split * [n(m) > 1] + frag * n(m)) / m

  copy     data copies between user and kernel (or PSM's eager copy): per byte, on the CPU unless the NIC
           places the data in user memory (RDMA verbs)
  csum     software checksums: per byte, 0 with checksum offload
  msg      per message: a send/recv system call, or an RDMA work request and its completion; an RDMA card with a
           `verbs` block adds the verbs' cost per operation, hardware/verbs.py (WQEs, doorbells, completions)
  pkt      per packet the CPU handles, packets(m) = max(1, ceil(m / segment)); segment is the bytes per such
           packet: the MSS without TSO/GRO, a 64 KiB super-packet with them (the offloads change the count)
  ack      TCP only: per ACK, acks(m) by the card's ack_rule: "delayed" the TCP count model's delayed-ACK rule;
           with 64 KiB super-packets (segment 65160 B) "tso-gro" the fifth sweep's batching rule (one per second
           super-packet, >= 1 per write) or "tso-push" the push rule (one per write + one per 2 x 65160 B), the
           counts of transport_counts.TSO_ACK_COUNTS
  split    UDP only: once per datagram cut into more than one IP fragment
  frag     UDP only: per IP fragment, n(m) at MTU 1500

packets, acks and n are hardware/transport_counts.py's rules, the ones the count models are fitted with
(fit/host_counts.py, fit/udp_counts.py, fit/offload_counts.py); a card without ack, split and frag terms prices as
before. c(m) is the send side; the receive side is the same c(m) unless the card has a `receiver` (UDP only: the
receiver's count model, fit/udp_receiver_counts.py), whose cost per datagram received is

    r(m) = dgram + frag * n(m) + byte * m + wake * W(m),   W(m) = transport_counts.wakes(gap(m), r(m) - wake * W(m), L, wake)
    gap(m) = max(m * c(m) / cores_per_stream, m / (line_rate * efficiency))

gap is the time between one stream's datagrams running flat out (its sender's CPU, or the wire): a receiver that is
ahead of its sender sleeps and wakes W times per datagram (the measured regime; a stream paced slower wakes it more).

A transport's rate with `streams` streams and the cores the host can spare:

    rate = min(line_rate * efficiency,  usable_cores / c(m)),
    usable_cores = min(cores_free - polling_cores, streams * cores_per_stream)

cores_per_stream is a card parameter, not a hidden rule: 1.0 where a measurement shows the work of one stream
serialised on one core (kernel TCP: one qperf stream is one thread, seed 000's 16.9 Gb/s; this machine's qperf-sizes
bundles), none (no cap) otherwise. polling_cores are cores that spin on completions (RDMA or PSM polling): busy
whatever the rate. CPU use (cores) = polling_cores + rate * c(m) on the send side, rate * r(m) on the receive side; a stream's rate is
bounded by the costlier side (c(m) for every card without a receiver). Small-message one-way latency is the qperf *_lat
figure: host stack + NIC + one switch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from simcluster.hardware import transport_counts
from simcluster.hardware.pcie import PcieLink
from simcluster.hardware.verbs import VerbsCost

TRANSPORTS = ("rdma", "tcp", "udp", "psm")
# TCP acks(m): transport_counts.acks (the count model's delayed-ACK rule), or a TSO/GRO rule (TSO_ACK_COUNTS)
ACK_RULES = ("delayed", *transport_counts.TSO_ACK_COUNTS)
SIDES = ("send", "receive")
ONLOADED = ("tcp", "udp", "psm")       # the transport's protocol work runs on host cores
# every term in core-seconds (per byte, message, packet, ACK, split datagram, fragment): what a clock scales
COST_FIELDS = ("cpu_s_per_byte", "csum_s_per_byte", "cpu_s_per_message", "cpu_s_per_packet", "cpu_s_per_ack",
               "cpu_s_per_split", "cpu_s_per_fragment")


def _too_big(m: float) -> str:
    return (f"a UDP datagram carries at most {transport_counts.UDP_MAX:.0f} B over IPv4 (65535 less the IP and UDP "
            f"headers), got {m:.0f} B: a larger message is several datagrams, which this card does not price")


class CardTermError(ValueError):
    """A term NicParams refuses for its transport, named by its NIC card key (params.KEY): the one rule both the card
    path (cards.nic_params: FILE:LINE: params.KEY: why) and code building NicParams directly go through."""

    def __init__(self, key: str, why: str):
        super().__init__(f"{key}: {why}")
        self.key, self.why = key, why


@dataclass(frozen=True)
class UdpReceiver:
    """The UDP receiver's count model (docs/models/nic-and-cpu.md, "UDP receiver count model"): core-seconds per
    datagram received, per wake-up, per IP fragment and per byte; the wake-up latency in seconds."""
    cpu_s_per_datagram: float
    cpu_s_per_wakeup: float
    cpu_s_per_fragment: float
    cpu_s_per_byte: float
    wakeup_latency_s: float

    def busy(self, m: float) -> float:
        """Core-seconds per m-byte datagram without wake-ups."""
        return self.cpu_s_per_datagram + self.cpu_s_per_fragment * transport_counts.fragments(m) + self.cpu_s_per_byte * m

    def per_datagram(self, m: float, gap: float) -> float:
        """Core-seconds per datagram received, `gap` seconds apart."""
        busy = self.busy(m)
        return busy + self.cpu_s_per_wakeup * transport_counts.wakes(gap, busy, self.wakeup_latency_s,
                                                                     self.cpu_s_per_wakeup)

    def at_clock(self, clock: float) -> UdpReceiver:
        """Every core-second term / clock; the wake-up latency is time, not a core's work: kept."""
        return UdpReceiver(self.cpu_s_per_datagram / clock, self.cpu_s_per_wakeup / clock,
                           self.cpu_s_per_fragment / clock, self.cpu_s_per_byte / clock, self.wakeup_latency_s)


@dataclass(frozen=True)
class NicParams:
    transport: str
    line_rate_Bps: float
    efficiency: float          # achievable payload rate / line rate when the CPU is not the limit
    latency_s: float           # one-way small-message latency, host to host
    cpu_s_per_byte: float      # host core-seconds per byte for data copies (each side)
    cpu_s_per_message: float = 0.0
    message_bytes: float = 65536.0  # qperf's default message size
    csum_s_per_byte: float = 0.0    # software checksum per byte (0 with checksum offload)
    cpu_s_per_packet: float = 0.0   # per packet the CPU handles
    segment_bytes: float = 65536.0  # bytes per CPU-handled packet: MSS without TSO/GRO, 64 KiB with
    polling_cores: float = 0.0      # cores spinning on completions, busy at any rate
    cores_per_stream: float | None = None  # None: no per-stream cap (see the module docstring)
    pcie: PcieLink | None = None    # the NIC's own host interface (ConnectX-7: gen5x16); None: not stated on the card
    call_setup_s: float = 0.0       # per collective call across nodes: the time before its network pipeline runs at
                                    # its steady rate (docs/models/fabric.md, "Held-out systems"); 0: not stated
    step_operations: float = 1.0    # network operations on the critical path of one NCCL network step (Simple, LL128),
                                    # each one `latency`: 1 = a one-way hop (every shipped card); 2 for EFA was tried and
                                    # not adopted (fabric-findings.md, session 28)
    cpu_s_per_ack: float = 0.0      # TCP: per ACK (acks(m), transport_counts)
    cpu_s_per_split: float = 0.0    # UDP: per datagram cut into IP fragments
    cpu_s_per_fragment: float = 0.0  # UDP: per IP fragment (n(m) at MTU 1500, transport_counts.fragments)
    ack_rule: str = "delayed"        # TCP: which acks(m) cpu_s_per_ack is priced by (ACK_RULES)
    receiver: UdpReceiver | None = None  # UDP: the receive side's own count model; None: priced as the send side
    eager_max_size_bytes: float = 0.0  # RDMA stacks with a rendezvous (aws-ofi-nccl's RDMA protocol: eager_max_size):
                                       # a message above it is written only once its receiver's control message (the
                                       # buffer's address) has arrived; 0: no rendezvous stated (docs/models/fabric.md,
                                       # "EFA's rendezvous")
    verbs: VerbsCost | None = None     # RDMA: the per-operation host cost (hardware/verbs.py); None: cpu_per_message only
    nccl_protocols: tuple[str, ...] | None = None  # the NCCL protocols the NIC's network plugin allows (aws-ofi-nccl:
                                                   # NCCL_PROTO=simple on p4d / p4de); None: every protocol

    def __post_init__(self):
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, got {self.transport!r}")
        if not 1.0 <= self.step_operations <= 16.0:
            raise ValueError(f"step_operations must be from 1 to 16, got {self.step_operations!r}")
        if self.eager_max_size_bytes and self.transport != "rdma":
            raise CardTermError("eager_max_size", f"an RDMA term (the eager / rendezvous switch), not one of transport {self.transport!r}")
        if self.cpu_s_per_ack and self.transport != "tcp":
            raise CardTermError("cpu_per_ack", f"a TCP term (the delayed-ACK count), not one of transport {self.transport!r}")
        for key, value in (("cpu_per_split_datagram", self.cpu_s_per_split), ("cpu_per_fragment", self.cpu_s_per_fragment)):
            if value and self.transport != "udp":
                raise CardTermError(key, f"a UDP term (IP fragments of a datagram), not one of transport {self.transport!r}")
        if self.ack_rule not in ACK_RULES:
            raise CardTermError("ack_rule", f"expected one of {', '.join(ACK_RULES)}, got {self.ack_rule!r}")
        if self.ack_rule != "delayed" and (self.transport != "tcp" or self.segment_bytes != transport_counts.GSO):
            raise CardTermError("ack_rule", f"{self.ack_rule} is TCP's with 64 KiB super-packets (segment_size: "
                                f"{transport_counts.GSO:.0f}B), not transport {self.transport!r} at {self.segment_bytes:.0f} B")
        if self.verbs is not None and self.transport != "rdma":
            raise CardTermError("verbs", f"an RDMA term (the verbs' cost per operation), not one of transport {self.transport!r}")
        if self.receiver is not None and self.transport != "udp":
            raise CardTermError("receiver", f"the UDP receiver's count model, not one of transport {self.transport!r}")
        if self.transport == "udp" and self.message_bytes > transport_counts.UDP_MAX:
            raise CardTermError("message_size", _too_big(self.message_bytes))

    @property
    def onloaded(self) -> bool:
        return self.transport in ONLOADED

    @property
    def wire_limit_Bps(self) -> float:
        return self.line_rate_Bps * self.efficiency

    def packets(self, message_bytes: float) -> float:
        return float(transport_counts.packets(message_bytes, self.segment_bytes))

    def per_message(self, message_bytes: float) -> float:
        """Core-seconds of one m-byte message's counted events (its per-byte terms left out)."""
        m = message_bytes
        if self.transport == "udp" and m > transport_counts.UDP_MAX:
            raise ValueError(_too_big(m))
        cost = self.cpu_s_per_message + self.cpu_s_per_packet * self.packets(m)
        if self.verbs is not None:
            cost += self.verbs.per_message(m)
        if self.cpu_s_per_ack:
            acks = (transport_counts.acks(m, self.segment_bytes) if self.ack_rule == "delayed"
                    else transport_counts.TSO_ACK_COUNTS[self.ack_rule](m))
            cost += self.cpu_s_per_ack * acks
        if self.cpu_s_per_split or self.cpu_s_per_fragment:
            n = transport_counts.fragments(m)
            cost += self.cpu_s_per_split * (n > 1) + self.cpu_s_per_fragment * n
        return cost

    def cpu_per_byte(self, message_bytes: float | None = None, side: str = "send") -> float:
        """Core-seconds per byte on one side: c(m) sending, r(m) / m receiving (c(m) without a receiver)."""
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        m = message_bytes or self.message_bytes
        send = self.cpu_s_per_byte + self.csum_s_per_byte + self.per_message(m) / m
        if side == "send" or self.receiver is None:
            return send
        gap = max(m * send / (self.cores_per_stream or 1.0), m / self.wire_limit_Bps)
        return self.receiver.per_datagram(m, gap) / m

    def at_clock(self, clock: float) -> NicParams:
        """The same card on cores at `clock` x the frequency its costs were measured at: every cost / clock."""
        receiver = None if self.receiver is None else self.receiver.at_clock(clock)
        verbs = None if self.verbs is None else self.verbs.at_clock(clock)
        return dataclasses.replace(self, receiver=receiver, verbs=verbs, **{f: getattr(self, f) / clock for f in COST_FIELDS})

    def rate_Bps(self, streams: int = 1, cores_free: float = float("inf"), message_bytes: float | None = None) -> float:
        """Throughput of `streams` concurrent streams given the cores the host can spare (each side's): the costlier
        side per byte bounds it."""
        cost = self.cpu_per_byte(message_bytes)
        if self.receiver is not None:
            cost = max(cost, self.cpu_per_byte(message_bytes, "receive"))
        if cost <= 0:
            return self.wire_limit_Bps
        cores = max(0.0, cores_free - self.polling_cores)
        if self.cores_per_stream is not None:
            cores = min(cores, streams * self.cores_per_stream)
        return min(self.wire_limit_Bps, cores / cost)

    def cores_used(self, rate_Bps: float, message_bytes: float | None = None, side: str = "send") -> float:
        """Host cores busy moving rate_Bps on one side (SIDES), polling cores included."""
        return self.polling_cores + rate_Bps * self.cpu_per_byte(message_bytes, side)
