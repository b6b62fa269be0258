"""The power-limited SM clock of a GPU card (`clock:` block of a `kind: gpu` card; docs/models/gpu.md, Clock).

The board's power controller holds its power at or below the cap; the model takes the power averaged over a step
as what it holds (the controller's own window is not documented; NVML's power.draw reading is a 1 s average on
Ampere, except GA100, and newer). Over a mix of kernels whose shares of the GPU's time are d_c (compute-bound: GEMM,
attention), d_m (memory-bound) and 1 - d_c - d_m (idle: host gaps, bubbles, exposed communication), at SM clock f:

    P(f) = idle + d_c * compute * (f / f_max)^exponent + d_m * memory
    f    = max(floor, min(f_max, f_max * ((cap - idle - d_m * memory) / (d_c * compute))^(1 / exponent)))

(memory-bound power does not depend on the SM clock: copies move bytes at the same rate from 1395 to 1980 MHz).
A card needs compute > 0 and idle + memory < cap (copies alone within the cap, so the root's argument stays
positive); floor = FLOOR x f_max is the model's lowest clock. A compute-bound kernel's time is only partly
clock-bound: t(f) = t(f_max) * (share * f_max / f + 1 - share) (`share` 0.385 on H100, 0.572 on H200: a GEMM at
1400 MHz runs ~16% / ~24% slower than at 1980, not 41%), so a card whose GEMM and attention curves were fitted at
`reference` runs them at f scaled by
    scale(f) = (share * f_max / f + 1 - share) / (share * f_max / reference + 1 - share).
Memory-bound times and launch floors do not scale. SI units inside (Hz, W).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simcluster.card_params import CLOCK_EXPONENTS as EXPONENTS
from simcluster.errors import ModelCardError

FLOOR = 0.05                  # the model's lowest clock, a fraction of max_clock
REFERENCE_TOLERANCE_HZ = 1e6  # a card's reference_clock and the clock of its reference_duty agree within this


@dataclass(frozen=True)
class ClockParams:
    max_clock_Hz: float          # the SM clock the controller never exceeds (boost)
    reference_clock_Hz: float    # the clock the card's GEMM and attention curves were fitted at
    power_cap_W: float           # the time-averaged board power the controller holds
    idle_W: float                # board power with no kernel running (clocks up)
    compute_W: float             # added power of compute-bound kernels at f_max, per unit of duty
    memory_W: float              # added power of memory-bound kernels (clock-independent), per unit of duty
    exponent: float = 1.0        # compute power ~ (f / f_max)^exponent
    clock_share: float = 1.0     # the part of a compute-bound kernel's time at f_max that scales with 1 / f
    reference_duty: tuple[float, float] = (1.0, 0.0)   # (compute, memory) duty of the condition the curves were fitted in
    source: str = ""

    def __post_init__(self):
        """ModelCardError 'KEY: why' naming the card key of the first bad value (the card reader adds the file)."""
        f_max, ref, (d_c, d_m) = self.max_clock_Hz, self.reference_clock_Hz, self.reference_duty
        checks = (("max_clock", f_max > 0, "must be above 0"),
                  ("reference_clock", 0 < ref <= f_max, f"{ref / 1e6:g} MHz must be above 0 and at most max_clock ({f_max / 1e6:g} MHz)"),
                  ("idle_power", 0 <= self.idle_W < self.power_cap_W,
                   f"{self.idle_W:g} W must be >= 0 and below power_cap ({self.power_cap_W:g} W)"),
                  ("compute_power", self.compute_W > 0, f"{self.compute_W:g} W must be above 0 (compute-bound kernels draw power)"),
                  ("memory_power", 0 <= self.memory_W < self.power_cap_W - self.idle_W,
                   f"{self.memory_W:g} W must be >= 0 and idle_power + memory_power ({self.idle_W + self.memory_W:g} W) below "
                   f"power_cap ({self.power_cap_W:g} W): copies alone over the cap leave no clock that meets it"),
                  ("exponent", EXPONENTS[0] <= self.exponent <= EXPONENTS[1], f"{self.exponent:g} must be in [{EXPONENTS[0]:g}, {EXPONENTS[1]:g}]"),
                  ("clock_share", 0 <= self.clock_share <= 1, f"{self.clock_share:g} must be in [0, 1]"),
                  ("reference_duty", 0 <= d_c <= 1 and 0 <= d_m <= 1 and d_c + d_m <= 1 + 1e-9,
                   f"compute {d_c:g} + memory {d_m:g}: each in [0, 1], their sum at most 1"))
        for key, ok, why in checks:
            if not ok:
                raise ModelCardError(f"{key}: {why}")

    @property
    def floor_Hz(self) -> float:
        return FLOOR * self.max_clock_Hz

    def clock_Hz(self, compute_duty: float, memory_duty: float) -> float:
        """The SM clock where the mix's average power meets the cap, in [floor, max_clock]; continuous in the duties
        (idle + memory < cap keeps `room` positive)."""
        d_c, d_m = min(max(compute_duty, 0.0), 1.0), min(max(memory_duty, 0.0), 1.0)
        room = self.power_cap_W - self.idle_W - d_m * self.memory_W
        if d_c * self.compute_W <= room:
            return self.max_clock_Hz
        return max(self.floor_Hz, self.max_clock_Hz * (room / (d_c * self.compute_W)) ** (1.0 / self.exponent))

    def power_W(self, compute_duty: float, memory_duty: float, clock_Hz: float) -> float:
        return self.idle_W + compute_duty * self.compute_W * (clock_Hz / self.max_clock_Hz) ** self.exponent + memory_duty * self.memory_W

    def time_scale(self, clock_Hz: float, reference_Hz: float | None = None) -> float:
        """Compute-bound time at clock_Hz over its time at reference_Hz (the card's reference by default)."""
        def rel(f):
            return self.clock_share * self.max_clock_Hz / f + 1.0 - self.clock_share
        return rel(clock_Hz) / rel(reference_Hz or self.reference_clock_Hz)


def at_clock(gpu, clock_Hz: float):
    """The GpuParams `gpu` with its GEMM and attention curves moved from the card's reference clock to clock_Hz
    (efficiencies divided by time_scale, capped at 1); memory-bound curves and launch floors unchanged."""
    c = gpu.clock
    k = 1.0 / c.time_scale(clock_Hz)
    return replace(gpu, gemm_efficiency={d: min(1.0, e * k) for d, e in gpu.gemm_efficiency.items()},
                   attn_efficiency_fwd={d: min(1.0, e * k) for d, e in gpu.attn_efficiency_fwd.items()},
                   attn_efficiency_bwd={d: min(1.0, e * k) for d, e in gpu.attn_efficiency_bwd.items()},
                   clock=replace(c, reference_clock_Hz=clock_Hz))


def clock_yaml(c: ClockParams) -> dict:
    return {"max_clock": f"{c.max_clock_Hz / 1e6:.0f}MHz", "reference_clock": f"{c.reference_clock_Hz / 1e6:.1f}MHz",
            "reference_duty": {"compute": round(c.reference_duty[0], 4), "memory": round(c.reference_duty[1], 4)},
            "power_cap": f"{c.power_cap_W:.1f}W", "idle_power": f"{c.idle_W:.1f}W", "compute_power": f"{c.compute_W:.1f}W",
            "memory_power": f"{c.memory_W:.1f}W", "exponent": round(c.exponent, 4), "clock_share": round(c.clock_share, 4),
            "source": c.source}


def clock_params(c) -> ClockParams:
    """A card's `params.clock` block, declared as card_params.CLOCK (keys, units, ranges; in SI once read), built into
    the model; ModelCardError 'KEY: why' where the keys break the model's rules (ClockParams) or the reference clock is
    not the clock of the reference duty (card_document.declared_params gives the file and line)."""
    built = ClockParams(c.max_clock, c.reference_clock, c.power_cap, c.idle_power, c.compute_power, c.memory_power,
                        float(c.exponent), float(c.clock_share), (float(c.reference_duty.compute), float(c.reference_duty.memory)),
                        c.source)
    at_duty = built.clock_Hz(*built.reference_duty)
    if abs(at_duty - built.reference_clock_Hz) > REFERENCE_TOLERANCE_HZ:
        raise ModelCardError(f"reference_clock: {built.reference_clock_Hz / 1e6:.1f} MHz, but the clock at reference_duty "
                             f"{built.reference_duty} is {at_duty / 1e6:.1f} MHz (they must agree within 1 MHz)",
                             hint="refit: python -m simcluster.fit.gpu_clock TRACE --card CARD --reference-duty C,M -o OUT")
    return built
