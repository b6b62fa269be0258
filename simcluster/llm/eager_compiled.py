"""torch.compile under the eager runner (llm-step --compile; split out of llm/eager.py in session 46, cold review B46
item 6): the compiled framework of a parallel setting and its host cost per compiled block, from the eager modes' host
fits (eager.fit_modes). eager.torch_framework calls compiled_framework with itself as `eager_fw` (the eager mode's
framework, read at call time, so that eager.torch_framework_as's swap reaches the kernel counts here too)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from simcluster.llm import compiled as compiled_layer
from simcluster.llm import host
from simcluster.llm.framework import TORCH_COMPILE, FrameworkSpec
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

EagerFramework = Callable[[ParallelSpec], FrameworkSpec]
# The eager runner modes that run around a compiled block: their host fits' layouts (eager._parallel reads them)
AROUND_MODES = {"ckpt": ParallelSpec(recompute="full"), "fsdp": ParallelSpec(dp=2, zero=3)}
# torch-compile+fsdp2's two terms adopted in session 48 (adopt48) by compck2's rule RF, fixed before its run
# (calibration/h200x2-compck2-2026-11-30: RF ADOPT, the free-phase column 4.8% mean |error| over six held-out processes,
# the shipped model 18.3%, whole_model_graph alone 11.0%): the backward graph without down_proj's GEMM and the loss
# Inductor's (llm/compiled.py), the step's fixed host seconds beside the backward's backlog (work._beside_backlog).
# Set after the host cost per compiled block is priced, as the registered column priced them (torch_framework_as's
# wrap); the runner's FSDP2 whole-model compile only: kempnerforge-fsdp2-compile and fms-fsdp-compile keep them off.
ADOPTED_FSDP2 = {"whole_model_graph": True, "fsdp_free_phases": True}


def compiled_framework(par: ParallelSpec, hosts: dict[str, tuple[float, float, int]], eager_fw: EagerFramework) -> FrameworkSpec:
    """TORCH_COMPILE on one GPU (a checkpoint runs around each compiled block: llm-step --compile --ac-mode full) or
    under FSDP2 (torch-compile+fsdp2: FSDP2's storage and collectives as torch_framework's fsdp2, the whole model
    compiled over checkpoint-wrapped blocks, each block its own graph between FSDP2's hooks, the checkpoint in it:
    ckpt_in_graph; llm-step --compile-scope model; llm/compiled.py), recompute none or full (check_compiled_parallel).
    Host cost (session 46): the compile mode's fit per kernel and per step, plus what runs eagerly around each compiled
    block, in host seconds per block from the eager fits at the eager block's kernel count (per_block_host_s):
    torch.utils.checkpoint's (ckpt over single) where recompute is full and the checkpoint is eager, FSDP2's hooks (fsdp
    over single) where zero 3; spread over the compiled block's kernels. Without a compile fit: TORCH_COMPILE's. Under
    FSDP2 with ADOPTED_FSDP2's two terms on (session 48 adopt48, compck2's rule RF)."""
    fsdp = par.dp > 1 and par.zero == 3
    compiled_layer.check_compiled_parallel(par, fsdp, torch_fsdp2=True)
    fw = TORCH_COMPILE
    if fsdp:
        fw = replace(fw, name="torch-compile+fsdp2", param_bytes=2.0, state_bytes=10.0, weight_copy_bytes=0.0,
                     comm_interference=True, bf16_param_block=True, ckpt_in_graph=True)
    got = hosts.get("compile")
    if got:
        block_s, step_s = 0.0, got[1]
        extras = (("ckpt", par.recompute == "full" and not fw.ckpt_in_graph), ("fsdp", fsdp))
        for mode, on in extras:
            if on and mode in hosts and "single" in hosts:
                block_s += per_block_host_s(hosts, mode, eager_fw)
                step_s += max(0.0, hosts[mode][1] - hosts["single"][1])
        n_compiled = compiled_kernels_per_block(par, fw)
        hook = per_block_host_s(hosts, "fsdp", eager_fw) / n_compiled if fsdp and {"fsdp", "single"} <= hosts.keys() else 0.0
        fw = replace(fw, host_kernel_s=got[0] + block_s / n_compiled, host_step_s=step_s, host_hook_kernel_s=hook)
    # adopted after the host cost: its kernels counted with down_proj's recompute kernel, as compck2's registered
    # column priced them (tests/test_fsdp_compile.py pins the order)
    return replace(fw, **(ADOPTED_FSDP2 if fsdp else {}))


def host_probe_layer() -> tuple[TransformerSpec, BatchSpec]:
    """A dense Llama layer's shape for counting kernels per block (the counts do not depend on its widths)."""
    return TransformerSpec(2, 128, 352, 4, 2, 512, 128), BatchSpec(1, 1)


def per_block_host_s(hosts: dict[str, tuple[float, float, int]], mode: str, eager_fw: EagerFramework) -> float:
    """Host seconds per block that an eager `mode` (ckpt, fsdp) adds over single: (c_mode - c_single) x the eager block's
    kernels in that mode (host.layer_kernels with eager_fw's framework: the count fit_modes fitted c with); 0 where
    negative."""
    tiny, batch = host_probe_layer()
    par = AROUND_MODES[mode]
    n = host.layer_kernels(tiny, par, batch, eager_fw(par))
    return max(0.0, hosts[mode][0] - hosts["single"][0]) * n


def compiled_kernels_per_block(par: ParallelSpec, fw: FrameworkSpec) -> int:
    """Kernels one compiled block issues (forward, backward, recomputation and casts: host.layer_kernels)."""
    tiny, batch = host_probe_layer()
    return host.layer_kernels(tiny, replace(par, dp=1, zero=0), batch, replace(fw, name="torch-compile"))
