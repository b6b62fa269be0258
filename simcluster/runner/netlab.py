"""A two-host network lab on one machine: two network namespaces joined by a veth pair, each end
shaped by `tc` to a known rate, so that qperf between them has a known ground truth for NIC
calibration.

    simcluster lab up --rate 400mbit     (needs root, iproute2)
    simcluster lab down

Addresses: 10.77.0.1 in `sc-a` (client), 10.77.0.2 in `sc-b` (server). A token bucket (`tc tbf`)
shapes egress on both ends; tbf counts L2 frame bytes (Ethernet header included, no preamble or
FCS), so TCP's payload share of the rate is 1448 / 1514 with timestamps at MTU 1500. Segmentation
offloads are off so frames leave MTU-sized.
A known delay needs `tc netem` (or an EDT qdisc: fq, etf); kernels built without them, like this
project's sandbox (CONFIG_NET_SCH_NETEM is not set), get `up()` refusing a delay with a one-line
error rather than a lab whose ground truth is wrong.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from simcluster.errors import SimclusterError

CLIENT_NS, SERVER_NS = "sc-a", "sc-b"
CLIENT_IP, SERVER_IP = "10.77.0.1", "10.77.0.2"
MTU = 1500


@dataclass(frozen=True)
class Lab:
    rate: str
    delay: str | None = None

    @property
    def ground_truth(self) -> dict:
        return {"kind": "veth+tc", "rate": self.rate, "one_way_delay": self.delay, "mtu": MTU,
                "frame_payload": "1448B", "frame_on_tc": "1514B",
                "client_netns": CLIENT_NS, "server_netns": SERVER_NS, "server": SERVER_IP}


def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except OSError as exc:
        raise SimclusterError(f"cannot run {argv[0]}: {exc.strerror or exc}", hint="install iproute2; run as root") from None
    if check and done.returncode != 0:
        raise SimclusterError(f"'{' '.join(argv)}' failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}",
                              hint="the lab needs root and iproute2 (ip, tc)")
    return done


def down() -> None:
    for ns in (CLIENT_NS, SERVER_NS):
        _run(["ip", "netns", "del", ns], check=False)


def _qdisc(rate: str, delay: str | None) -> list[str]:
    if delay:
        return ["netem", "delay", delay, "rate", rate, "limit", "100000"]
    return ["tbf", "rate", rate, "burst", "64kb", "latency", "100ms"]


def up(rate: str, delay: str | None = None) -> Lab:
    """(Re)create the lab. `rate` and `delay` are tc's own strings (400mbit, 500us)."""
    down()
    ns_exec = {ns: ["ip", "netns", "exec", ns] for ns in (CLIENT_NS, SERVER_NS)}
    _run(["ip", "netns", "add", CLIENT_NS])
    _run(["ip", "netns", "add", SERVER_NS])
    _run(["ip", "link", "add", "sc-veth-a", "netns", CLIENT_NS, "type", "veth", "peer", "name", "sc-veth-b",
          "netns", SERVER_NS])
    for ns, dev, ip in ((CLIENT_NS, "sc-veth-a", CLIENT_IP), (SERVER_NS, "sc-veth-b", SERVER_IP)):
        run = ns_exec[ns]
        _run([*run, "ip", "addr", "add", f"{ip}/24", "dev", dev])
        _run([*run, "ip", "link", "set", dev, "mtu", str(MTU), "up"])
        _run([*run, "ip", "link", "set", "lo", "up"])
        # offloads off: segments leave as MTU-sized frames, so netem's rate applies per frame
        _run([*run, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"], check=False)
        _run([*run, "tc", "qdisc", "add", "dev", dev, "root", *_qdisc(rate, delay)])
    return Lab(rate, delay)
