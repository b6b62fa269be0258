"""The PyTorch FSDP family's held-out published rows (torchtitan-fsdp2, fms-fsdp, composer-fsdp, fms-fsdp-compile: trust/regime.FSDP_TRAINERS),
summed up per family, regime and source (a read-out, not a test; docs/models/llm.md quotes it). Sources are counted as
the error bands count them: files of one `simcluster.source_group` as one (published.Published.source_group).

Reads `simcluster validate --published llm --json` in-process and prints, over the rows held out whose regime is the
family's: rows, sources, mean |error| and the count within 10%, in both conventions the repository uses: the tokens/s
error that `validate --published llm` prints per row (predicted / measured - 1, + = predicted faster) and the step-time
error the error-band table prints per regime (docs/accuracy.md: |1 / rho - 1|, measured / predicted step - 1).
The development rows of the family (held_out false: rows that prompted a model change, or were in view when one was
chosen) follow, summed up apart.
--misses lists every row outside 10% (held out, then development): source, run, model, GPUs, sequence, activation
checkpointing, precision, error (+ = predicted fast). --json FILE reads a saved `validate --published llm --json`.
    python studies/fsdp_family.py [--misses] [--json FILE]
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from simcluster.cli import main as cli  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

TARGET = 10.0   # the target: within 10%


def summary(name: str, rows: list[dict]) -> str:
    rate = [abs(r["error_pct"]) for r in rows]
    step = [abs(1 / (1 + r["error_pct"] / 100) - 1) * 100 for r in rows]   # the step time's error of the same row
    within = sum(e <= TARGET for e in rate)
    return (f"{name:45s} {len(rows):3d} rows {len({r.get('source_group') or r['source'] for r in rows}):2d} src  mean |error| tokens/s "
            f"{sum(rate) / len(rate):5.2f}%  step time {sum(step) / len(step):5.2f}%  within 10%: {within} of {len(rows)} "
            f"({100 * within / len(rows):.0f}%; step time: {sum(e <= TARGET for e in step)})")


FAMILY = "| PyTorch FSDP |"
AC = re.compile(r" z\d (none|full every \d+|full|op|selective)")


def family(rows: list[dict], held_out: bool) -> list[dict]:
    """The family's compared rows, held out or development."""
    return [r for r in rows if bool(r.get("held_out")) == held_out and r.get("error_pct") is not None
            and FAMILY in r.get("regime", "")]


def sequence_of(source: str, run: int, folder: Path = ROOT / "calibration" / "published") -> int | None:
    """The row's sequence length as its published file records it (None where it is not printed)."""
    path = folder / f"{source}.yaml"
    if not path.is_file():
        return None
    runs = yaml.safe_load(path.read_text()).get("runs") or []
    return (runs[run].get("model") or {}).get("seq") if run < len(runs) else None


def miss_line(r: dict, seq: int | None) -> str:
    """One row outside the target: source, run, model and GPUs (the row's configuration), sequence, checkpointing,
    sharding, precision (the regime's last field) and the signed error (+ = predicted fast)."""
    config = r["configuration"]
    ac = AC.search(config)
    shard = "HSDP" if "HSDP" in config else ("zero 2" if " z2 " in config else "zero 3")
    return (f"    {r['source']:42s} {r['run']:3d}  {config.split(', t')[0][:44]:44s} seq {seq or '?':>5}  "
            f"AC {ac.group(1) if ac else '?':13s} {shard:6s} {r['regime'].rsplit('| ', 1)[-1]:5s} {r['error_pct']:+6.1f}%")


def grouped(rows: list[dict]) -> None:
    for key in ("regime", "source"):
        by = defaultdict(list)
        for r in rows:
            by[r[key]].append(r)
        for name, got in sorted(by.items()):
            print("  " + summary(name.replace("llm | PyTorch FSDP | ", "regime ") if key == "regime" else name, got))


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--misses", action="store_true", help="list every row outside 10%%")
    ap.add_argument("--json", type=Path, help="a saved `simcluster validate --published llm --json` (default: run it)")
    args = ap.parse_args(argv)
    if args.json:
        try:
            text = args.json.read_text()
        except OSError as exc:
            print(f"{args.json}: cannot read ({exc.strerror})", file=sys.stderr)
            return 2
    else:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            cli(["validate", "--published", "llm", "--json"])
        text = buf.getvalue()
    try:
        rows = json.loads(text)["rows"]
    except (ValueError, KeyError, TypeError):
        print(f"{args.json or 'validate'}: not a `validate --published llm --json` document (no 'rows')", file=sys.stderr)
        return 2
    held, dev = family(rows, True), family(rows, False)
    if not held:
        print("PyTorch FSDP family: no held-out row")
    else:
        print(summary("PyTorch FSDP family", held))
        grouped(held)
    if dev:
        print(summary("development (in-sample, not held out)", dev))
        grouped(dev)
    if args.misses:
        for name, got in (("held out", held), ("development", dev)):
            out = [r for r in got if abs(r["error_pct"]) > TARGET]
            print(f"  misses, {name}: {len(out)} of {len(got)}")
            for r in out:
                print(miss_line(r, sequence_of(r["source"], r["run"])))
    return 0

if __name__ == "__main__":
    sys.exit(main())
