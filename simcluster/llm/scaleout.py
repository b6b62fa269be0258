"""Scale-out loss from stragglers: a step waits for its slowest GPU.

Every GPU of a data-parallel job meets the others at least once a step (the gradient reduction; ZeRO's parameter
gathers; a pipeline's sends), so the step's compute runs at the pace of the slowest of the N GPUs. With GPU speeds
spread around their mean with a coefficient of variation s (manufacturing and power-management variability of one
SKU, the OS and clock jitter of a step), the expected slowest of N is the mean plus s times the expected maximum of N
standard normal draws, m(N) = integral of x N phi(x) Phi(x)^(N-1) dx (m(1) = 0):

    T_stragglers = s m(N) T_compute            (added to the step as its own term, `stragglers`)

m grows like sqrt(2 ln N): 0.56 at 2 GPUs, 1.42 at 8, 2.59 at 128, 3.44 at 2,048, 3.97 at 16,384, so the per-GPU
throughput a job loses per doubling shrinks slowly with N. `s` is fitted on the per-GPU throughput ratios of one
published weak-scaling series and checked on the others (validation/scaleout_fit.py, docs/models/llm.md, "Scale-out
losses"); a scenario sets its own with `machine.gpu.speed_spread`.
"""

from __future__ import annotations

import functools

SPEED_SPREAD = 0.0209     # s: fitted (validation/scaleout_fit.py) on llm-dgxc-benchmarking-v24.11.1-llama31-h100's ratios
FITTED_ON = ("llm-dgxc-benchmarking-v24.11.1-llama31-h100",)   # its rows' scale term is in sample


@functools.lru_cache(maxsize=4096)
def expected_max_normal(n: int) -> float:
    """E[max of n standard normals] = integral of x n phi(x) Phi(x)^(n-1) dx, on a fine grid (1e-6 of the exact value
    up to 10^6 GPUs); 0 for n <= 1."""
    if n <= 1:
        return 0.0
    import numpy as np
    from scipy.special import log_ndtr  # log Phi (what scipy.stats.norm.logcdf calls; scipy.stats takes seconds to import)

    x = np.linspace(-8.0, 8.0, 16001)
    density = n * (np.exp(-x**2 / 2.0) / np.sqrt(2 * np.pi)) * np.exp((n - 1) * log_ndtr(x))
    return float(np.trapezoid(x * density, x))


def straggler_s(compute_s: float, gpus: int, spread: float = SPEED_SPREAD) -> float:
    """The time a step's compute loses waiting for the slowest of `gpus` GPUs."""
    return spread * expected_max_normal(int(gpus)) * compute_s
