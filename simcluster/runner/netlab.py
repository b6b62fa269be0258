"""A two-host network lab on one machine: two network namespaces joined by a veth pair, each end
shaped by `tc` to a known rate, so that qperf between them has a known ground truth for NIC
calibration.

    simcluster lab up --rate 400mbit     (needs root, iproute2)
    simcluster lab down

Addresses: 10.77.0.1 in `sc-a` (client), 10.77.0.2 in `sc-b` (server). A token bucket (`tc tbf`)
shapes egress on both ends; tbf counts L2 frame bytes (Ethernet header included, no preamble or
FCS), so TCP's payload share of the rate is 1448 / 1514 with timestamps at MTU 1500. Segmentation
offloads are off so frames leave MTU-sized.
A known delay: with `delay`, the two namespaces are joined through a third one, `sc-m`, where a
userspace delay line (simcluster.runner.delayline) forwards every frame `delay` later in each
direction (one-way delay = `delay`, RTT = 2 x delay). It replaces `tc netem`, which this project's
kernel lacks (CONFIG_NET_SCH_NETEM is not set, and no EDT qdisc: fq, etf). Offloads are off on all
veths so frames are MTU-sized and carry complete checksums.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass

from simcluster.errors import SimclusterError
from simcluster.units import parse_time

CLIENT_NS, SERVER_NS, MIDDLE_NS = "sc-a", "sc-b", "sc-m"
PIDFILE = "/tmp/simcluster-lab-delayline.pid"
CLIENT_IP, SERVER_IP = "10.77.0.1", "10.77.0.2"
MTU = 1500


OFFLOADS = {"none": ("tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"),       # software checksums, MTU frames
            "csum": ("tx", "on", "rx", "on", "tso", "off", "gso", "off", "gro", "off"),        # checksums offloaded, MTU frames
            "all": ("tx", "on", "rx", "on", "tso", "on", "gso", "on", "gro", "on")}            # and 64 KiB segments (TSO/GRO)


@dataclass(frozen=True)
class Lab:
    rate: str
    delay: str | None = None
    offloads: str = "none"

    @property
    def ground_truth(self) -> dict:
        return {"kind": "veth+tc", "rate": self.rate, "one_way_delay": self.delay, "mtu": MTU, "offloads": self.offloads,
                "delay_method": "userspace delay line (simcluster.runner.delayline)" if self.delay else None,
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
    try:
        with open(PIDFILE) as f:
            os.kill(int(f.read().strip()), signal.SIGTERM)
    except (OSError, ValueError):
        pass
    try:
        os.unlink(PIDFILE)
    except OSError:
        pass
    for ns in (CLIENT_NS, SERVER_NS, MIDDLE_NS):
        _run(["ip", "netns", "del", ns], check=False)


def _exec(ns: str) -> list[str]:
    return ["ip", "netns", "exec", ns]


def _link_up(ns: str, dev: str, offloads: str = "none") -> None:
    _run([*_exec(ns), "ip", "link", "set", dev, "mtu", str(MTU), "up"])
    # offloads off by default: MTU-sized frames (the rate applies per frame) with complete checksums
    _run([*_exec(ns), "ethtool", "-K", dev, *OFFLOADS[offloads]], check=False)


def up(rate: str, delay: str | None = None, offloads: str = "none") -> Lab:
    """(Re)create the lab. `rate` is tc's string (400mbit), or "none" for no shaping; `delay` a one-way delay ("10ms");
    `offloads` which veth offloads stay on (OFFLOADS: none, csum, all; a delay line needs none)."""
    if offloads not in OFFLOADS or (delay and offloads != "none"):
        raise SimclusterError(f"lab offloads {offloads!r}: expected one of {', '.join(OFFLOADS)} (none with a delay)")
    delay_s = parse_time(delay) if delay else None
    if delay and shutil.which("ethtool") is None:
        raise SimclusterError("a lab with a delay needs ethtool (checksum offloads must be off for the delay line)",
                              hint="apt-get install ethtool")
    down()
    for ns in (CLIENT_NS, SERVER_NS) + ((MIDDLE_NS,) if delay else ()):
        _run(["ip", "netns", "add", ns])
    if delay:
        _run(["ip", "link", "add", "sc-veth-a", "netns", CLIENT_NS, "type", "veth", "peer", "name", "sc-veth-ma",
              "netns", MIDDLE_NS])
        _run(["ip", "link", "add", "sc-veth-b", "netns", SERVER_NS, "type", "veth", "peer", "name", "sc-veth-mb",
              "netns", MIDDLE_NS])
        for dev in ("sc-veth-ma", "sc-veth-mb"):
            _link_up(MIDDLE_NS, dev)
            _run([*_exec(MIDDLE_NS), "ip", "link", "set", dev, "promisc", "on"])
    else:
        _run(["ip", "link", "add", "sc-veth-a", "netns", CLIENT_NS, "type", "veth", "peer", "name", "sc-veth-b",
              "netns", SERVER_NS])
    for ns, dev, ip in ((CLIENT_NS, "sc-veth-a", CLIENT_IP), (SERVER_NS, "sc-veth-b", SERVER_IP)):
        _run([*_exec(ns), "ip", "addr", "add", f"{ip}/24", "dev", dev])
        _link_up(ns, dev, offloads)
        _run([*_exec(ns), "ip", "link", "set", "lo", "up"])
        # rate "none": no qdisc. tbf splits a GSO super-packet back into MTU frames in software, so a lab that
        # measures TSO/GRO (offloads all) runs without it (with a 1mb burst instead, the stream stalled at ~11 MB/s)
        if rate != "none":
            _run([*_exec(ns), "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "64kb", "latency", "100ms"])
    if delay:
        proc = subprocess.Popen([*_exec(MIDDLE_NS), "taskset", "-c", "1", sys.executable, "-m", "simcluster.runner.delayline",
                                 "sc-veth-ma", "sc-veth-mb", repr(delay_s)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        with open(PIDFILE, "w") as f:
            f.write(str(proc.pid))
    return Lab(rate, delay, offloads)
