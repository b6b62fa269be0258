"""ZeRO-2 as FSDP2 runs it, re-priced as one candidate (FrameworkSpec.zero2_fsdp2, OFF in the product; issue 44,
session 48, helper zero2e; docs/models/llm.md 'ZeRO-2').

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

Checked (development, the rows the candidate was chosen with): the zero2d set's 8b 2912:1 regather / gathered runs, the
zero2c set's 8b 1440:2 zero2 runs, session 46's zero2 / zero2b rows (docs/models/llm-findings.md 'session 48 zero2e').
ZeRO-3 rows do not move (zero 2 only). Valid range: 2-rank NVLink groups (the lab's), FSDP groups of one block each.
"""

from __future__ import annotations

import math

from simcluster.llm.framework import FrameworkSpec
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
