"""The count rules of the kernel transports' count models (issue 42; docs/models/nic-and-cpu.md, "Count model" and "UDP
count model"): how many packets, ACKs and IP fragments one m-byte message makes the host handle. One definition, read
by the fits (fit/host_counts.py, fit/udp_counts.py) and by the NIC cards' answers (hardware/nic.py).

    packets(m, seg) = max(1, ceil(m / seg))      TCP packets the CPU handles: seg = MSS without GSO, a GSO/TSO
                                                 super-packet with it, loopback's MSS on loopback
    acks(m, seg)    = min(wire(m) / 2, ACKS_PER_PUSH * max(1, m / PUSH)),   wire(m) = packets(m, MSS or LOOPBACK)
                                                 delayed ACK every 2 full segments while the reader keeps up, else
                                                 about ACKS_PER_PUSH per push of PUSH bytes
    fragments(m)    = 1 if m + 8 <= 1480 else ceil((m + 8) / 1480)
                                                 IP packets of one UDP datagram at MTU 1500 (the 8-byte UDP header
                                                 rides in the first)

The batching rules' TCP counts with TSO/GSO and GRO (docs/models/nic-and-cpu.md, "Batching rules"; fitted by
fit/offload_counts.py, which re-exports them as skbs and gso_acks):

    gso_skbs(m) = packets(m, GSO)                             super-packets per write (the receiver's TCP sees the same)
    gso_acks(m) = min(packets(m, MSS) / 2, max(1, gso_skbs(m) / 2))
                                                 a delayed ACK per second received super-packet, at least one per write
    push_acks(m) = min(packets(m, MSS) / 2, 1 + m / (2 * GSO))
                                                 the push rule (session 34, tsoack; registered for the sixth sweep):
                                                 one ACK per write plus one per two GSO super-packets' worth of the
                                                 byte stream, at most one per two wire MSS. The 1, the 1/2 and the
                                                 count in bytes are empirical constants chosen on development rows, not
                                                 the kernel's: the one per write is the reader's timing (a read that
                                                 catches up, tcp_cleanup_rbuf); __tcp_ack_snd_check would ACK up to
                                                 every super-packet (more than one rcv_mss = 1448 B unacked), fewer
                                                 through its window test or tcp_backlog_ack_defer (default on since
                                                 Linux 6.7: ACKs due while the reader owns the socket merged into one
                                                 from tcp_release_cb). Held out, its ACK count did not beat gso_acks
                                                 (docs/models/nic-and-cpu.md, "The push ACK rule")
    TSO_ACK_COUNTS = {"tso-gro": gso_acks, "tso-push": push_acks}
                                                 a TSO/GRO NIC card's ack_rule -> its count (hardware/nic.py prices by
                                                 it; fit/offload_readout.TSO_ACK_RULES names a sweep's rule by the same
                                                 key, fit/stack_cards.py writes it on the card)

The UDP receiver's wake-ups per datagram (docs/models/nic-and-cpu.md, "UDP receiver count model"; fitted by
fit/udp_receiver_counts.py):

    wakes(gap, busy, latency, wake) = min(1, max(0, (gap - busy) / (latency + wake)))
                                                 gap: seconds between the sender's datagrams; busy: the receiver's
                                                 core-seconds per datagram without wake-ups; latency: from sleeping to
                                                 running again; wake: one wake-up's core-seconds
"""

from __future__ import annotations

import math

from simcluster import units

MSS = 1448.0              # TCP payload per MTU-1500 frame (with timestamps)
GSO = 65160.0             # TCP payload per 64 KiB GSO/TSO super-packet (45 x MSS)
LOOPBACK = 65483.0        # loopback's MSS (MTU 65536)
UDP_FRAGMENT = 1480.0     # IP payload per fragment at MTU 1500 (the first carries the 8-byte UDP header)
UDP_MAX = float(units.UDP_MAX_PAYLOAD)   # the largest UDP datagram's payload over IPv4 (simcluster.units)
PUSH = 65536.0            # bytes per sender push above which the receiver wakes and ACKs per burst
ACKS_PER_PUSH = 1.4       # ACKs per such burst (read from the second H200 sweep: 1.36-1.42 at 64 KiB-1 MiB)


def packets(m: float, seg: float) -> int:
    """TCP packets the CPU handles for one m-byte message at seg bytes per packet."""
    return max(1, math.ceil(m / seg))


def acks(m: float, seg: float) -> float:
    """ACKs per m-byte TCP message: wire segments are MSS-sized except on loopback (seg == LOOPBACK)."""
    wire = packets(m, LOOPBACK if seg == LOOPBACK else MSS)
    return min(wire / 2, ACKS_PER_PUSH * max(1.0, m / PUSH))


def fragments(m: float) -> int:
    """IP packets of one UDP datagram of m payload bytes at MTU 1500 (m <= UDP_MAX: NicParams refuses larger)."""
    return 1 if m + 8 <= UDP_FRAGMENT else math.ceil((m + 8) / UDP_FRAGMENT)


def gso_skbs(m: float) -> int:
    """GSO super-packets one m-byte TCP write becomes (and the receiver's TCP handles) with TSO/GSO and GRO."""
    return packets(m, GSO)


def gso_acks(m: float) -> float:
    """ACKs per m-byte TCP write with TSO/GSO and GRO: one per second super-packet, at least one per write of 2+ MSS."""
    return min(packets(m, MSS) / 2, max(1.0, gso_skbs(m) / 2))


def push_acks(m: float) -> float:
    """ACKs per m-byte TCP write with TSO/GSO and GRO by the push rule: one per write, one per 2 x GSO bytes, <= wire / 2."""
    return min(packets(m, MSS) / 2, 1.0 + m / (2 * GSO))


# a TSO/GRO card's ack_rule -> ACKs per m-byte write: the fifth sweep's registered rule and the push rule (the sixth's)
TSO_ACK_COUNTS = {"tso-gro": gso_acks, "tso-push": push_acks}


def wakes(gap: float, busy: float, latency: float, wake: float) -> float:
    """Wake-ups per datagram of a receiver that sleeps when it catches up: it is `gap - busy` seconds ahead per datagram,
    and a wake-up takes latency + wake, in which the sender queues the datagrams one wake-up then reads."""
    return min(1.0, max(0.0, (gap - busy) / (latency + wake))) if latency + wake > 0 else float(gap > busy)
