"""ZeRO-2 as FSDP2 runs it, re-priced (FrameworkSpec.zero2_fsdp2; issue 44, session 48, helper zero2e; docs/models/llm.md
'ZeRO-2'). With zero2_regather, zero2_exposed and zero2_bf16_weights below: on for framework torch's zero 2 and the
FSDP2 frameworks since session 48 adopt2g (zero2g's registered rule D, ADOPTED: ADOPTED; the framework before it:
heldout/registration.before_adopt2g).

FSDP2's ZeRO-2 is fully_shard(reshard_after_forward=False) on every block and the root. The product prices framework
torch's zero 2 with the ZeRO-1/2 path: the gradients reduce-scattered in DDP-sized buckets (FrameworkSpec.bucket_params,
25 MiB of fp32 for torch: 1,226 calls for the 8b preset) beside each backward, and the parameters all-gathered once a
step, waited for in full. What FSDP2 does instead (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py and
_fsdp_collectives.py, pytorch/pytorch main as the zero2b-zero2d READMEs cite it, 002a76fb; read for this module through
the stored source excerpts, not run):

  reduce-scatter  one call per FSDP group per backward (FSDPParamGroup.post_backward -> foreach_reduce on the group's
                  gradients): a block's parameters in one call, not in buckets (group_bucket_params)
  re-gather       post_backward reshards the group unless reshard_after_backward is False (its default True), so every
                  micro-batch's forward all-gathers every block again (FrameworkSpec.zero2_regather's path, turned on
                  with this candidate: llm/work.py prices it as ZeRO-3's forward gathers, hsdp.zero3_calls)
  copy-out        each all-gather ends with foreach_all_gather_copy_out: the current (compute) stream waits for the
                  all-gather's event, then split_with_sizes_copy moves the gathered buffer into every parameter's
                  unsharded storage: the unsharded parameters read and written once on the compute stream per gather
                  (copy_out_s). The copy-in (foreach_all_gather: the local shard copied into the all-gather input) runs on
                  its own stream, beside the compute: not priced (its 2 x param_bytes / dp per parameter is half of
                  the copy-out's at dp 2)

Where the runner's gathered variant (--reshard-after-backward false: set_reshard_after_backward(False) on every
micro-batch but the last) is priced, the candidate keeps the per-group reduce-scatter and prices the one gather a step
with its copy-out (validation/zero2e.py: zero2_fsdp2 on, zero2_regather off).

The exposed re-gather (FrameworkSpec.zero2_exposed; session 48's zero2f candidate, adopted with zero2_regather and
zero2_fsdp2): exposed_gathers_s prices every later micro-batch's re-gather alone, nothing beside it. From the source
(docs/models/llm.md 'ZeRO-2'): FSDPState._root_pre_forward makes the all-gather streams wait for the compute stream at
every forward's root (the first block's gather exposed each micro-batch), pre_forward's implicit prefetch keeps at most
one gather ahead, and the all-gathers share the reduce-scatters' process group; the rest of the exposure is what the
zero2d / zero2e runs read (development), not found in the source. Valid for GPU-bound steps.

The forward weight casts (FrameworkSpec.zero2_bf16_weights; session 48's zero2g candidate, registered with the
three above): framework torch's FSDP2 carries TORCH_AMP's cast_bytes (12: every weight cast fp32 -> bf16 in the forward,
its gradient copied bf16 -> fp32 in the backward, 6 bytes a parameter each way on the compute stream). Under FSDP2's
MixedPrecisionPolicy(param_dtype=bf16) (the runner's llm_mesh.fully_sharded) the unsharded parameters the blocks compute
with are already bf16, and autocast casts only a tensor whose dtype differs from its target (cached_cast,
aten/src/ATen/autocast_mode.cpp: `arg.scalar_type() != to_type`), so the forward casts nothing: the fp32 -> bf16 cast
happens once per gather, on the sharded parameters in the all-gather copy-in (its own stream). The backward's 6 bytes
stay: FSDP2's foreach_reduce copies each bf16 unsharded gradient into the fp32 reduce-scatter input on the current
(compute) stream before the reduce-scatter stream waits for it (foreach_reduce_scatter_copy_in, _fsdp_collectives.py),
as torchtitan-fsdp2's grad_accumulate_bytes 6 prices it (llm/framework.py). forward_casts drops the forward's casts (and
their kernels from the host's issue list). ZeRO-3's FSDP2 carries the same double count (the zero-3 control rows move
-3.5 to -5.1 points with it, studies/zero2g_terms.py; development): not changed here, the switch is scoped to zero 2
(applies) as registered. FrameworkSpec.zero3_bf16_weights (off) drops them at zero 3: session 49's candidate, registered
before any zero-3 run of it (calibration/h200x2-x2set49-2026-12-01, rule Z).

Checked (development, the rows the candidate was chosen with): the zero2d set's 8b 2912:1 regather / gathered runs, the
zero2c set's 8b 1440:2 zero2 runs, session 46's zero2 / zero2b rows (docs/models/llm-findings.md 'session 48 zero2e').
ZeRO-3 rows do not move (zero 2 only). Valid range: 2-rank NVLink groups (the lab's), FSDP groups of one block each.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from simcluster.llm import comm, hsdp
from simcluster.llm.framework import FSDP2_ZERO2, FrameworkSpec
from simcluster.llm.spec import ParallelSpec


def applies(par: ParallelSpec, fw: FrameworkSpec) -> bool:
    """The candidate prices this layout: zero 2 with FrameworkSpec.zero2_fsdp2 on."""
    return par.zero == 2 and fw.zero2_fsdp2


def group_bucket_params(params: float, layers: int) -> int:
    """Parameters per reduce-scatter call: one FSDP group (a block) of the chunk's `params` over its `layers`."""
    return max(1, math.ceil(params / max(1, layers)))


