"""The tree pipelines' fill: the time a chunk takes to cross every stage but the slowest before a tree runs at its
steady rate (issue 41; docs/models/fabric.md, "Tree pipeline fill").

NCCL's tree (Tree, NVLSTree) moves each channel's share of an all_reduce as chunks through one pipeline: up the
node's NVLink chain, up the inter-node tree, down it and down the chain again (ncclPatternTreeUpDown; NVLS tree: the
NVLink SHARP reduce, the inter-node tree up and down, the NVLS broadcast). A pipeline of stages with per-chunk
times t_i delivers its last chunk at  sum_i t_i + (k - 1) max_i t_i  for k chunks; the steady-state form prices
k max t_i, so the fill is  sum_i t_i - max_i t_i,  one chunk through every stage but the slowest. A ring has no such
fill (every rank sends from its first step on). Every input is NCCL's (v2.27.7-1, facts only):

- chunk: Simple stepSize = 4 MiB / NCCL_STEPS (8) = 512 KiB (init.cc DEFAULT_BUFFSIZE; a tree's chunkSteps is 1,
  enqueue.cc calcCollChunking); LL half of its 64 KiB step; LL128 its 600 KiB step x 15/16 data, halved while a
  channel has fewer than (1 + log2 N + ppn/10) x 64/ppn chunks (down to 128 KiB), then x 16/ppn (down to 32 KiB);
  NVLS tree 128 KiB (NCCL_NVLS_CHUNKSIZE), 64 KiB from 4 nodes, halved while the call is under 32 / 16 / 4 / 1 x
  channels x heads x chunk (to 256 / 128 / 64 / 32 KiB).
  Every chunk is rounded down to the protocol's grain (enqueue.cc: chunkSize / grainSize * grainSize; device.h
  ncclProtoGrainSize: LL 16 B, LL128 1,920 B, Simple 512 B), and a stream's chunk is at most the call's data per stream
  (all_reduce.h runTreeUpDown: nelem = min(chunkCount, channelCount - offset), the last chunk partial).
- what a stage waits for before it forwards: a network stage a whole chunk (net.cc: the send proxy posts a step once
  every line of it has its flag, LL, or the GPU has moved the tail past it, Simple and LL128 with GPU Direct RDMA); an NVLink stage a whole
  chunk under Simple (prims_simple.h: a receiver waits for the slice's step; a tree's sliceSteps = chunkSteps = 1),
  one grain under LL and LL128 (prims_ll.h readLL, prims_ll128.h recvReduceSendCopy: a receiver polls each line's
  flag and forwards it, so the next GPU starts on a chunk's first lines).
- a stage's per-chunk time: the stage's share of its bandwidth term, (bytes it waits for) x (parallel chunk streams)
  x (bytes it moves per byte of S) / rate. Streams: a tree's channels; an NVLS tree's channels x heads (its loop).
"""

from __future__ import annotations

from simcluster.collectives.schedule import tree_depth

NCCL_STEPS = 8
SIMPLE_STEP_BYTES = (1 << 22) // NCCL_STEPS                   # DEFAULT_BUFFSIZE / NCCL_STEPS
LL_CHUNK_BYTES = 8 * 512 * NCCL_STEPS * 16 // NCCL_STEPS // 2  # DEFAULT_LL_BUFFSIZE / NCCL_STEPS, LL's half is data
LL128_STEP_BYTES = 120 * 640 * NCCL_STEPS * 8 // NCCL_STEPS    # DEFAULT_LL128_BUFFSIZE / NCCL_STEPS
NVLS_CHUNK_BYTES = 128 * 1024                                 # NCCL_NVLS_CHUNKSIZE default
GRAIN_BYTES = {"LL": 16, "LL128": 32 * 8 // 16 * 15 * 8, "Simple": 512}   # ncclProtoGrainSize (LL128: a warp's lines)


def _log2i(n: int) -> int:
    return max(0, int(n).bit_length() - 1)


def tree_chunk_bytes(protocol: str, size: float, channels: int, nodes: int, ranks: int) -> float:
    """Data bytes of one chunk of NCCL's tree all_reduce (calcCollChunking), rounded down to the protocol's grain."""
    if protocol != "LL128":
        return float(_aligned(LL_CHUNK_BYTES if protocol == "LL" else SIMPLE_STEP_BYTES, protocol))
    chunk = LL128_STEP_BYTES // 16 * 15
    ppn = ranks / nodes
    steps = 1 + _log2i(nodes) + 0.1 * ppn
    while size // (channels * chunk) < steps * 64 / ppn and chunk > 131072:
        chunk //= 2
    while size // (channels * chunk) < steps * 16 / ppn and chunk > 32768:
        chunk //= 2
    return float(_aligned(chunk, protocol))


def _aligned(chunk: int, protocol: str) -> int:
    return chunk // GRAIN_BYTES[protocol] * GRAIN_BYTES[protocol]


def stream_chunk_bytes(chunk: float, size: float, streams: int) -> float:
    """A stream's first chunk: NCCL's chunk, or the call's whole share of the stream where that is less."""
    return min(chunk, size / max(1, streams))


def nvlink_wait_bytes(protocol: str, chunk: float) -> float:
    """Bytes an NVLink stage receives before it forwards: the whole chunk (Simple's slice), a grain (LL, LL128)."""
    return chunk if protocol == "Simple" else min(chunk, float(GRAIN_BYTES[protocol]))


def nvls_tree_chunk_bytes(size: float, channels: int, heads: int, nodes: int) -> float:
    """Bytes of one chunk of NCCL's NVLS-tree all_reduce (calcCollChunking, NCCL_NVLSTREE_MAX_CHUNKSIZE unset)."""
    chunk = NVLS_CHUNK_BYTES if nodes < 4 else min(NVLS_CHUNK_BYTES, 65536)
    ops = channels * heads
    for times, floor in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
        if size < times * ops * chunk and chunk > floor:
            chunk = floor
    return float(_aligned(chunk, "Simple"))


def fill_s(stage_s: list[float]) -> float:
    """One chunk through every stage but the slowest: sum - max of the stages' per-chunk times (s)."""
    return sum(stage_s) - max(stage_s) if stage_s else 0.0


def tree_stages_s(net_chunk: float, nvlink_chunk: float, streams: int, nodes: int, intra_hops: int,
                  intra_s_per_byte: float, net_s_per_byte: float) -> list[float]:
    """Per-chunk times of a tree's stages: `intra_hops` NVLink stages, each `nvlink_chunk x streams` bytes, and
    2 x tree_depth(N) network ones (up and down the inter-node tree), each `net_chunk x streams` bytes, at its
    resource's seconds per byte of S, i.e. the stage's share of its bandwidth term (the steady state's)."""
    return ([nvlink_chunk * streams * intra_s_per_byte] * intra_hops
            + [net_chunk * streams * net_s_per_byte] * (2 * tree_depth(nodes)))
