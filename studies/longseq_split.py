"""The long-sequence family's published rows split into attention and the rest (issue 44, session 46; read-only, no
model change, not a test; docs/models/llm-findings.md, session 46, longseq).

For every compared row of a long-sequence file (default: NeMo 25.04's B200 table and NeMo 24.03's H100 table) and for
the other published B200 rows of the same model and sequence (Llama 3 8B fp8 at 8K: NeMo 25.02, Megatron-Bridge 25.11),
prints the error `simcluster validate --published llm` prints (+ = predicted fast), the step's compute share and the
compute's attention share (the critical stage's ops by class: studies/llm_heldout_breakdown.compute_split).

Then the two-part reading of a table (`--split FILE`): if the measured step were the predicted attention time x (1 + x)
plus the rest x (1 + y), the table's shortest- and longest-sequence rows give x and y (two equations, two unknowns:
arithmetic on two rows, not a fit applied anywhere), and every other row of the table is printed against what (x, y)
implies for it. A row that lies on the line is explained by those two numbers; a row off it is not.
    python studies/longseq_split.py [--split FILE]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from llm_heldout_breakdown import compute_split  # noqa: E402

from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import llm_usage, predict_run  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

PUBLISHED = ROOT / "calibration" / "published"
B200_TABLE = PUBLISHED / "llm-nemo-25.04-long-sequence-b200.yaml"
FILES = ((B200_TABLE, None), (PUBLISHED / "llm-nemo-24.03-long-sequence-h100.yaml", None),
         (PUBLISHED / "llm-nemo-25.02-dgx-b200-fp8.yaml", "LLAMA3-8B"), (PUBLISHED / "llm-megatron-bridge-25.11-dgx-b200.yaml", "LLAMA3_8B"))


def rows(path: Path, model_name: str | None = None) -> list[dict]:
    """Each compared row of the file (of one model where given): its error and where its predicted step goes."""
    ref = read_published(path, "published-llm-run")
    usage, out = llm_usage(ref), []
    for i, run in enumerate(ref.runs):
        if model_name and run["model"].get("name") != model_name:
            continue
        p = predict_run(ref, usage, i, run)   # validate --published llm's own path (a str: why the row is not compared)
        if isinstance(p, str):
            continue
        model, par, result, error = p.model, p.par, p.result, p.error
        ratio = 1 / (1 - error) if p.metric == "step_time_s" else 1 + error   # measured step / predicted step
        classes, _, compute = compute_split(model, par, p.batch, p.gpu, p.framework, result.critical_stage, result.micro_batches)
        out.append({"source": ref.name.removeprefix("llm-"), "run": i, "seq": model.seq, "gpus": run["gpus"], "cp": par.cp,
                     "layout": f"t{par.tp} p{par.pp} c{par.cp} d{par.dp}", "error": error, "ratio": ratio,
                     "compute": result.breakdown["compute"] / result.step_time_s, "attn": classes["attn"] / compute})
    return out


def two_part(table: list[dict]) -> tuple[float, float]:
    """(x, y): measured step / predicted = a (1 + x) + (1 - a)(1 + y) at the shortest and the longest row (a: the
    attention share of the predicted step)."""
    lo, hi = min(table, key=lambda r: r["seq"]), max(table, key=lambda r: r["seq"])
    (a1, r1), (a2, r2) = ((r["attn"] * r["compute"], r["ratio"]) for r in (lo, hi))
    # a x + (1 - a) y = r - 1 for both rows
    det = a1 * (1 - a2) - a2 * (1 - a1)
    x = ((r1 - 1) * (1 - a2) - (r2 - 1) * (1 - a1)) / det
    y = (a1 * (r2 - 1) - a2 * (r1 - 1)) / det
    return x, y


def main(argv: list[str]) -> int:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--split", type=Path, default=B200_TABLE, help="the table read in two parts (default NeMo 25.04 B200)")
    args = p.parse_args(argv)
    print("# + = predicted fast (validate --published llm's error); compute: its share of the predicted step; attn: the "
          "attention core's share of that compute")
    print(f"{'source':<36} {'run':>3} {'seq':>8} {'gpus':>5} {'layout':<14} {'error':>7} {'compute':>8} {'attn':>6}")
    for path, model_name in FILES:
        for r in rows(path, model_name):
            print(f"{r['source']:<36} {r['run']:>3} {r['seq']:>8} {r['gpus']:>5} {r['layout']:<14} {r['error'] * 100:>+6.1f}% "
                  f"{r['compute'] * 100:>7.1f}% {r['attn'] * 100:>5.1f}%")
    table = rows(args.split)
    x, y = two_part(table)
    print(f"\n# two-part reading of {args.split.name}: measured step / predicted = a (1 + x) + (1 - a)(1 + y), a = the "
          f"attention share of the predicted step; from its shortest and longest rows: attention x = {x * 100:+.1f}%, "
          f"the rest y = {y * 100:+.1f}% (+ = measured slower than predicted)")
    cp1 = [r for r in table if r["cp"] == 1]
    x1, y1 = two_part(cp1) if len({r["seq"] for r in cp1}) > 1 else (None, None)
    if x1 is not None:
        print(f"# the same from its CP-1 rows alone (seq {min(r['seq'] for r in cp1)} and {max(r['seq'] for r in cp1)}): attention "
              f"x1 = {x1 * 100:+.1f}%, the rest y1 = {y1 * 100:+.1f}%. The two-row line solves its x from a CP-16, TP-4 row, so "
              "any CP / TP cost growing with the sequence is inside it; a CP > 1 row measured slower than the CP-1 line "
              "('over CP-1' > 0) is a CP / TP cost or attention, which this table cannot tell apart")
    print(f"{'seq':>8} {'layout':<14} {'a':>6} {'measured/predicted step':>24} {'(x, y) implies':>15} {'off':>7}"
          + (f" {'(x1, y1) implies':>17} {'over CP-1':>9}" if x1 is not None else ""))
    for r in table:
        a = r["attn"] * r["compute"]
        ratio, implied = r["ratio"], 1 + a * x + (1 - a) * y
        line = (f"{r['seq']:>8} {r['layout']:<14} {a * 100:>5.1f}% {ratio:>24.3f} {implied:>15.3f} "
                f"{(implied / ratio - 1) * 100:>+6.1f}%")
        if x1 is not None:
            implied1 = 1 + a * x1 + (1 - a) * y1
            line += f" {implied1:>17.3f} {(ratio / implied1 - 1) * 100:>+8.1f}%"   # measured step over the CP-1 line
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
