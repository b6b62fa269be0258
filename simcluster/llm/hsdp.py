"""ZeRO-3 / FSDP's per-layer data-parallel collectives, plain (FULL_SHARD) or hybrid (HSDP: shard inside a group,
replicate across), as PyTorch's FSDP runs them (issue 44).

FULL_SHARD (parallel.dp_shard 0 or dp): every layer's parameters are all-gathered over the whole data-parallel group
(dp x cp: CP ranks hold the same weights) in their stored dtype (FrameworkSpec.param_bytes) once in the forward and again
in the backward (reshard after forward), and its gradients reduce-scattered over it in the reduce dtype (grad_bytes): one
call per layer each, every call paying the ring's latency over the group.

HSDP (parallel.dp_shard = S < dp; zero 3, cp 1, ep 1): the dp ranks split into dp / S shard groups of S consecutive
data-parallel ranks (FSDP1 ShardingStrategy.HYBRID_SHARD: torch.distributed.fsdp._init_utils
_init_intra_and_inter_node_groups builds the intra-node group of the node's GPUs and the inter-node group of the ranks
with the same local rank; FSDP2: fully_shard on a 2-D DeviceMesh (replicate, shard), torchtitan's
data_parallel_replicate_degree x data_parallel_shard_degree since pytorch/torchtitan#518, 2024-08) and S replica groups
of dp / S ranks, S x tp apart (ranks numbered as llm/comm.py numbers them: TP innermost, then DP). Per layer:
  all_gather      of the layer's parameters over the shard group only (forward, and the backward again);
  reduce_scatter  of its gradients over the shard group (grad_bytes), then
  all_reduce      of each rank's gradient shard (P_layer / S elements, the reduce dtype) over the replica group.
FSDP1 issues the all_reduce on its own stream (_all_reduce_stream, created only under hybrid sharding) after the
reduce_scatter on the post-backward stream (_runtime_utils._reduce_grad); FSDP2's foreach_reduce likewise on
all_reduce_stream after reduce_scatter_stream. So the backward runs two communication streams beside its compute:
the shard group's gathers and reduce_scatters (AG + RS), and the replica group's all_reduces (AR), each layer's one
reduce_scatter behind: the backward's data-parallel span is max(AG + RS, RS / L + AR), each stream stretched as it runs
beside the compute (overlap.beside, the GPU card's comm_overlap), and the compute loses what all NCCL kernels beside it
(AG + RS + AR) cost it. The last layer's reduce_scatter and all_reduce, (RS + AR) / L, run after the backward (the
DES's tail bucket). The shard group of S <= GPUs per node runs on the NVLink card, the replica group on the fabric;
S larger than a node puts the shard group on the fabric too (llm/comm.place).
Memory (llm/memory.py): parameters, gradients and optimizer state sharded by S, not dp; the optimizer step updates
P / S parameters on each rank.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simcluster.llm import comm
from simcluster.llm.framework import FrameworkSpec
from simcluster.llm.overlap import beside
from simcluster.llm.spec import LlmConfigError, ParallelSpec


@dataclass(frozen=True)
class Zero3Calls:
    """One model chunk's ZeRO-3 collectives for one micro-batch (seconds, `layers` calls of each)."""

    gather_s: float          # all_gathers of the parameters, one pass (the forward's; the backward gathers again)
    scatter_s: float         # reduce_scatters of the gradients
    replica_s: float = 0.0   # HSDP: all_reduces of the gradient shards over the replica group
    layers: int = 1          # calls of each: the layers, or their weight matrices (llm/dp_beside.calls_per_layer)
    serial: bool = False     # reduce_scatters on the compute stream, gathers still beside it (FrameworkSpec.dp_on_compute_stream; llm/dp_beside.py)

    def backward_streams(self) -> list[tuple[float, float]]:
        """(start lag, communication seconds) of each stream beside the backward: the shard group's gathers and
        reduce_scatters; under HSDP the replica group's all_reduces, one layer's reduce_scatter behind."""
        streams = [(0.0, self.gather_s + self.scatter_s)]
        return streams + [(self.scatter_s / self.layers, self.replica_s)] if self.replica_s > 0 else streams

    @property
    def backward_total_s(self) -> float:
        """Every NCCL kernel beside the backward, whatever its stream (what the compute loses runs on all of them)."""
        return self.gather_s + self.scatter_s + self.replica_s

    @property
    def tail_s(self) -> float:
        """The last layer's reduce_scatter (and all_reduce), after the backward's compute (none when serial: it is in it)."""
        return 0.0 if self.serial else (self.scatter_s + self.replica_s) / self.layers

    def backward_dp_s(self, compute_s: float, gpu, fw: FrameworkSpec) -> float:
        """The backward's exposed data-parallel seconds beside `compute_s` of compute (overlap.beside: compute lost,
        span): what every NCCL kernel beside it costs the compute, the streams' excess over the compute, and one layer's
        gather ahead. Serial (FrameworkSpec.dp_on_compute_stream): the gathers beside the compute as unserial, and every
        reduce_scatter's whole time on the compute stream after it (DeepSpeed's async prefetched gathers; llm/dp_beside.py)."""
        if self.serial:
            slow, span = beside(compute_s, self.gather_s, gpu, fw)
            return slow + max(0.0, span - compute_s - slow) + self.gather_s / self.layers + self.scatter_s
        slow = beside(compute_s, self.backward_total_s, gpu, fw)[0]
        span = max(lag + beside(compute_s, c_s, gpu, fw)[1] for lag, c_s in self.backward_streams())
        return slow + max(0.0, span - compute_s - slow) + self.gather_s / self.layers

    def unsynced(self) -> Zero3Calls:
        """A backward that does not reduce (no-sync, llm/grad_sync.py): its gathers only."""
        return replace(self, scatter_s=0.0, replica_s=0.0)


