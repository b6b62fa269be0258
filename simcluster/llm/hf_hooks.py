"""The Hugging Face trainers' hook host time (session 55, hfhook55; issue 44). In the product through a scenario's
`framework: {name: hf-fsdp1 | hf-deepspeed | hf-deepspeed-overlap, host: FOLDER}` (llm/job.py: with_hooks, the folder's
`single` fit), as framework torch prices its host only where `host:` names a folder; without it the HF frameworks price
no host, as before. The module switch (enable / switched_on / priced) stays OFF: it is the registered read-outs' what-if
(validation/hfhook55.py), nothing in the product calls enable() (docs/models/llm.md "Hugging Face trainers: the hooks'
host time"; llm-findings "Session 55: hfhook55").

The specs of `hf-fsdp1`, `hf-deepspeed` and `hf-deepspeed-overlap` price no host (FrameworkSpec.host_kernel_s 0: P ==
P_gpu). with_hooks() (or priced(), switched on) gives such a framework (DeepSpeed's at zero 3 only: measured_at) the
host issue of an eager step (llm/host.py, llm/work._host_bound), per decoder layer
    issue_layer = k_amp c + h          spread over the framework's own k_hf kernels: host_kernel_s = (k_amp c + h) / k_hf
and the fixed host seconds a step a (host_step_s): (c, a) the `torch-amp` one-GPU `single` host fit passed in `hosts` (the
fit the eager price uses: heldout/eager_registered.FLAG_HOSTS in the registered read-outs), k_amp torch-amp's kernels a
layer (its autocast weight casts included) and k_hf the HF framework's (llm/host.layer_kernels), h the wrapper's hook host
seconds a layer a step. Why k_amp c and not k_hf c: h was measured as the issue of the wrapped model less the same model's
bare under autocast (calibration/h200x1-hfdev55-2026-12-01), so the layer's issue is the bare eager one (torch-amp's
mechanism, whose casts FSDP1's bf16 flat parameters and DeepSpeed's bf16 module replace) plus h. The GPU work stays
the framework's; the slower of host and GPU sets the pace (host.issue_bound_s), so at GPU-bound shapes the hooks hide.

Constants (DEVELOPMENT: fitted on hfdev55's 12 wrapper rows, which are development rows for this term): h_f = 3,166 us
(FSDP1, the median over hfdev55's 6 points of (issue_fsdp1 - issue_eager) / layers, RULE HOOK; range 2,314..3,317 us),
h_z = 13,159 us (DeepSpeed ZeRO-3, RULE HOOK-Z3; range 10,905..14,134 us; overlap_comm changes no hook: the same h).
Valid range: the device VM's host (one H200 lease's host; the fit (c, a) and h from the same kind of lease), one rank
(FSDP1 ran NO_SHARD); at dp > 1 FULL_SHARD's all-gathers / reduce-scatters and their re-gathers add host work not in h
(a lower bound there), DeepSpeed's collectives likewise. The head's and embedding's kernels take the same per-kernel cost
(a small over-count: ~3 of ~80 kernels a layer). A held-out check: calibration/h200x1-hfhook55-2026-12-01
(validation/hfhook55.py, RULE TERM HOLDS: on 14.7% mean |error|, off 82.4%); its repeat on a second lease
calibration/h200x1-hfhook55r-2026-12-01 (TERM 11.1%, TERM-FSDP1 16.6%: a row's step changes ~15% between leases). h is
one lease's constant: it does not follow the host folder's speed (c and a do)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from simcluster.llm import host
from simcluster.llm.framework import FRAMEWORKS, FrameworkSpec
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

HOOK_FSDP1_S = 3166e-6    # calibration/h200x1-hfdev55-2026-12-01 RULE HOOK median (readout.txt): development
HOOK_ZERO3_S = 13159e-6   # the same set's RULE HOOK-Z3 median: development
HOOK_S = {"hf-fsdp1": HOOK_FSDP1_S, "hf-deepspeed": HOOK_ZERO3_S, "hf-deepspeed-overlap": HOOK_ZERO3_S}
HOST_MODE = "single"      # the torch-amp one-GPU host fit it reads (eager.fit_modes' mode)

_ON = False   # the product's state; enable() sets it


def enable() -> None:
    """Turn the term on (a what-if or the registered read-out; never the product while OFF)."""
    global _ON
    _ON = True


def disable() -> None:
    global _ON
    _ON = False


def is_on() -> bool:
    return _ON


@contextmanager
def switched_on() -> Iterator[None]:
    """The term on inside the block, its state before back on leaving it, an error included."""
    global _ON
    before = _ON
    _ON = True
    try:
        yield
    finally:
        _ON = before


def applies(fw: FrameworkSpec) -> bool:
    """Whether priced() changes this framework: on, and one of HOOK_S's Hugging Face frameworks."""
    return _ON and fw.name in HOOK_S


def layer_issue_s(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec, c: float) -> float:
    """k_amp c + h: host seconds to issue one decoder layer's forward and backward under the term (module docstring)."""
    amp = FRAMEWORKS["torch-amp"]
    return host.layer_kernels(model, ParallelSpec(), batch, amp) * c + HOOK_S[fw.name]


def measured_at(name: str, zero: int) -> bool:
    """Whether h was measured for this framework at this ZeRO stage: FSDP1's unit hooks run at every sharding strategy
    (hfdev55 measured NO_SHARD), DeepSpeed's per-module fetch / release hooks at ZeRO-3 only (ZeRO-1/2 have gradient
    hooks into buckets instead: unmeasured)."""
    return name in HOOK_S and (zero >= 3 or not name.startswith("hf-deepspeed"))


def priced(fw: FrameworkSpec, model: TransformerSpec, par: ParallelSpec, batch: BatchSpec,
           hosts: dict[str, tuple[float, float, int]]) -> FrameworkSpec:
    """fw with the term's host costs where applies(fw) (the switch on), else fw itself. `hosts`: eager.fit_modes' fits."""
    return with_hooks(fw, model, par, batch, hosts) if applies(fw) else fw


def with_hooks(fw: FrameworkSpec, model: TransformerSpec, par: ParallelSpec, batch: BatchSpec,
               hosts: dict[str, tuple[float, float, int]]) -> FrameworkSpec:
    """fw, one of HOOK_S's, with the term's host costs, whatever the switch (a scenario's framework.host: llm/job.py).
    `hosts`: eager.fit_modes' fits, with HOST_MODE's."""
    if not measured_at(fw.name, par.zero):
        raise ValueError(f"the Hugging Face hook term prices {sorted(HOOK_S)} (DeepSpeed's at zero 3), not {fw.name} at "
                         f"zero {par.zero}")
    if HOST_MODE not in hosts:
        raise ValueError(f"the Hugging Face hook term needs the torch-amp '{HOST_MODE}' host fit; the fits have {sorted(hosts)}")
    c, a = hosts[HOST_MODE][0], hosts[HOST_MODE][1]
    return replace(fw, host_kernel_s=layer_issue_s(model, par, batch, fw, c) / host.layer_kernels(model, par, batch, fw), host_step_s=a)
