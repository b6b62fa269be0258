"""MLPerf Storage's headline on the DLIO loop (storage/loader.py): the most accelerators whose AU meets the workload's
threshold, found by doubling then bisection over loader.simulate runs. A candidate's run stops as soon as its AU is
decidedly above or below the threshold (steady.py's early decision); the answer is then run until settled. The search
stops at its limit (the answer "at least"), where the next count exceeds one run's bound (loader.SimulationBound), and
before a run once MAX_SEARCH_IOS reads are spent over its runs."""

from __future__ import annotations

from dataclasses import replace

from simcluster.errors import SimclusterError
from simcluster.storage import loader
from simcluster.storage.dlio_workload import DlioWorkload
from simcluster.storage.loader import MAX_IOS, LoaderConfig, RunResult, SimulationBound
from simcluster.storage.nvme import NvmeParams

MAX_SEARCH_IOS = 8 * MAX_IOS                      # reads one max-accelerators search may simulate over its runs
DEFAULT_CONFIG = LoaderConfig()                   # frozen: one shared default


def max_accelerators(workload: DlioWorkload, nvme: NvmeParams, drives: int = 1, config: LoaderConfig = DEFAULT_CONFIG,
                     seed: int = 0, limit: int = 4096) -> tuple[RunResult | None, list[RunResult]]:
    """The most accelerators whose AU meets the threshold (MLPerf Storage's headline): doubling, then bisection."""
    threshold, tried, bound = workload.au_threshold * 100, {}, []   # bound: why a count past the simulation's bound was not tried
    # candidates stop once their AU is decidedly above or below the threshold; the answer is then run until settled
    search = replace(config, decide_au_percent=threshold) if config.steps is None or config.at_least else config
    spent = [0]      # reads simulated so far: the search stops before a run once MAX_SEARCH_IOS are spent

    def run(n: int) -> RunResult:
        if n not in tried:
            if spent[0] > MAX_SEARCH_IOS:
                raise SimclusterError(f"the search simulated {spent[0]:,} reads before trying {n} accelerators; at most "
                                      f"{MAX_SEARCH_IOS:,} over its runs", where=workload.path, hint="a larger --io-size or fewer --steps")
            tried[n] = loader.simulate(workload, nvme, n, drives, search, seed)
            spent[0] += sum(len(log.nbytes) for log in tried[n].logs)
        return tried[n]

    def meets(n: int) -> bool | None:
        """AU at n accelerators meets the threshold; None where n exceeds the simulation bound."""
        try:
            return run(n).au_percent >= threshold
        except SimulationBound as exc:
            bound.append(f"at least {lo} accelerators: {n} exceed the simulation bound ({exc.message})")
            return None

    if run(1).au_percent < threshold:
        return None, list(tried.values())
    lo, hi, ok = 1, 2, True
    while hi <= limit and (ok := meets(hi)):
        lo, hi = hi, min(hi * 2, limit + 1)   # neither the doubling nor the bisection tries more than the limit
    while hi - lo > 1 and ok is not None:
        mid = (lo + hi) // 2
        ok = meets(mid)
        lo, hi = (mid, hi) if ok else (lo, mid)
    if lo == limit:   # the limit itself met the threshold: the answer is a lower bound
        bound.append(f"at least {lo} accelerators: the search stops at its limit of {limit}")
    best = run(lo)
    if search is not config and not best.estimate.settled:
        best = tried[lo] = loader.simulate(workload, nvme, lo, drives, config, seed)
    best.bound = bound[-1] if bound else ""
    return best, [tried[k] for k in sorted(tried)]
