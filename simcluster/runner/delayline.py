"""A userspace delay line: frames read from one interface leave the other `delay` seconds later.

For kernels without `tc netem` (or an EDT qdisc), simcluster's lab puts this between two veth pairs
in a middle network namespace, so qperf between the outer namespaces sees a known one-way delay:

    python -m simcluster.runner.delayline IFACE_A IFACE_B DELAY_SECONDS

Both interfaces are read with AF_PACKET raw sockets (promiscuous); every frame is due `delay` after
the kernel's receive timestamp (SO_TIMESTAMPNS, so the time this process takes to wake up does not
add to the delay) and is sent on the other interface when due, in order. It sleeps in select()
until 0.5 ms before the next due frame and polls from there; what remains is the send path
(see docs/runner.md for the measured error).
Offloads must be off on the veths (checksums are not completed for a re-sent frame).
"""

from __future__ import annotations

import heapq
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 3
SPIN_S = 0.0005
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; SCM_TIMESTAMPNS has the same value


def _open(name: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((name, 0))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setblocking(False)
    return s


def _received_at(ancdata, offset: float) -> float:
    """The kernel's receive time of a frame on the monotonic clock (now, if it gave none)."""
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec + nsec * 1e-9 - offset
    return time.monotonic()


def run(iface_a: str, iface_b: str, delay_s: float) -> None:
    a, b = _open(iface_a), _open(iface_b)
    pairs = ((a, b), (b, a))
    queue: list = []
    seq = 0
    offset = time.time() - time.monotonic()  # realtime - monotonic, for the kernel's timestamps
    while True:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, out, frame = heapq.heappop(queue)
            try:
                out.send(frame)
            except OSError:
                pass  # a frame the other side cannot take (e.g. too large) is dropped, as a wire would
        wait = queue[0][0] - time.monotonic() if queue else 1.0
        if wait > SPIN_S:
            select.select([a, b], [], [], wait - SPIN_S)
        for src, out in pairs:
            while True:
                try:
                    frame, ancdata, _, addr = src.recvmsg(65536, 64)
                except BlockingIOError:
                    break
                if addr[2] == socket.PACKET_OUTGOING:
                    continue
                seq += 1
                heapq.heappush(queue, (_received_at(ancdata, offset) + delay_s, seq, out, frame))


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], float(sys.argv[3]))
