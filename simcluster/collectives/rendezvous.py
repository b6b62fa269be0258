"""EFA's rendezvous: the one-way latency a collective call waits for where its first network message is above the
stack's eager limit (issue 41; docs/models/fabric.md, "EFA's rendezvous").

aws-ofi-nccl's RDMA protocol (p5, p5e, p5en, p6: platform-aws.cpp default_protocol "RDMA"; v1.16.3
src/nccl_ofi_rdma.cpp send()): a send goes out at once, eagerly into the receiver's bounce buffer, only while no
control message is waiting, the message is at most OFI_NCCL_EAGER_MAX_SIZE (8,192 B by default from v1.7 on; -1,
eager off, in v1.14 only) and no RDMA write is in flight; any other send is an RDMA write into the buffer the
receiver announced in a control message, and waits for that message. The receiver sends it when NCCL posts the
receive, and NCCL's proxy posts receives up to NCCL_STEPS (8) steps ahead (net.cc recvProxyProgress), so in a running
pipeline every announcement is already there and a step costs one one-way latency, the write. Only a connection's
first step of a call can find none: its receive was posted when the call started, at the same time as the send.
So a call whose first message is above the eager limit waits one more one-way latency, once, on its critical path;
a call whose first message is eager does not. Which it is follows from the message size per step (NCCL's chunk
per channel, collectives/pipeline_fill.py), not from the protocol's name. NCCL_STEPS and the chunk sizes are
NCCL's (v2.27.7-1); the latency is the NIC card's one-way latency plus the path. From v1.20.0 the eager test is
size + NCCL_OFI_EAGER_HEADER_SIZE (8 B) <= eager_send_size, and eager_send_size is 0 (no eager send at all) unless
the EFA device reports mixed_hmem_iov (nccl_ofi_net.cpp); the model takes the header and assumes the support.
"""

from __future__ import annotations

from simcluster.collectives.nccl_constants import TUNED_OPS
from simcluster.collectives.nccl_search import graphs
from simcluster.collectives.nccl_tuner import call_channels
from simcluster.collectives.pipeline_fill import (
    LL128_STEP_BYTES,
    LL_CHUNK_BYTES,
    SIMPLE_STEP_BYTES,
    nvls_tree_chunk_bytes,
    stream_chunk_bytes,
    tree_chunk_bytes,
)

# Bytes on the wire per data byte (LL: a 4-byte flag with every 4 data bytes; LL128: 8 flag bytes in every 128).
WIRE_PER_DATA = {"LL": 2.0, "LL128": 128 / 120, "Simple": 1.0}
# A ring step's most data per channel: one slot of the protocol's buffer (DEFAULT_*_BUFFSIZE / NCCL_STEPS).
# aws-ofi-nccl's eager header (include/nccl_ofi_rdma.h NCCL_OFI_EAGER_HEADER_SIZE, v1.20.0 on): a message is eager
# only while its bytes plus the header fit the eager limit (src/nccl_ofi_rdma.cpp send(); v1.16.3-v1.19.2: bytes alone).
EAGER_HEADER_BYTES = 8.0
RING_STEP_BYTES = {"LL": float(LL_CHUNK_BYTES), "LL128": float(LL128_STEP_BYTES // 16 * 15), "Simple": float(SIMPLE_STEP_BYTES)}


def first_message_bytes(cluster, op: str, algo: str, protocol: str, size: float) -> float:
    """Wire bytes of a call's first network message on one channel. Ring: a rank's share of the call on one channel,
    at most one buffer slot; Tree / NVLSTree: a stream's first chunk (pipeline_fill); point-to-point (algo None): a
    peer's bytes, at most one Simple slot (NCCL_P2P_NET_CHUNKSIZE 512 KiB, which aws-ofi-nccl sets on these
    platforms)."""
    topo = cluster.nccl_topology
    tuned = op if op in TUNED_OPS else "all_reduce"
    if algo == "Ring":
        channels = call_channels(topo, tuned, "Ring", protocol, size)[0]
        data = min(RING_STEP_BYTES[protocol], size / (cluster.ranks * max(1, channels)))
    elif algo == "Tree":
        channels = call_channels(topo, "all_reduce", "Tree", protocol, size)[0]
        data = stream_chunk_bytes(tree_chunk_bytes(protocol, size, channels, cluster.nodes, cluster.ranks), size, channels)
    elif algo == "NVLSTree":
        channels = call_channels(topo, "all_reduce", "NVLSTree", "Simple", size)[0]
        heads = graphs(topo)["NVLSTree"].channels or cluster.gpus_per_node
        data = stream_chunk_bytes(nvls_tree_chunk_bytes(size, channels, heads, cluster.nodes), size, channels * heads)
    else:
        data = min(float(SIMPLE_STEP_BYTES), size)
    return data * WIRE_PER_DATA[protocol]


def rendezvous_s(cluster, l_nic: float, op: str, algo: str | None, protocol: str, size: float) -> float:
    """The one-way latency (s) a call waits for its first control message: l_nic where the NIC card states an eager
    limit (`eager_max_size`) and the call's first message plus the eager header (EAGER_HEADER_BYTES) is above it,
    else 0."""
    eager = cluster.nic.eager_max_size_bytes
    if not eager or cluster.nodes < 2:
        return 0.0
    return l_nic if first_message_bytes(cluster, op, algo or "", protocol, size) + EAGER_HEADER_BYTES > eager else 0.0
