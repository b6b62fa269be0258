"""Whether an eager step is host-bound, decided from the model's own prediction, never from a measurement (issue 44;
docs/models/trust.md, the `+host-bound` regimes).

The step model already prices the host (llm/host.py): an eager framework issues every kernel from the CPU at
host_kernel_s host seconds each (host_bwd_kernel_s in the backward where the op policy splits it, host_plain_kernel_s for
the plain blocks of an every-N checkpointing policy) plus host_step_s per step, and a kernel sequence of GPU times
t_1..t_n ends at max_k (k c + sum_{j >= k} t_j) (llm/work._host_bound, on every forward and backward of every stage,
inside the pipeline the DES runs). Where the host's issue time n c exceeds the GPU's busy time sum t, the step follows
the host; where the GPU's busy time dominates, only the per-step host cost and the first kernel's issue move it.

Definition (session 38; it reads no residual, but every held-out row's residual was public from earlier sessions, in
error_bands.json and the bundles, and the measurements quoted below are some of those rows' steps: not a blind
registration; studies/eager_host_bound.py checks the threshold at 0.4 and 0.6, docs/models/trust.md quotes it):

  host share   the part of the predicted step that moves with the host's speed: the same work priced with every host
               cost of the framework HOST_SLOWER (10%) larger and run through the same pipeline gives a step longer by
               d; host share = d / (HOST_SLOWER x step). 1 where the host's issue paces the whole step, about
               host_step_s / step where the GPU does; 0 where the framework prices no host (Megatron, or an eager
               framework without a host fit: the model cannot say, and says nothing).
  host-bound   host share >= HOST_BOUND_SHARE (one half): at least half of the predicted step is the host issuing
               kernels, i.e. the host's issue time, not the GPU's busy time, sets the step.

Why an axis of the error bands rather than a model term: a host-bound step is as fast as that lease's host. Measured
(calibration/h200x2-eager-host-diagnose-2026-11-29, calibration/h200x2-llm-eager-noise-2026-11-29): one FSDP2 0.8b
2048:1 step took 120.6 and 144.4 ms in two processes on one lease and 141.6 ms on another, FSDP2 at 20 layers hidden 128
127-147 ms against ~95 ms on the lease the host fit came from, while GPU-bound eager steps repeat within 0.1-0.3%
between processes. The host seconds per step do not move with hidden size (128..1792) or tokens (128..4096): the
model's form is right, its level is the lease's. With HOST_BOUND_SHARE a host 10-30% slower moves a host-bound step
by at least 5-15%; its residuals are pooled apart (trust/regime.llm_regime, host_bound) so that a GPU-bound answer
does not carry their spread and a host-bound one does.

The difference is finite (10%), not a derivative: the issue model is piecewise linear in the host costs, and a step
near the crossing counts the part of the 10% that crosses it.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from simcluster.llm import eager
from simcluster.llm.framework import FrameworkSpec
from simcluster.llm.spec import ParallelSpec
from simcluster.trust.regime import framework_family

HOST_SLOWER = 0.10         # the host costs' relative increase the share is read at (the measured spread is 10-30%)
HOST_BOUND_SHARE = 0.5     # host-bound: at least half of the predicted step moves with the host's speed
HOST_FIELDS = ("host_kernel_s", "host_step_s", "host_bwd_kernel_s", "host_plain_kernel_s", "host_plain_step_s", "host_hook_kernel_s")
# the product's default host fits: each runner mode's host runs on a 2 x H200 host, the folder the held-out eager rows are
# flagged with (heldout/eager.MODE_HOST); used for the regime flag of an answer without framework.host only (flag_framework)
DEFAULT_HOST = Path(__file__).resolve().parents[2] / "calibration" / "h200x2-llm-host-2026-11-23"


def prices_host(fw: FrameworkSpec) -> bool:
    """Whether the framework carries any host cost (an eager framework with a host fit)."""
    return any(getattr(fw, name) > 0 for name in HOST_FIELDS)


@eager.reads_torch_framework
@lru_cache(maxsize=1)
def _default_fits() -> dict:
    return eager.fit_modes(DEFAULT_HOST)


def default_folder() -> str:
    """DEFAULT_HOST relative to the repository (calibration/...), as the answer names it."""
    return DEFAULT_HOST.relative_to(DEFAULT_HOST.parents[1]).as_posix()


def flag_framework(fw: FrameworkSpec, par: ParallelSpec) -> FrameworkSpec | None:
    """For the regime's host-bound flag only: an eager-runner framework (family PyTorch eager) that prices no host
    (framework torch without `host:`) with the host costs of DEFAULT_HOST's fit of its layout's mode (eager.torch_framework),
    the fits its held-out rows are flagged with, so the answer lands in the regime its layout's rows do; its step stays
    unpriced. None where the framework prices a host already, is not the eager runner's, or the folder fits no cost."""
    if prices_host(fw) or framework_family(fw.name) != "PyTorch eager":
        return None
    fitted = eager.torch_framework(par, _default_fits(), fw.compiled)
    return replace(fw, **{name: getattr(fitted, name) for name in HOST_FIELDS}) if prices_host(fitted) else None


def slower_host(fw: FrameworkSpec, factor: float = 1.0 + HOST_SLOWER) -> FrameworkSpec:
    """The framework with every host cost (HOST_FIELDS) multiplied by `factor`."""
    return replace(fw, **{name: getattr(fw, name) * factor for name in HOST_FIELDS})


def host_share(step_s: float, slower_step_s: float) -> float:
    """The share of a step that moves with the host's speed: the step and the same step with a host HOST_SLOWER slower
    (slower_host), in seconds."""
    if step_s <= 0:
        raise ValueError(f"host_share needs a positive step, got {step_s!r} s")
    return max(0.0, (slower_step_s - step_s) / (HOST_SLOWER * step_s))


def is_host_bound(share: float | None) -> bool:
    """Host-bound by the definition above (None: the share was not computed, not host-bound)."""
    return share is not None and share >= HOST_BOUND_SHARE
