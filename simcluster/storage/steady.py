"""The steady state of a simulated DLIO run: where the warm-up ends, when the estimate has settled, and its confidence.

A run's steps are cut into blocks of B steps after a warm-up (DLIO's first step, whose load is every loader thread's
first batch at once, plus the T batches those threads finish together with it). Per block: the compute share
(AU, as DLIO counts it: compute over the block's wall time at the per-step barrier) and the throughput.

The prefetch lead (batches ready and not yet consumed when a step asks for its batch) tells the transient: while the
loaders supply S batches per step's worth of time and the steps consume D, the lead changes by S/D - 1 per step. A run
that starts with a full buffer and a drive slower than the demand spends lead / (1 - S/D) steps draining it at
near-100% AU before it reaches S/D: at S/D = 0.97 and 24 loader threads, about 800 steps (why the answer used to
depend on --steps). The estimator removes that drain exactly: over a window of steps with lead slope s (OLS, per
step, s < 0 while draining), the steady values are

    AU_steady = AU_window x (1 + s),   throughput_steady = throughput_window x (1 + s)

(a step that takes t while the loaders need t / (1 + s) per batch; s counts only below -DRAIN_MIN and -2 standard
errors). Blocks: one round of the loader threads, or whole epochs when an epoch is that short. Settled: the estimate
over the last K blocks and the one over the K blocks before them (disjoint windows) agree within AU_TOLERANCE points
and THROUGHPUT_TOLERANCE, and the last window's 95% interval (batch means, Student t over its K block estimates) is
within them too. Bounded: MAX_STEPS steps and the loader's MAX_IOS reads; a run that reaches the bound reports the
second half of its blocks, not settled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

BLOCKS = 4                     # K: blocks in a window
AU_TOLERANCE = 1.0             # AU points
THROUGHPUT_TOLERANCE = 0.02    # relative
MIN_BLOCK, MAX_BLOCK = 16, 32  # steps per block: one round of the loader threads, within these bounds
DRAIN_MIN = 0.01               # batches per step: a slower drain biases AU by less than AU_TOLERANCE points
MAX_STEPS = 2000               # steps per accelerator one steady-state run may take (also bounded by MAX_IOS)


@dataclass(frozen=True)
class Plan:
    warmup: int     # steps excluded at the start (the first load and the batches read with it)
    block: int      # steps per block
    max_steps: int  # the bound: the run stops here settled or not

    @property
    def min_steps(self) -> int:
        return self.warmup + 2 * BLOCKS * self.block


def plan(threads: int, max_steps: int, epoch_steps: int = 0) -> Plan:
    """Blocks of one round of the loader threads (MIN_BLOCK to MAX_BLOCK steps); when an epoch is that short, a whole
    number of epochs (the simulated shuffle repeats each epoch, so a block of part of one sees a biased mix of record
    sizes)."""
    block = min(MAX_BLOCK, max(MIN_BLOCK, threads))
    if 0 < epoch_steps <= MAX_BLOCK:
        block = epoch_steps * math.ceil(block / epoch_steps)
    return Plan(1 + threads, block, max_steps)


@dataclass(frozen=True)
class Estimate:
    au_percent: float
    au_ci_percent: float               # half-width of the 95% interval
    throughput_samples_per_s: float
    throughput_ci_samples_per_s: float
    lead_slope: float                  # batches per step (negative: the prefetch buffer still draining)
    first_step: int                    # the window: steps [first_step, last_step)
    last_step: int
    settled: bool


def _window(release_s, compute, lead, batch: int, ranks: int, a: int, b: int, block: int) -> Estimate:
    """The steady estimate over steps [a, b) (b - a a multiple of block)."""
    t0 = release_s[a - 1] if a > 0 else 0.0
    span = release_s[b - 1] - t0
    au = float(np.mean(compute[:, a:b].sum(axis=1))) / span * 100
    thr = ranks * batch * (b - a) / span
    x = np.arange(a, b, dtype=float)
    slope = _drain_slope(x, np.asarray(lead[a:b], dtype=float), block) if b - a >= 2 * block else 0.0  # one block: no trend
    factor = 1 + slope
    blocks = []
    for s in range(a, b, block):
        ts = release_s[s - 1] if s > 0 else 0.0
        dt = release_s[s + block - 1] - ts
        blocks.append((float(np.mean(compute[:, s:s + block].sum(axis=1))) / dt * 100, ranks * batch * block / dt))
    blocks = np.asarray(blocks) * factor
    n = len(blocks)
    q = stats.t.ppf(0.975, n - 1) / math.sqrt(n) if n > 1 else math.inf
    sd = blocks.std(axis=0, ddof=1) if n > 1 else np.array([math.inf, math.inf])
    return Estimate(min(100.0, au * factor), float(q * sd[0]), thr * factor, float(q * sd[1]), slope, a, b, False)


def _drain_slope(x: np.ndarray, y: np.ndarray, block: int) -> float:
    """The lead's OLS slope when it is a drain: below -DRAIN_MIN and negative by more than twice its standard error (the
    residuals' spread, inflated by sqrt(block) for the correlation of steps within a block); else 0. A full buffer's lead jitters as the
    threads finish their batches in clumps, and that jitter must not read as a drain."""
    if len(x) <= 2:
        return 0.0
    slope, icpt = np.polyfit(x, y, 1)
    resid = y - (slope * x + icpt)
    se = math.sqrt(float(resid @ resid) / (len(x) - 2) / float(((x - x.mean()) ** 2).sum()) * block)
    return float(slope) if slope < -max(2 * se, DRAIN_MIN) else 0.0


def settled_estimate(release_s, compute, lead, batch: int, ranks: int, p: Plan) -> Estimate | None:
    """The estimate over the last window once it agrees with the window of as many blocks before it (two disjoint
    windows: a transient still moving shows as a difference) and its 95% interval is within the tolerances (a slow ramp
    hides in a wide interval), else None (call at a block's end). Windows of BLOCKS blocks first; where the blocks
    scatter more than BLOCKS of them can average within the tolerance (many ranks at one barrier, a saturated drive:
    3 AU points from block to block), windows of half the blocks after the warm-up each (batch means over more blocks:
    the interval narrows as 1 / sqrt(blocks))."""
    n = len(release_s)
    if n < p.min_steps or (n - p.warmup) % p.block:
        return None
    for blocks in dict.fromkeys((BLOCKS, max(BLOCKS, (n - p.warmup) // p.block // 2))):
        span = blocks * p.block
        last = _window(release_s, compute, lead, batch, ranks, n - span, n, p.block)
        before = _window(release_s, compute, lead, batch, ranks, n - 2 * span, n - span, p.block)
        thr = (last.throughput_samples_per_s, before.throughput_samples_per_s)
        if abs(last.au_percent - before.au_percent) <= AU_TOLERANCE and abs(thr[0] - thr[1]) <= THROUGHPUT_TOLERANCE * max(thr) \
                and last.au_ci_percent <= AU_TOLERANCE and last.throughput_ci_samples_per_s <= THROUGHPUT_TOLERANCE * thr[0]:
            return _settle(last)
    return None


def decided_estimate(release_s, compute, lead, batch: int, ranks: int, p: Plan, threshold: float) -> Estimate | None:
    """For a search that only needs to know on which side of an AU threshold a run lies: the last window of BLOCKS blocks
    when it and the window before it lie on the same side of `threshold` by more than the last window's 95% interval
    (and by more than AU_TOLERANCE), else None. Not settled: its numbers are a decision, not the answer."""
    n = len(release_s)
    if n < p.min_steps or (n - p.warmup) % p.block:
        return None
    span = BLOCKS * p.block
    last = _window(release_s, compute, lead, batch, ranks, n - span, n, p.block)
    before = _window(release_s, compute, lead, batch, ranks, n - 2 * span, n - span, p.block)
    margin = max(last.au_ci_percent, AU_TOLERANCE)
    above = last.au_percent - margin > threshold and before.au_percent - margin > threshold
    below = last.au_percent + margin < threshold and before.au_percent + margin < threshold
    return last if above or below else None


def _settle(e: Estimate) -> Estimate:
    return Estimate(e.au_percent, e.au_ci_percent, e.throughput_samples_per_s, e.throughput_ci_samples_per_s,
                    e.lead_slope, e.first_step, e.last_step, True)


def fixed_estimate(release_s, compute, lead, batch: int, ranks: int, p: Plan) -> Estimate:
    """A fixed-length run: the estimate over the second half of its post-warm-up blocks (at least BLOCKS blocks),
    settled if the run's last windows agree as settled_estimate asks."""
    n = len(release_s)
    usable = (n - p.warmup) // p.block
    if usable < 1:   # shorter than the warm-up and one block: DLIO's window (steps 1..n), one block, not settled
        return _window(release_s, compute, lead, batch, ranks, 1, n, n - 1)
    k = max(min(BLOCKS, usable), usable // 2)
    end = p.warmup + usable * p.block
    e = _window(release_s, compute, lead, batch, ranks, end - k * p.block, end, p.block)
    check = settled_estimate(release_s[:end], compute[:, :end], lead[:end], batch, ranks, p)
    return _settle(e) if check is not None else e
