"""FSDP2 ZeRO-2's re-gather priced exposed (FrameworkSpec.zero2_exposed with zero2_regather and zero2_fsdp2:
llm/fsdp2_zero2.exposed_gathers_s; issue 44, session 48 zero2f) on the runs it was chosen with: sessions 46-48's zero2,
zero2b, zero2c, zero2d and zero2e sets, each row's measured step (the mean of its processes' rank-0 medians, as the
sets' read-outs read them) against today's product, the zero2e candidate (the re-gather overlapped) and this one
(exposed; off for zero2d's / zero2e's gathered rows, which do not re-gather; ZeRO-3 control rows priced by all alike),
then each regather / gathered pair's ratio. All of these rows are DEVELOPMENT for the candidate (zero2e's report X, the
same pricing, was read on zero2d's runs and then on zero2e's); none is held out: the held-out test is the registered
zero2f set (calibration/h200x2-zero2f-2026-11-30).
    python studies/zero2f_development.py > studies/zero2f_development-session48.txt
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "studies"))

import zero2e_development as z2e  # noqa: E402

SETS = z2e.SETS + ("h200x2-zero2e-2026-11-30",)


def main() -> int:
    overlapped = {(s, r): c for s, r, _, _, c, _ in z2e.rows(SETS)}
    got = z2e.rows(SETS, exposed=True)
    print(f"{'set':6} {'row':26} {'measured':>9} {'product':>9} {'error':>7} {'zero2e':>9} {'error':>7} {'exposed':>9} "
          f"{'error':>7}  zero")
    errs = {2: ([], [], []), 3: ([], [], [])}
    for name, row, meas, prod, cand, z in got:
        over = overlapped[(name, row)]
        for k, x in enumerate((prod, over, cand)):
            errs[z][k].append(abs(x / meas - 1))
        print(f"{name:6} {row:26} {meas:9.1f} {prod:9.1f} {prod / meas - 1:+7.1%} {over:9.1f} {over / meas - 1:+7.1%} "
              f"{cand:9.1f} {cand / meas - 1:+7.1%}  {z}")
    for z, (p, o, c) in errs.items():
        print(f"zero {z}: {len(p)} rows, mean |error| product {statistics.mean(p):.1%}, zero2e candidate "
              f"{statistics.mean(o):.1%}, exposed {statistics.mean(c):.1%}")
    by = {(s, r): (m, p, overlapped[(s, r)], c) for s, r, m, p, c, _ in got}
    for (s, r), (m, p, o, c) in by.items():
        if r.endswith("-regather"):
            g = by[(s, r.replace("-regather", "-gathered"))]
            print(f"{s} {r.rsplit('-', 1)[0]}: regather / gathered measured {m / g[0] - 1:+.1%}, product "
                  f"{p / g[1] - 1:+.1%}, zero2e candidate {o / g[2] - 1:+.1%}, exposed {c / g[3] - 1:+.1%} "
                  f"(log gap to measured {abs(math.log(c / g[3]) - math.log(m / g[0])):.2%})")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
