"""Every lab eager regime at 1-2 GPUs with today's step recomputed live, the stage hosts in series (the product) and free
(session 44's candidate, engineer ppcouple: framework.free_stage_hosts on for every torch pipeline), beside each other (a
diagnostic, no model input; nothing fitted).

studies/eager_lab_modes.py reads the committed error-band table (its rows' today's step as of the table's build); this
takes the same held-out rows (trust/build.eager_held_out_rows, eager_residuals: the registered and sealed read-outs'),
and each row's today's error (a registered row at today's step, a sealed row at its own), per regime and GPU count:
rows, sets, mean |error| and bias with the hosts in series (the product), then free (the candidate).
    python studies/pp_coupling_modes.py
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def errors(free: bool) -> dict:
    """(regime, GPUs) -> (today's errors, sources) over the eager rows at <= 2 GPUs; `free`: every torch framework with
    free_stage_hosts on."""
    from dataclasses import replace

    from simcluster.heldout import eager_regimes
    from simcluster.llm import work
    from simcluster.trust.build import eager_held_out_rows, eager_residuals

    product = work.free_hosts
    eager_regimes._todays.cache_clear()
    if free:
        work.free_hosts = lambda fw, stages: product(replace(fw, free_stage_hosts=True), stages)
    try:
        out = defaultdict(lambda: ([], set()))
        for r in eager_residuals(eager_held_out_rows()):
            if r.scale <= 2:
                errs, sources = out[(r.regime, int(r.scale))]
                errs.append(r.today_error)
                sources.add(r.source)
        return dict(out)
    finally:
        work.free_hosts = product
        eager_regimes._todays.cache_clear()


def main() -> int:
    before, after = errors(free=False), errors(free=True)
    print(f"{'regime':56} {'GPUs':>4} {'rows':>4} {'sets':>4}   in series: mean |err|   bias   free: mean |err|   bias")
    for key in sorted(before):
        (b, src), (a, _) = before[key], after[key]
        print(f"{key[0]:56} {key[1]:>4} {len(b):>4} {len(src):>4}   {100 * statistics.mean(map(abs, b)):17.1f}% "
              f"{100 * statistics.mean(b):+6.1f}%   {100 * statistics.mean(map(abs, a)):13.1f}% {100 * statistics.mean(a):+6.1f}%")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
