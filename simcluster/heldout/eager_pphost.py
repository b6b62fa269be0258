"""Session 39's registered pphost set (calibration/h200x2-eager-pphost-2026-11-29, validation/eager_pp_host.py) as
held-out eager rows: 2-stage 1F1B / GPipe pipelines and single / DDP / FSDP2 steps on 2 x H200, each (preset, tokens)
new to calibration/ when it ran, each row run in 2-3 separate processes.

Its registered.yaml (written at 152d3112, before the runs) holds two predictions per row: `today`, a candidate (hosts
running ahead of their GPUs) that failed the set's rule A2 and is not in the product, and `old`, main a3c27932's
arithmetic with the card's attention curve: the product's model then (the candidate refused); since the cuDNN attention
form the product differs from it by at most 0.8% on these rows (single-0.8b +0.78%, fsdp-2b +0.24%; tests/
test_eager_pphost_set.py checks the product refuses the candidate and stays that close). A row's residual
is against `old` (the model the product ships, registered before the run; the same as `today` on every non-pipeline
row), its host-bound flag `old`'s registered one (host_flag "registered"). Measured: the set's own rule, the mean over a
row's processes of rank 0's median step (the processes repeat one configuration on one lease: one row, not 2-3). The
set is one source.

Session 44's registered PP+host-bound set (calibration/h200x2-pphost-2026-11-30, validation/pphost.py: three host-bound
shapes x 1F1B / GPipe x 2 processes) is read here too, `s44_rows`: each row against its registered `product` step (the
model the product shipped at registration: the single host term of the 2026-11-23 lease alone, 21.0 us per kernel);
its registered `candidate`, that term pooled over the 2 x H200 leases (24.7 us), is the product's since e005011e
(hostsingle's, for single-GPU reasons, committed 7 s after this set's run started and before its read: these
processes are held out for it, and its registered rule C read it NOT BETTER, 9.5%), so a row's today's step is the
candidate's; its host-bound flag the registered share's
(llm/host_bound.is_host_bound: the registration records the share, not the flag), measured as its read-out measures (the
mean over the processes that ran the registered configuration, eager_today.read_process); no row until the set has run.
One source. Session 44's coupling set (calibration/h200x2-ppcouple-2026-11-30, validation/ppcouple.py: two host-bound
shapes x 1F1B / GPipe x 2 processes, its `product` the stage hosts in series with the pooled single host term, as shipped; its `candidate`, the hosts
free, stayed off at its read) is read the same way, one source of its own
(its probes are the read-out's only); so is session 45's timeline set (calibration/h200x2-ppblock-2026-11-30,
validation/ppblock.py: two host-bound shapes x 1F1B / GPipe x 2 processes with the hosts' timelines recorded, its
`product` as ppcouple's), one source of its own; so is session 45's ppfree set (calibration/h200x2-ppfree-2026-11-30,
validation/ppfree.py: two new host-bound shapes x 1F1B / GPipe x 2 processes, its `product` as ppcouple's; its `free` and
`term` reported by its read-out only); so is session 46's ppboth set (calibration/h200x2-ppboth-2026-11-30,
validation/ppboth.py: one new host-bound shape x 1F1B / GPipe x 5 processes, no timeline recorder, its `product` as
ppcouple's; its `free` and `term` reported by its read-out only)."""

from __future__ import annotations

import statistics
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.heldout.eager import ROOT
from simcluster.heldout.eager_regimes import step_set_rows
from simcluster.heldout.eager_runs import process_runs

PPHOST_BUNDLE = "calibration/h200x2-eager-pphost-2026-11-29"
SHIPPED = "old"   # the registered prediction the product ships (the candidate `today` was taken back out)
CANDIDATE = "today"   # the registered candidate, not adopted (validation/eager_pp_host.py prints it as "candidate")
PP_HOST_S44_BUNDLE = "calibration/h200x2-pphost-2026-11-30"   # session 44's set (s44_rows)
PP_COUPLE_BUNDLE = "calibration/h200x2-ppcouple-2026-11-30"   # session 44's coupling set (validation/ppcouple.py), read by
                                                              # s44_rows too: the same rows' keys and `product`
