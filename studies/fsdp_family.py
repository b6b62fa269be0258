"""The PyTorch FSDP family's held-out published rows (torchtitan-fsdp2, fms-fsdp, composer-fsdp, fms-fsdp-compile: trust/regime.FSDP_TRAINERS),
summed up per family, regime and source (a read-out, not a test; docs/models/llm.md quotes it). Sources are counted as
the error bands count them: files of one `simcluster.source_group` as one (published.Published.source_group).

Reads `simcluster validate --published llm --json` in-process and prints, over the rows held out whose regime is the
family's: rows, sources, mean |error| and the count within 10%, in both conventions the repository uses: the tokens/s
error that `validate --published llm` prints per row (predicted / measured - 1, + = predicted faster) and the step-time
error the error-band table prints per regime (docs/accuracy.md: |1 / rho - 1|, measured / predicted step - 1).
    python studies/fsdp_family.py
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.cli import main as cli  # noqa: E402

TARGET = 10.0   # the target: within 10%


def summary(name: str, rows: list[dict]) -> str:
    rate = [abs(r["error_pct"]) for r in rows]
    step = [abs(1 / (1 + r["error_pct"] / 100) - 1) * 100 for r in rows]   # the step time's error of the same row
    within = sum(e <= TARGET for e in rate)
    return (f"{name:45s} {len(rows):3d} rows {len({r.get('source_group') or r['source'] for r in rows}):2d} src  mean |error| tokens/s "
            f"{sum(rate) / len(rate):5.2f}%  step time {sum(step) / len(step):5.2f}%  within 10%: {within} of {len(rows)} "
            f"({100 * within / len(rows):.0f}%; step time: {sum(e <= TARGET for e in step)})")


def main() -> int:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        cli(["validate", "--published", "llm", "--json"])
    rows = [r for r in json.loads(buf.getvalue())["rows"]
            if r.get("held_out") and r.get("error_pct") is not None and "| PyTorch FSDP |" in r.get("regime", "")]
    print(summary("PyTorch FSDP family", rows))
    for key, group in (("regime", "regime"), ("source", "source")):
        by = defaultdict(list)
        for r in rows:
            by[r[group]].append(r)
        for name, got in sorted(by.items()):
            print("  " + summary(name.replace("llm | PyTorch FSDP | ", "regime ") if key == "regime" else name, got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