def copy_out_s(gpu, params: float, param_bytes: float) -> float:
    """Seconds of one gather's copy-out on the compute stream: `params` unsharded parameters of `param_bytes` read from
    the all-gather output and written to their storage (a memory-bound kernel: gpu.memory_time_s)."""
    return gpu.memory_time_s(2.0 * param_bytes * params) if params > 0 else 0.0


def exposed_gathers_s(step_gather_s: float, micro_batches: int, regather_s: float) -> float:
    """Seconds of a step's gathers with FrameworkSpec.zero2_exposed (the candidate of session 48's zero2f set): the
    first forward's gather as the product prices ZeRO-2's (`step_gather_s`: one gather of the chunk and its copy-out,
    waited for in full), then each later micro-batch's forward re-gathers every block with nothing beside it:
    (micro_batches - 1) x `regather_s` (every block's all_gather, hsdp.zero3_calls' gather_s, plus its copy-out)."""
    return step_gather_s + max(0, micro_batches - 1) * regather_s


def forward_casts(par: ParallelSpec, fw: FrameworkSpec, casts: list) -> list:
    """The forward's autocast weight casts (`casts`) as the layout runs them: none under FrameworkSpec.zero2_bf16_weights
    where the candidate applies (FSDP2's bf16 parameters: nothing to cast, module docstring), none at zero 3 under
    zero3_bf16_weights (the same argument for FSDP2's default full shard; session 49 x2set49's Z3 candidate, off: registered
    in calibration/h200x2-x2set49-2026-12-01), else `casts`."""
    if (applies(par, fw) and fw.zero2_bf16_weights) or (par.zero == 3 and fw.zero3_bf16_weights):
        return []
    return casts


class ChunkCalls(NamedTuple):
    """A ZeRO-0/1/2 model chunk's data-parallel calls as llm/work.py prices them (chunk_calls)."""

    per_call: float                      # parameters per gradient reduce-scatter / all_reduce call (a bucket, a block)
    gather_s: float                      # the step's parameter gathers, waited for before the first forward
    beside: hsdp.Zero3Calls | None       # re-gathers run beside each forward (work._forward_gathers), or None
    copy_s: float                        # one gather's copy-out on the compute stream (0 unless the candidate applies)


def chunk_calls(gpu, net: comm.Network, g: comm.Groups, par: ParallelSpec, fw: FrameworkSpec, dense: float, expert: float,
                layers: int, micro_batches: int) -> ChunkCalls:
    """The chunk's calls (of `dense` and `expert` parameters over `layers` blocks, `micro_batches` a step) outside ZeRO-3:
    the product's ZeRO-1/2 buckets (FrameworkSpec.bucket_params) and one gather a step, and where applies(): a
    reduce-scatter per block (group_bucket_params) and each gather's copy-out (copy_out_s). With zero2_regather (zero 2)
    every forward re-gathers per layer (hsdp.zero3_calls): all exposed with zero2_exposed (exposed_gathers_s, in
    gather_s), else beside the forward (`beside`, with the copy-out on the compute stream, gather_s 0)."""
    fsdp2 = applies(par, fw)
    per_call = group_bucket_params(dense + expert, layers) if fsdp2 else fw.bucket_params
    copy = copy_out_s(gpu, dense + expert, fw.param_bytes) if fsdp2 else 0.0
    gather = (comm.param_gather_s(net, g.dense_grad, dense) + comm.param_gather_s(net, g.expert_dp, expert) + copy
              if par.zero in (1, 2) else 0.0)
    if par.zero != 2 or not fw.zero2_regather:
        return ChunkCalls(per_call, gather, None, copy)
    z = hsdp.zero3_calls(net, g, par, fw, dense, expert, max(1, layers))
    if fw.zero2_exposed:
        return ChunkCalls(per_call, exposed_gathers_s(gather, micro_batches, z.gather_s + copy), None, copy)
    return ChunkCalls(per_call, 0.0, z, copy)


ADOPTED = tuple(FSDP2_ZERO2)   # on since session 48 adopt2g (framework.FSDP2_ZERO2, the one spelling)