PP_BLOCK_BUNDLE = "calibration/h200x2-ppblock-2026-11-30"   # session 45's timeline set (validation/ppblock.py): the same
                                                             # rows' keys and `product`, read by s44_rows too
PP_FREE_BUNDLE = "calibration/h200x2-ppfree-2026-11-30"   # session 45's ppfree set (validation/ppfree.py): the same
                                                           # rows' keys and `product`, read by s44_rows too
PP_BOTH_BUNDLE = "calibration/h200x2-ppboth-2026-11-30"   # session 46's ppboth set (validation/ppboth.py): the same
                                                           # rows' keys and `product`, read by s44_rows too
S44_SHIPPED = "product"   # the registered prediction of the model the product shipped at registration (pphost: 21.0 us;
                          # ppcouple: the pooled 24.7 us, the stage hosts in series)


def process_medians(bundle: Path, reg_row: dict) -> list[float]:
    """Rank 0's median step (ms) of each process of a row that ran (eager_runs.process_runs); fewer than two, or a
    run that holds no timed shape, is a SimclusterError naming the file or the row."""
    out = [p["step_ms"] for p in process_runs(bundle, reg_row, memory=False)]
    if len(out) < 2:
        missing = next((f for k in range(1, reg_row["processes"] + 1)
                        if not (f := bundle / "runs" / f"{reg_row['name']}-r{k}.json").is_file()), bundle / "runs")
        raise SimclusterError(f"{missing}: {reg_row['name']} has {len(out)} process(es) of {reg_row['processes']} "
                              "(two needed for a spread)")
    return out


def s44_rows(bundle: Path = ROOT / PP_HOST_S44_BUNDLE) -> list[dict]:
    """Session 44's set's rows that ran (module docstring), in heldout/eager_regimes.held_out_rows' keys; [] before
    the run."""
    return shared_flag_rows(bundle, S44_SHIPPED)


def shared_flag_rows(bundle: Path, shipped: str, describe=None, parts: tuple[str, ...] | None = None) -> list[dict]:
    """A registered set's rows that ran against each row's registered `shipped` step, its host-bound flag that
    prediction's registered share's (llm/host_bound.is_host_bound: the registration records the share, not the flag),
    each row the mean of the processes that ran its registered configuration (eager_today.read_process); `describe`:
    eager_regimes.step_set_rows'; `parts`: only the rows whose `part` is one of them (session 51's lab1x51, whose compiled
    rows heldout/eager_compilefsdp reads). [] before the run; a row without the share: one SimclusterError line naming
    rows[i] (s44_rows, heldout/eager_hostsingle)."""
    from simcluster.heldout.eager_today import read_process
    from simcluster.llm.host_bound import is_host_bound
    from simcluster.strict import load_yaml

    if not (bundle / "runs").is_dir():
        return []   # registered, not run yet
    # enumerated before the part filter, so an error names the row's index in registered.yaml (cold review A51 item 11)
    numbered = [(i, r) for i, r in enumerate(load_yaml(bundle / "registered.yaml")["rows"])
                if parts is None or r.get("part") in parts]
    for i, reg in numbered:
        try:
            pred = reg["predicted"][shipped]
            pred["host_bound"] = is_host_bound(float(pred["host_share"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise SimclusterError(f"{bundle / 'registered.yaml'}: rows[{i}]: no predicted.{shipped}.host_share "
                                  f"({type(exc).__name__}: {exc})") from None
    regs = [r for _, r in numbered]

    def measure(reg: dict) -> float | None:
        steps = [p["step_ms"] for p in process_runs(bundle, reg, memory=False, dropped=[], read=read_process)]
        return statistics.mean(steps) if steps else None

    return step_set_rows(bundle, shipped, measure, regs, describe)


def held_out_rows(bundle: Path = ROOT / PPHOST_BUNDLE) -> list[dict]:
    """Every registered row of the set against its registered `old` step (heldout/eager_regimes.held_out_rows' keys)."""
    return step_set_rows(bundle, SHIPPED, lambda reg: statistics.mean(process_medians(bundle, reg)))
