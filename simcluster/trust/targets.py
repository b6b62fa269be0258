"""Each error-band family's accuracy target, and whether a regime's held-out rows meet it (session 54, rule54; registered
in docs/models/trust-findings.md, "Session 54: rule54", before its first print).

A regime with enough rows for its own band (trust/table.MIN_ROWS from MIN_SOURCES) reads **validated** only where its
held-out rows' mean |error| is within its family's target; otherwise **extrapolated**, its own band kept and the reason
said (trust/band.trust_of). The mean |error| is the band table's own: the mean over the regime's rows of |1/rho - 1|
(|predicted time / measured time - 1|, each row once; trust/table.RegimeRows.mean_abs_error), one convention for every
family, since the table holds rho only (a published llm rate row's own error is rho - 1: the MoE regime reads 19.6% here
against the families' 31.2%). Every row of the table is already predicted by a model not fitted on it, so leaving a source
out changes a regime's band, not a row's error (trust/build.leave_one_source_out applies the rule to the remaining rows).

The targets, one per family, each where a model page states it (a fraction of the measured quantity): TARGETS.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    fraction: float        # the target mean |error|
    where: str             # where it is stated


TARGETS = {
    "llm": Target(0.10, "issue 44's published target (validate --published llm; docs/models/llm.md)"),
    "llm eager": Target(0.08, "issue 44's lab step target (trust/noise.FloorVerdict.target_pct; docs/models/trust.md)"),
    "llm local spec": Target(0.08, "issue 44's lab step target, the local-spec MoE sets being lab LLM steps "
                                   "(docs/models/llm.md, 'The lab target (8% step, 10% memory)')"),
    "collective across nodes": Target(0.10, "issue 41: <= 10% at >= 64 MiB, each system held out (docs/models/fabric.md)"),
    "collective one node": Target(0.05, "docs/models/collectives.md: <= 5% from 1 MiB, <= 10% 1 KiB..1 MiB"),
    "ddp": Target(0.05, "the DDP step's <= 5% target (docs/models/training-findings.md)"),
    "storage": Target(0.10, "issue 42: the throughput within 10% (docs/models/storage.md, 'The count target')"),
    "transport": Target(0.10, "the host stack's 10% (docs/models/nic-and-cpu.md; fit/host_stack_readout.TARGET)"),
}
SMALL_ONE_NODE = Target(0.10, "docs/models/collectives.md: <= 10% from 1 KiB to 1 MiB")   # a one-node regime below 1 MiB


def target_of(family: str, regime: str) -> Target | None:
    """The family's target for a regime key (a one-node collective regime below 1 MiB: SMALL_ONE_NODE, by its key's
    size field '<1MiB'); None for a family with none (then the rule asks nothing)."""
    if family == "collective one node" and " | <1MiB | " in regime:
        return SMALL_ONE_NODE
    return TARGETS.get(family)


def target_miss(family: str, regime: str, mean_abs_error: float) -> str:
    """Why a regime's rows miss its family's target ('held-out mean |error| 19.6% over the llm family's 10% target'),
    '' where they meet it or the family has none."""
    target = target_of(family, regime)
    if target is None or mean_abs_error <= target.fraction:
        return ""
    return (f"held-out mean |error| {mean_abs_error:.1%} over the {family} family's {target.fraction:.0%} target")
