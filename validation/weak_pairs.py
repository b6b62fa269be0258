"""Weak-scaling read-out of published LLM files (issue 41's target: the per-GPU throughput lost from N to 8N GPUs, measured
against predicted, in percentage points). Runs `validate --published llm` on each file named (the shipped model, nothing
fitted or changed), prints every row, then every series (one model, layout and precision at several GPU counts, as
studies/scaleout_fit.py groups them) and each of its N -> 8N pairs. Read-only: a file's held-out status is printed as the
file records it.

    python validation/weak_pairs.py calibration/published/FILE.yaml [...]

At least one file; a file that cannot be read or validated: one line naming it, exit 2.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.reference.llm import validate_published_llm  # noqa: E402
from simcluster.script_args import check  # noqa: E402
from studies.scaleout_fit import CONFIG  # noqa: E402

TARGET_PP = 2.0   # issue 41: within 2 percentage points


def pairs(rows) -> list[tuple]:
    """(series, N, 8N, measured loss pp, predicted loss pp, held out) for every eightfold pair of every series."""
    groups = defaultdict(dict)
    for r in rows:
        m = CONFIG.match(r.configuration)
        if m and r.measured and r.predicted and r.metric == "tokens_per_s":
            key = (r.source, m["name"], f"t{m['t']} p{m['p']} {m['rest']}", r.regime.split(" | ")[-1])
            groups[key][int(m["gpus"])] = (r.measured / int(m["gpus"]), r.predicted / int(m["gpus"]), r.held_out)
    out = []
    for key, by in sorted(groups.items()):
        for n in sorted(by):
            if 8 * n in by:
                (m0, p0, h0), (m1, p1, h1) = by[n], by[8 * n]
                out.append((key, n, 8 * n, (1 - m1 / m0) * 100, (1 - p1 / p0) * 100, h0 and h1))
    return out


USAGE = "usage: python validation/weak_pairs.py calibration/published/FILE.yaml [...] (at least one published llm file)"


def main(files: list[str]) -> int:
    check(words=None, usage="FILE_OR_FOLDER ...", argv=files)
    if not files:
        print(USAGE, file=sys.stderr)
        return 2
    every = []
    for f in files:
        try:
            v = validate_published_llm(f)
        except SimclusterError as e:
            msg = str(e).splitlines()[0]
            print(f"error: {msg}" if f in msg else f"error: {f}: {msg}", file=sys.stderr)
            return 2
        print(f"== {f}")
        for r in v.rows:
            err = f"{r.error * 100:+6.1f}%" if r.error is not None else "   n/a"
            print(f"  [{r.run:2d}] {r.configuration[:88]:88s} meas {r.measured or 0:12.0f} pred {r.predicted or 0:12.0f} "
                  f"{err} {'held out' if r.held_out else 'development'} {r.unavailable}")
        for s in v.skipped:
            print(f"  skipped: {s}")
        held = [abs(r.error) for r in v.rows if r.error is not None and r.held_out]
        if held:
            print(f"  rows: {len(held)} held out, mean |error| {100 * sum(held) / len(held):.1f}%, "
                  f"{sum(e <= 0.10 for e in held)} within 10%")
        every += pairs(v.rows)
    print("N -> 8N pairs: per-GPU throughput lost (pp), measured vs predicted")
    for (source, name, layout, prec), n, n8, meas, pred, held in every:
        print(f"  {source[:44]:44s} {name[:18]:18s} {prec:5s} {layout[:34]:34s} {n:5d} -> {n8:<5d} meas {meas:5.2f} "
              f"pred {pred:5.2f} |err| {abs(pred - meas):5.2f}{'' if held else '  (development)'}")
    errs = [abs(p - m) for *_, m, p, h in every if h]
    if errs:
        print(f"held-out pairs: {len(errs)}, mean |error| {sum(errs) / len(errs):.2f} pp, "
              f"{sum(e <= TARGET_PP for e in errs)} within {TARGET_PP:g} pp")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
