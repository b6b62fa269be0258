"""Flow model vs packet level: the same flows on the same Platform, in network/flows.py and in ns-3.

One row per (fabric, pattern, size): the collective's completion time (its last byte) on the flow model and in
ns-3, and the error (model - ns-3) / ns-3. ns-3's routers store and forward every packet; the flow model runs at
the Platform's own forwarding, and its other forwarding is shown beside it (`model_other_s`).

Scenario traffic (`simcluster validate --packet-level SCENARIO`): every variant's machine Platform
(build.build_platform: the scenario's fabric, NIC line rate, latencies), every pattern at 1 MiB per flow and at the
scenario's full message: the bytes one NIC sends in one all_reduce of the message M (a training job's DDP bucket, a
collective sweep's largest size), 2 (N-1)/N M / rails; an alltoall spreads that over the other N-1 nodes (at least
1 MiB a flow). Fabrics of more than MAX_FULL_HOSTS NICs run scaled-down flows (x MAX_FULL_HOSTS / NICs, at least
1 MiB) so that ns-3 runs in minutes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from simcluster.errors import SimclusterError
from simcluster.network.platform import Platform
from simcluster.packet import patterns, topology

MIB = 2.0**20
MAX_FULL_HOSTS = 64
SCENARIO_PATTERNS = ("ring", "ring-strided", "ring-steps", "tree", "incast", "alltoall")
TARGET_MIN_BYTES = MIB   # the target's range: >= 1 MiB per flow
MTU = 9000


@dataclass(frozen=True)
class Row:
    fabric: str
    pattern: str
    hosts: int
    oversubscription: float
    flow_bytes: float
    flows: int
    model_s: float
    packet_s: float
    model_other_s: float       # the flow model at the other forwarding (cut-through <-> store-and-forward)
    forwarding: str            # the Platform's
    ns3_wall_s: float
    packet_drops: int = 0      # packets ns-3's queues dropped (the stand-in for a lossless fabric: 0)

    @property
    def error_pct(self) -> float:
        return (self.model_s - self.packet_s) / self.packet_s * 100

    def to_json(self) -> dict:
        return {"fabric": self.fabric, "pattern": self.pattern, "hosts": self.hosts, "oversubscription": self.oversubscription,
                "flow_bytes": self.flow_bytes, "flows": self.flows, "forwarding": self.forwarding,
                "flow_model_s": self.model_s, "packet_level_s": _finite(self.packet_s), "error_pct": _finite(round(self.error_pct, 3)),
                "flow_model_other_forwarding_s": self.model_other_s, "ns3_wall_s": round(self.ns3_wall_s, 2),
                "packet_drops": self.packet_drops}


@dataclass
class PacketValidation:
    source: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def mean_abs_error_pct(self, min_bytes: float = TARGET_MIN_BYTES) -> float | None:
        errors = [abs(r.error_pct) for r in self.rows if r.flow_bytes >= min_bytes and np.isfinite(r.error_pct)]
        return float(np.mean(errors)) if errors else None

    def to_json(self) -> dict:
        m = self.mean_abs_error_pct()
        return {"source": self.source, "rows": [r.to_json() for r in self.rows], "notes": self.notes,
                "mean_abs_error_pct": None if m is None else round(m, 3),
                "rows_in_target_range": sum(r.flow_bytes >= TARGET_MIN_BYTES for r in self.rows),
                "packet_level": "ns-3 3.44 (DCTCP + ECN, per-flow static ECMP routes as the flow model's hash)"}

    def text(self) -> str:
        lines = [f"Flow model vs packet level (ns-3, DCTCP + ECN, per-flow ECMP as the model's): {self.source}",
                 f"{'fabric':<34} {'pattern':<13} {'hosts':>5} {'flow':>9} {'flows':>5} {'model us':>10} {'ns-3 us':>10} "
                 f"{'error':>7} {'other fwd us':>12}"]
        for r in self.rows:
            lines.append(f"{r.fabric:<34} {r.pattern:<13} {r.hosts:>5} {_size(r.flow_bytes):>9} {r.flows:>5} "
                         f"{r.model_s * 1e6:>10.1f} {r.packet_s * 1e6:>10.1f} {r.error_pct:>+6.1f}% {r.model_other_s * 1e6:>12.1f}")
        m = self.mean_abs_error_pct()
        lines.append(f"mean |error| at >= 1 MiB per flow: {'-' if m is None else f'{m:.1f}%'} "
                     f"({sum(r.flow_bytes >= TARGET_MIN_BYTES for r in self.rows)} rows)")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def _finite(x: float) -> float | None:
    """None for a flow that had not arrived when ns-3 stopped (JSON has no NaN)."""
    return float(x) if np.isfinite(x) else None


def _size(b: float) -> str:
    return f"{b / MIB:.3g}MiB" if b >= MIB else f"{b / 1024:.3g}KiB"


def with_forwarding(platform: Platform, store_and_forward: bool) -> Platform:
    """The same Platform with every switch forwarding the other way."""
    blocks = tuple(replace(b, store_and_forward=store_and_forward) if b.kind == "switch" else b for b in platform.blocks)
    return replace(platform, blocks=blocks, _cache={})


def compare(platform: Platform, fabric: str, pattern: str, flow_bytes: float, oversubscription: float = 1.0,
            stop_s: float = 5.0) -> Row:
    """One pattern at one size on both sides."""
    from simcluster.packet import ns3_run  # ns-3: the `packet` extra

    t = patterns.traffic(platform, pattern, flow_bytes)
    _, finish = patterns.flow_model(platform, t, MTU)
    sf = bool(any(b.store_and_forward for b in platform.blocks if b.kind == "switch"))
    _, other = patterns.flow_model(with_forwarding(platform, not sf), t, MTU)
    net = topology.network(platform, t.src, t.dst, t.nbytes, t.deps, mtu=MTU)
    ns3_run.driver()
    began = time.perf_counter()
    _, packet, drops = ns3_run.run(net, stop_s)
    wall = time.perf_counter() - began
    eb, _, _ = topology.fabric_blocks(platform)
    return Row(fabric, pattern, eb.count, oversubscription, float(t.nbytes.max()), len(t.src), float(finish.max()),
               float(np.max(packet)) if not np.isnan(packet).any() else float("nan"), float(other.max()),
               "store-and-forward" if sf else "cut-through", wall, drops)


def scenario_message_bytes(scenario) -> float:
    """M: a training job's DDP bucket, a collective sweep's largest size, else 25 MiB."""
    for job in scenario.jobs:
        if getattr(job, "kind", "") == "training":
            from simcluster.cards import load_training

            return float(load_training(job.workload)[0].bucket_cap_bytes)
        if hasattr(job, "max_bytes"):
            return float(job.max_bytes)
    return 25 * MIB


def validate_scenario(path: str, pattern_names=SCENARIO_PATTERNS, progress=None) -> PacketValidation:
    from simcluster.cards import load_collective
    from simcluster.machine_models import build_platform
    from simcluster.scenario import load_variants

    out = PacketValidation(str(path))
    for label, scenario in load_variants(path):
        m = scenario.machine
        if m.domains < 2 or m.fabric is None:
            out.skipped.append(f"variant {label or '(base)'}: one NVLink domain, no fabric to compare")
            continue
        nvlink = load_collective(m.card)[0].link_bandwidth_Bps if m.card else 0.0
        platform = build_platform(m, nvlink)
        nics, nodes, rails = m.domains * m.nics_per_domain, m.domains, m.nics_per_domain
        message = scenario_message_bytes(scenario)
        full = 2 * (nodes - 1) / nodes * message / rails
        scale = min(1.0, MAX_FULL_HOSTS / nics)
        if scale < 1:
            out.notes.append(f"variant {label}: {nics} NICs: flows scaled x{scale:.3g} from the full message")
        fabric = (f"{scenario.name}:{label}" if label else scenario.name)
        for pattern in pattern_names:
            per_flow = full / (nodes - 1) if pattern == "alltoall" else full
            for size in sorted({MIB, max(MIB, per_flow * scale)}):
                row = compare(platform, fabric, pattern, size, m.fabric.oversubscription)
                out.rows.append(row)
                if progress:
                    progress(row)
        out.notes.append(f"variant {label}: {nodes} nodes x {rails} NICs, {m.fabric.kind}, {m.fabric.oversubscription:g}:1, "
                         f"full message {message / MIB:.3g} MiB -> {full / MIB:.3g} MiB per NIC flow")
    if not out.rows and not out.skipped:
        raise SimclusterError(f"{path}: no variant with a fabric to compare")
    return out


def ns3_available() -> tuple[bool, str]:
    """Whether the `packet` extra is installed (ns-3's Python package), without importing it (7-21 s)."""
    import importlib.util

    if importlib.util.find_spec("ns") is None or importlib.util.find_spec("cppyy") is None:
        return False, "ns-3 is not installed: pip install -e '.[packet]' (ns3 3.44.post0, GPL-2.0-only, ~70 MB, builds cppyy)"
    return True, ""
