"""The NCCL-primitives collective model: one node, ring, chain and point-to-point collectives as NCCL runs them.

Every rank of a ring collective executes a fixed sequence of NCCL primitives per data segment (send,
recvReduceSend, recvReduceCopySend, recvCopySend, recv): k primitives, each waiting for the previous one's data.
A chain (broadcast, reduce) pipelines its data through n-1 hops: the hop latency is paid n-1 times, the
data once. Point-to-point ops (sendrecv, alltoall) send and receive at once, on NCCL's p2p channels.

  ring    LL      T = L_LL + k (s_LL + segment / (c r_LL))          c = channels NCCL gives the call
          Simple  T = L_S  + k s_S + wire / B + D (1 - exp(-wire / W))   B = bus bandwidth of the NVLink path
  chain   LL      T = L_LL + (n-1) s_LL + S / (c r_LL)
          Simple  T = L_S  + (n-1) s_S + wire / B
  p2p     LL      T = P + peer_bytes / (c_p2p h r_LL)     P = L_LL + 2 s_LL; while peer_bytes <= p2p channels per peer
                                                                  x 16 KiB (NCCL's p2p protocol rule)
          Simple  T = P + 2 x 3.4 us + wire / B         above it, buffers registered (CUDA-graph capture registers them)
                  T = L_S + 2 s_S + wire / B            above it, unregistered (host-launched, no ncclCommRegister)
  host    T_measured = max(T, host_floor) when every call is launched from the host (no CUDA graph)
  profile T x f_op(S) when the card carries a per-op profile measured at this rank count and launch mode
          (collectives/profile.py)

k per rank: all_reduce 2n-1, all_gather n, reduce_scatter n. segment = S/n. wire = nccl-tests' busbw numerator
(the bytes each rank sends). D, W: the ring ramp, a time that grows with the bytes a rank sends and levels off
(D at most; W is the scale), fitted on all_reduce: measured, the ring ops' bandwidth rises with size up to a few
GiB per rank and they share the same extra time as a function of the bytes sent; chain and p2p ops do not.
Ring and chain LL channels: c = clamp(floor(S / (512 threads * 8n)), 1, channels) (NCCL's rule, checked
against its tuning logs at 2 and 4 ranks). p2p LL channels: min(m, ceil(peer_bytes / 8 KiB)) with m = the p2p
channels per peer, halved while m * n > p2p channels (src/enqueue.cc, NCCL 2.28). h = the share of a ring LL
channel's threads that a p2p channel's receiving side has: NCCL's p2p kernel runs 640 threads (20 warps) per
channel and splits a channel's work between its send (10 warps) and receive (9 warps) halves
(src/device/sendrecv.h), where a ring LL channel runs 512 threads that all carry data; LL's rate per channel is
set by its threads, so h = 9 x 32 / 512. P, the p2p kernel's fixed cost, is the same for both protocols: one
kernel runs a call's LL and Simple works (src/device/sendrecv.h). A registered p2p Simple call is one direct copy
into the peer's user buffer (useLargeChunk), after the receiver has published the buffer's address to the sender
(prims_simple.h setDataPtrs) and before its completion is posted: two Simple synchronisations outside any pipeline,
priced at NCCL's own Simple step latency (hwLatencies, 3.4 us), and no FIFO pipeline. NCCL
registers p2p buffers when the calls are captured in a CUDA graph (NCCL_GRAPH_REGISTER=1, src/register/
sendrecv_reg.cc) or were registered by the application; an unregistered call pipelines through the FIFO in
p2p chunks like a ring op's Simple primitives. Which protocol a ring or
chain op runs: NCCL's own tuner table (latency and bandwidth per collective and protocol, printed by
NCCL_DEBUG_SUBSYS=TUNING) for the rank count it was logged at, else NCCL's decision model computed for one
NVSwitch node of that many GPUs of the card's `nccl_arch` (collectives/nccl_tuner.py, default hopper); a
protocol the model has no time for (LL128) runs as the faster of LL and Simple.
The step latencies s_LL, s_S are NCCL's documented NVLink ring values (src/graph/tuning.cc hwLatencies) unless
the card was fitted on all_reduce at two or more rank counts, which identifies them. The card's parameters are
read and written by collectives/primitives_card.py. See docs/models/collectives.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import ClassVar

from simcluster.collectives.interface import BareModel, DesTerms
from simcluster.collectives.nccl_constants import BASE_LAT_US, PER_CH_RING_LL128, TUNED_OPS
from simcluster.collectives.nccl_search import NcclTopology
from simcluster.collectives.nccl_tuner import decide
from simcluster.collectives.protocol import NCCL_NVLINK_STEP_LATENCY_S as STEP_LATENCY_S
from simcluster.collectives.protocol import PROTOCOLS
from simcluster.collectives.schedule import bus_factor, canonical_op, schedule

LL_THREADS = 512                                             # NCCL max threads per LL channel
P2P_LL_THRESHOLD_BYTES = 16384                               # NCCL_P2P_LL_THRESHOLD default, per p2p channel
P2P_LL_PART_BYTES = 8192                                     # smallest LL part per channel (LL step / 8)
P2P_WARPS = 640 // 32                                        # NCCL_MAX_NTHREADS: the p2p kernel's block, in warps
P2P_RECV_WARPS = (P2P_WARPS - 1) // 2                        # one work per channel: 9 warps receive, 10 send
P2P_LL_THREAD_SHARE = P2P_RECV_WARPS * 32 / LL_THREADS       # a p2p LL channel's rate over a ring LL channel's
# A registered p2p Simple call synchronises twice outside any pipeline (the receiver publishes its buffer's address,
# the sender posts completion): two Simple steps as NCCL's latency table prices them, not a card's fitted s_S (that
# is a ring primitive's marginal cost inside a pipeline, 0.6 us when fitted across rank counts)
REGISTERED_P2P_SYNC_S = 2 * STEP_LATENCY_S["Simple"]
# LL128 (NCCL's 120 payload bytes of every 128): base latency, unless fitted, = L_S + NCCL's ring LL128 - Simple base
# latency (14 - 8.4 us, src/graph/tuning.cc baseLat); bus bandwidth = NCCL's ring LL128 share of the Simple one
LL128_EXTRA_BASE_S = (BASE_LAT_US["Ring"][1] - BASE_LAT_US["Ring"][2]) * 1e-6
LL128_BUS_SHARE = 0.92
CHAIN_DES_CHUNKS_PER_HOP = 100   # the DES pipelines a chain in 100 chunks per extra hop: within 1% of the closed form
RING_OPS = ("all_reduce", "all_gather", "reduce_scatter")
CHAIN_OPS = ("broadcast", "reduce")
P2P_OPS = ("sendrecv", "alltoall")


@dataclass(frozen=True)
class PrimitiveParams(BareModel):
    model_name: ClassVar[str] = "nccl-primitives"

    ll_base_s: float
    ll_channel_Bps: float
    simple_base_s: float
    link_bandwidth_Bps: float                   # bus bandwidth of the NVLink path (Simple)
    channels: int
    host_floor_s: float = 0.0
    tuner: dict = field(default_factory=dict)   # ranks -> op -> {protocol: (latency_s, algbw_Bps)}, NCCL's tables
    ll_step_s: float = STEP_LATENCY_S["LL"]
    simple_step_s: float = STEP_LATENCY_S["Simple"]
    p2p_channels: int = 32                      # NCCL's "32 p2p channels, 32 p2p channels per peer"
    p2p_channels_per_peer: int = 32
    ring_ramps: dict = field(default_factory=dict)  # ranks -> (D seconds, W bytes): the ring ramp at that rank count
    nccl_arch: str = "hopper"                   # GPU architecture NCCL's decision model assumes without a logged table
    ll128_base_s: float = 0.0                   # LL128's base latency when fitted (rows NCCL ran at LL128); 0: derived

    @property
    def base_latency_s(self) -> float:
        return min(self.ll_base_s, self.simple_base_s)

    @property
    def simple_step_latency_s(self) -> float:
        return self.simple_step_s

    # the CollectiveModel interface (collectives/interface.py), on this module's functions
    def call_time(self, op: str, size_bytes: float, nranks: int, host_launch: bool = False,
                  protocol: str | None = None) -> tuple[float, str]:
        return call_time(self, op, size_bytes, nranks, host_launch, protocol)

    def des_terms(self, op: str, size_bytes: float, nranks: int, protocol: str | None = None) -> DesTerms:
        return des_terms(self, op, size_bytes, nranks, protocol)

    def notes(self, op: str, nranks: int, host_launch: bool) -> list[str]:
        return notes(self, op, nranks, host_launch)

    def to_params_yaml(self) -> dict:
        from simcluster.collectives.primitives_card import to_params_yaml

        return to_params_yaml(self)

    def with_machine(self, latency_offset_s: float, host_floor_s: float) -> PrimitiveParams:
        return replace(self, ll_base_s=self.ll_base_s + latency_offset_s,
                       simple_base_s=self.simple_base_s + latency_offset_s, host_floor_s=host_floor_s,
                       ll128_base_s=self.ll128_base_s and self.ll128_base_s + latency_offset_s)

    @classmethod
    def from_params_yaml(cls, params: dict, where: str) -> PrimitiveParams:
        from simcluster.collectives.primitives_card import from_params_yaml

        return from_params_yaml(cls, params, where)


def primitives(op: str, n: int) -> int:
    """Latency steps on a rank's critical path: ring primitives, chain hops, or one send + one receive."""
    if op in RING_OPS:
        return 2 * n - 1 if op == "all_reduce" else n
    return n - 1 if op in CHAIN_OPS else 2