def hybrid(par: ParallelSpec) -> bool:
    return par.zero == 3 and par.shard < par.dp


def shard_groups(par: ParallelSpec, net: comm.Network) -> tuple[comm.Group, comm.Group]:
    """(shard group, replica group) of HSDP, placed on the network (module docstring)."""
    stride = par.tp * par.cp
    shard = comm.place("dp_shard", par.shard, stride, par.gpus, net)
    return shard, comm.place("dp_replicate", par.dp // par.shard, stride * par.shard, par.gpus, net)


def describe(par: ParallelSpec, net: comm.Network) -> dict:
    """The HSDP groups' placement for a result's `groups` (none without HSDP)."""
    if not hybrid(par):
        return {}
    return {g.name: g.describe() for g in shard_groups(par, net)}


def zero3_calls(net: comm.Network, g: comm.Groups, par: ParallelSpec, fw: FrameworkSpec, dense: float, expert: float,
                layers: int) -> Zero3Calls:
    """The chunk's per-layer all_gathers, reduce_scatters and (HSDP) all_reduces of `dense` and `expert` parameters
    over `layers` layers: one call of each per layer, which one model-sized call divided by L would hide (the ring's
    latency over DP groups of 1,000+ ranks)."""
    def calls(group: comm.Group, params: float, op: str, nbytes: float) -> float:
        return layers * comm.collective_s(net, group, op, params / layers * nbytes) if params > 0 else 0.0
    if not hybrid(par):
        ag = calls(g.dense_grad, dense, "all_gather", fw.param_bytes) + calls(g.expert_dp, expert, "all_gather", fw.param_bytes)
        rs = calls(g.dense_grad, dense, "reduce_scatter", fw.grad_bytes) + calls(g.expert_dp, expert, "reduce_scatter", fw.grad_bytes)
        return Zero3Calls(ag, rs, 0.0, layers, fw.dp_on_compute_stream)
    if expert > 0:
        raise LlmConfigError("parallel.dp_shard", "HSDP with expert parameters is not modelled", hint="dp_shard: dp")
    shard, replica = shard_groups(par, net)
    return Zero3Calls(calls(shard, dense, "all_gather", fw.param_bytes), calls(shard, dense, "reduce_scatter", fw.grad_bytes),
                      calls(replica, dense / par.shard, "all_reduce", fw.grad_bytes), layers)
