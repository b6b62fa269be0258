"""The NCCL-primitives collective model: one node, ring and chain collectives as NCCL runs them.

Every rank of a ring (or chain) collective executes a fixed sequence of NCCL primitives per data
segment (send, recvReduceSend, recvReduceCopySend, recvCopySend, recv, ...): k primitives.

  LL, LL128   T = base_p + k * (step_p + segment / (c * r_p))       c = channels NCCL gives the call
  Simple      T = base_S + k * step_S + wire / B                     B = bus bandwidth of the NVLink path
  host        T_measured = max(T, host_floor) when every call is launched from the host (no CUDA graph)

k per rank: all_reduce 2n-1, all_gather n, reduce_scatter n, broadcast/reduce 1 (+ n-2 hops of pipeline),
sendrecv 2, alltoall 2n. segment: S/n for the ring ops, S for the chain ops and sendrecv.
wire = nccl-tests' busbw numerator. c = clamp(floor(S / (512 threads * 8n)), 1, channels)
(NCCL's ring channel tuning for LL). Which protocol runs: NCCL's own tuner table (latency and bandwidth per
collective and protocol, printed by NCCL_DEBUG_SUBSYS=TUNING) when the card carries it, else the faster
of the model's protocols. Point-to-point ops (sendrecv, alltoall) take LL up to the p2p LL threshold
(16 KiB per peer, NCCL's default) and the faster of LL and Simple-without-ring-setup above it.
step_p are NCCL's documented per-step NVLink ring latencies (src/graph/tuning.cc hwLatencies).
See docs/models/collectives.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simcluster.collectives.schedule import bus_factor, canonical_op

STEP_LATENCY_S = {"LL": 0.6e-6, "Simple": 3.4e-6}      # NCCL hwLatencies, NVLink, ring
LL_THREADS = 512                                             # NCCL max threads per LL channel
P2P_LL_THRESHOLD_BYTES = 16384                               # NCCL_P2P_LL_THRESHOLD default
RING_OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
P2P_OPS = ("sendrecv", "alltoall")


@dataclass(frozen=True)
class PrimitiveParams:
    ll_base_s: float
    ll_channel_Bps: float
    simple_base_s: float
    link_bandwidth_Bps: float                   # bus bandwidth of the NVLink path (Simple)
    channels: int
    host_floor_s: float = 0.0
    tuner: dict = field(default_factory=dict)   # op -> {protocol: (latency_s, algbw_Bps)}, NCCL's own table

    # What the fabric layer reads from any intra-node card (CollectiveParams has the same two).
    @property
    def base_latency_s(self) -> float:
        return min(self.ll_base_s, self.simple_base_s)

    @property
    def simple_step_latency_s(self) -> float:
        return STEP_LATENCY_S["Simple"]


def primitives(op: str, n: int) -> int:
    return {"all_reduce": 2 * n - 1, "all_gather": n, "reduce_scatter": n, "sendrecv": 2,
            "alltoall": 2 * n}.get(op, 1 + max(0, n - 2))


def segment_bytes(op: str, size: float, n: int) -> float:
    return size / n if op in RING_OPS else size


def ll_channels(params: PrimitiveParams, size: float, n: int) -> int:
    return int(min(params.channels, max(1, size // (LL_THREADS * 8 * n))))


def _ll_time(params: PrimitiveParams, op: str, size: float, n: int) -> float:
    k, c = primitives(op, n), ll_channels(params, size, n)
    return params.ll_base_s + k * (STEP_LATENCY_S["LL"] + segment_bytes(op, size, n) / (c * params.ll_channel_Bps))


def _simple_time(params: PrimitiveParams, op: str, size: float, n: int) -> float:
    wire = size * bus_factor(op, n)
    if op in P2P_OPS:
        return params.simple_base_s + wire / params.link_bandwidth_Bps
    return params.simple_base_s + primitives(op, n) * STEP_LATENCY_S["Simple"] + wire / params.link_bandwidth_Bps


def nccl_choice(params: PrimitiveParams, op: str, size: float) -> str | None:
    """The protocol NCCL's tuner picks (its latency + bytes / bandwidth), or None without a table."""
    table = params.tuner.get(op)
    if not table:
        return None
    return min(table, key=lambda p: table[p][0] + size / table[p][1])


def gpu_time(params: PrimitiveParams, op: str, size: float, n: int, protocol: str | None = None) -> tuple[float, str]:
    """(seconds on the GPUs, protocol) for one call."""
    op = canonical_op(op)
    if n <= 1:
        return params.ll_base_s, "LL"
    options = {"LL": _ll_time(params, op, size, n), "Simple": _simple_time(params, op, size, n)}
    if protocol in options:
        return options[protocol], protocol
    if op in P2P_OPS:
        proto = "LL" if segment_bytes(op, size, n) <= P2P_LL_THRESHOLD_BYTES else min(options, key=options.get)
    else:
        choice = nccl_choice(params, op, size)
        proto = choice if choice in options else min(options, key=options.get)
    return options[proto], proto


def call_time(params: PrimitiveParams, op: str, size: float, n: int, host_launch: bool = False,
              protocol: str | None = None) -> tuple[float, str]:
    t, proto = gpu_time(params, op, size, n, protocol)
    return (max(t, params.host_floor_s) if host_launch else t), proto