def ll_channels(params: PrimitiveParams, size: float, n: int) -> int:
    return int(min(params.channels, max(1, size // (LL_THREADS * 8 * n))))


def p2p_peer_bytes(op: str, size: float, n: int) -> float:
    return size / n if op == "alltoall" else size


def p2p_channels_min(params: PrimitiveParams, n: int) -> int:
    m = params.p2p_channels_per_peer
    while m * n > params.p2p_channels and m > 1:
        m //= 2
    return m


def p2p_uses_ll(params: PrimitiveParams, op: str, size: float, n: int) -> bool:
    return p2p_peer_bytes(op, size, n) <= params.p2p_channels_per_peer * P2P_LL_THRESHOLD_BYTES


def _ll_time(params: PrimitiveParams, op: str, size: float, n: int) -> float:
    fixed, moving = _fixed_and_moving_s(params, op, size, n, "LL")
    return fixed + moving + (0.0 if op in P2P_OPS else primitives(op, n) * params.ll_step_s)


def p2p_fixed_s(params: PrimitiveParams) -> float:
    """The p2p kernel's fixed cost, one send and one receive step: the same for LL and Simple works, which one
    kernel runs (src/device/sendrecv.h)."""
    return params.ll_base_s + primitives("sendrecv", 2) * params.ll_step_s


def ring_ramp_s(params: PrimitiveParams, wire: float, n: int) -> float:
    """The ring ops' extra time at n ranks when each rank sends `wire` bytes: D (1 - exp(-wire / W)); 0 at a
    rank count the card has no ramp for (it differs between rank counts: ~400 us at 2, 50-90 us at 4 on H200)."""
    ramp_s, scale_bytes = params.ring_ramps.get(n, (0.0, 1.0))
    return ramp_s * -math.expm1(-wire / scale_bytes)


def ll128_base_s(params: PrimitiveParams) -> float:
    """LL128's base latency: fitted where the card's all_reduce had rows NCCL ran at LL128, else L_S + NCCL's ring
    LL128 - Simple base latency (14 - 8.4 us, src/graph/tuning.cc baseLat)."""
    return params.ll128_base_s or params.simple_base_s + LL128_EXTRA_BASE_S


def ll128_step_s(params: PrimitiveParams) -> float:
    """LL128's step latency: where NCCL's NVLink ring table puts it between LL and Simple (0.6 / 1.9 / 3.4 us),
    applied to the card's s_LL and s_S (NCCL's 1.9 us when those are NCCL's own)."""
    ll, ll128, simple = (STEP_LATENCY_S[p] for p in PROTOCOLS)
    return params.ll_step_s + (params.simple_step_s - params.ll_step_s) * (ll128 - ll) / (simple - ll)


def ll128_bus_Bps(params: PrimitiveParams) -> float:
    """LL128's bus bandwidth: NCCL's ring LL128 rule (src/graph/tuning.cc), min(0.92 B, ring channels x the
    architecture's per-channel LL128 rate); one node's ring channels are half its collective channels."""
    return min(LL128_BUS_SHARE * params.link_bandwidth_Bps,
               params.channels / 2 * PER_CH_RING_LL128[params.nccl_arch][0] * 1e9)


def _ll128_time(params: PrimitiveParams, op: str, size: float, n: int) -> float:
    fixed, moving = _fixed_and_moving_s(params, op, size, n, "LL128")
    ramp = ring_ramp_s(params, size * bus_factor(op, n), n) if op in RING_OPS else 0.0
    return fixed + moving + primitives(op, n) * ll128_step_s(params) + ramp


def _simple_time(params: PrimitiveParams, op: str, size: float, n: int, registered: bool) -> float:
    wire = size * bus_factor(op, n)
    if op in P2P_OPS and registered:    # address published, one direct copy, completion posted
        return p2p_fixed_s(params) + REGISTERED_P2P_SYNC_S + wire / params.link_bandwidth_Bps
    ramp = ring_ramp_s(params, wire, n) if op in RING_OPS else 0.0
    return params.simple_base_s + primitives(op, n) * params.simple_step_s + wire / params.link_bandwidth_Bps + ramp


def tuner_table(params: PrimitiveParams, n: int) -> dict:
    """NCCL's tuner table (op -> protocol -> (latency_s, algbw_Bps)) logged at n ranks; an untagged table (0)
    stands for any rank count; {} when the card has none for n."""
    return params.tuner.get(n) or params.tuner.get(0) or {}


def nccl_choice(params: PrimitiveParams, op: str, size: float, n: int) -> str | None:
    """The protocol NCCL's tuner picks (its latency + bytes / bandwidth) at n ranks: from NCCL's printed table when
    the card has one for n, else from NCCL's decision model for one NVSwitch node of n GPUs of the card's
    architecture (collectives/nccl_tuner.py); None for ops NCCL does not tune (p2p)."""
    table = tuner_table(params, n).get(op)
    if not table:
        if op not in TUNED_OPS:
            return None
        return decide(NcclTopology(params.nccl_arch, n, 1), op, size).protocol
    return min(table, key=lambda p: table[p][0] + size / table[p][1])


def gpu_time(params: PrimitiveParams, op: str, size: float, n: int, protocol: str | None = None,
             registered: bool = True) -> tuple[float, str]:
    """(seconds on the GPUs, protocol) for one call; `registered`: NCCL has the user buffers registered (as
    under CUDA-graph capture), which changes how a p2p Simple call moves its data."""
    op = canonical_op(op)
    if n <= 1:
        return params.ll_base_s, "LL"
    options = {"LL": _ll_time(params, op, size, n), "Simple": _simple_time(params, op, size, n, registered)}
    if op not in P2P_OPS:                          # NCCL runs p2p at LL or Simple only
        options["LL128"] = _ll128_time(params, op, size, n)
    if protocol in options:
        return options[protocol], protocol
    if op in P2P_OPS:
        proto = "LL" if p2p_uses_ll(params, op, size, n) else "Simple"
    else:
        choice = nccl_choice(params, op, size, n)
        proto = choice if choice in options else min(options, key=options.get)
    return options[proto], proto


def _fixed_and_moving_s(params: PrimitiveParams, op: str, size: float, n: int, proto: str) -> tuple[float, float]:
    """(the call's fixed latency, the time it spends moving bytes) at one protocol, GPU time, buffers registered."""
    if proto == "Simple":
        fixed = p2p_fixed_s(params) + REGISTERED_P2P_SYNC_S if op in P2P_OPS else params.simple_base_s
        return fixed, size * bus_factor(op, n) / params.link_bandwidth_Bps
    if proto == "LL128":
        return ll128_base_s(params), size * bus_factor(op, n) / ll128_bus_Bps(params)
    if op in P2P_OPS:
        peer = p2p_peer_bytes(op, size, n)
        c = min(p2p_channels_min(params, n), max(1, math.ceil(peer / P2P_LL_PART_BYTES)))
        return p2p_fixed_s(params), peer / (c * P2P_LL_THREAD_SHARE * params.ll_channel_Bps)
    c = ll_channels(params, size, n)
    moved = primitives(op, n) * size / n if op in RING_OPS else size
    return params.ll_base_s, moved / (c * params.ll_channel_Bps)


def des_terms(params: PrimitiveParams, op: str, size: float, n: int, protocol: str | None = None) -> DesTerms:
    """The chunk DES's terms for one call (GPU time): one chunk per send of the schedule; the base latency is the
    protocol's fixed cost, the rate moves each send's bytes in the model's byte time, and the step latency carries
    the rest (the primitives' step latencies, the ring ramp), so that uncontended the DES equals gpu_time."""
    op = canonical_op(op)
    total, proto = gpu_time(params, op, size, n, protocol)
    sched = schedule(op, size, n)
    if sched.kind == "none" or size <= 0:
        return DesTerms(proto, total, 0.0, 1.0, params.link_bandwidth_Bps, total, 0.0)
    fixed, moving = _fixed_and_moving_s(params, op, size, n, proto)
    if sched.kind == "chain" and sched.sends > 1:     # pipelined hops: k chunks, a bubble of (hops - 1) / k
        k = CHAIN_DES_CHUNKS_PER_HOP * (sched.sends - 1)
        steps = k + sched.sends - 1
        return DesTerms(proto, fixed, max(0.0, total - fixed - moving) / steps, size / k, size / moving,
                        total - moving, moving)
    return DesTerms(proto, fixed, max(0.0, total - fixed - moving) / sched.sends, sched.segment_bytes,
                    sched.sends * sched.segment_bytes / moving, total - moving, moving)


def call_time(params: PrimitiveParams, op: str, size: float, n: int, host_launch: bool = False,
              protocol: str | None = None) -> tuple[float, str]:
    """One call as nccl-tests times it: captured in a CUDA graph (buffers registered, NCCL_GRAPH_REGISTER's
    default) or launched from the host (not registered, at least the host floor)."""
    t, proto = gpu_time(params, op, size, n, protocol, registered=not host_launch)
    return (max(t, params.host_floor_s) if host_launch else t), proto


def notes(params: PrimitiveParams, op: str, n: int, host_launch: bool) -> list[str]:
    """What this card says about predicting `op` at n ranks: registration of p2p buffers, a missing tuner table,
    a missing host floor."""
    op = canonical_op(op)
    out = []
    if params.host_floor_s and host_launch:
        out.append(f"host-launched; a host-launched call takes at least {params.host_floor_s * 1e6:.1f} us on the "
                   "calibrated host (bimodal: docs/models/collectives.md)")
    elif params.host_floor_s:
        out.append("GPU time, as nccl-tests -G measures it (--host-launched: plain nccl-tests)")
    if op in P2P_OPS and not host_launch:
        out.append("p2p buffers registered, as under CUDA-graph capture (NCCL_GRAPH_REGISTER=1): a Simple call is "
                   "one direct copy; unregistered host-launched calls pipeline through NCCL's FIFO")
    if params.tuner and op not in P2P_OPS and not tuner_table(params, n):
        out.append(f"the card has NCCL's tuning table for ranks {sorted(params.tuner)} only; at {n} "
                   f"ranks the protocol is NCCL's decision model's for one NVSwitch node of {params.nccl_arch} GPUs "
                   "(collectives/nccl_tuner.py; calibrate with --nccl-log of that rank count to use NCCL's own table)")
    if host_launch and not params.host_floor_s:
        out.append("the card has no separate host launch floor (fitted on one launch mode): host-launched calls are "
                   "predicted as the fitted timings, too fast where a CUDA-graph-fitted card meets the host's launch cost")
    return out
