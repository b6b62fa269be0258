"""Read calibration/h200x1-attention-gqa-2026-11-29/gqa.json against its registered model times (issue 44, session 37).

The model times are the README's registered block (the ``` block under "## Registered before any run", written by
`device_run.py --predict` at 3c0fc78a before the run), parsed as registered, not recomputed with today's model.
Per shape: flash forward and backward measured vs the registered time, and each grouped-K/V shape against its MHA
control (same query heads and head size); then the three reading rules the README fixed before the run, at d 64 (the
runner's 1b: 32 query / 8 KV heads) at 16K and 32K. Convention throughout: measured vs registered model,
measured / model - 1 (- = measured faster than the model); GQA vs control: GQA / control - 1.
    python studies/attention_gqa_read.py [gqa.json [README.md]]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "calibration" / "h200x1-attention-gqa-2026-11-29"
LINE = re.compile(r"^\s*(\d+)/(\d+)\s+d\s+(\d+)\s+seq\s+(\d+)\s+fa2\s+fwd\s+([\d.]+)\s+ms\s+bwd\s+([\d.]+)\s+ms\s*$")
RULE1_FASTER, RULE2_GQA, RULE2_CONTROL, RULE3_UNDER = -0.08, 0.03, 0.05, -0.08   # the README's rules, fixed before the run


class ReadError(Exception):
    """A one-line reason the read cannot go on (printed without a traceback)."""


def registered(readme: Path) -> dict[tuple, dict]:
    """{(heads, kv_heads, head_dim, seq): {fwd_s, bwd_s}} from the README's registered block."""
    try:
        text = readme.read_text()
    except OSError as exc:
        raise ReadError(f"{readme}: {exc.strerror}") from None
    part = text.split("## Registered before any run", 1)
    blocks = part[1].split("```") if len(part) == 2 else []
    if len(blocks) < 3:
        raise ReadError(f"{readme}: no ``` block under '## Registered before any run'")
    out = {}
    for line in blocks[1].splitlines():
        if m := LINE.match(line):
            h, kv, d, s = (int(x) for x in m.groups()[:4])
            out[(h, kv, d, s)] = {"fwd_s": float(m[5]) / 1e3, "bwd_s": float(m[6]) / 1e3}
    if not out:
        raise ReadError(f"{readme}: the registered block holds no 'H/KV d D seq S fa2 fwd .. ms bwd .. ms' line")
    return out


def measured(path: Path) -> dict[tuple, dict]:
    try:
        records = [r for r in json.loads(path.read_text())["records"] if r.get("backend") == "flash" and "fwd_s" in r]
        out = {(r["heads"], r["kv_heads"], r["head_dim"], r["seq"]): r for r in records}
        bad = [k for k, r in out.items() if not (float(r["fwd_s"]) > 0 and float(r.get("bwd_s", 0)) > 0)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReadError(f"{path}: not the probe's document ({type(exc).__name__}: {exc})") from None
    if not out or bad:
        raise ReadError(f"{path}: " + (f"a flash time missing or not > 0 at {bad[0]}" if bad else "no flash record"))
    return out


def rules(meas: dict, model: dict, seq: int) -> list[str]:
    """The three rules' verdicts at d 64, 32 / 8 against its control 32 / 32, at `seq`."""
    g, c, p = meas.get((32, 8, 64, seq)), meas.get((32, 32, 64, seq)), model.get((32, 32, 64, seq))
    if g is None or c is None or p is None:
        return [f"seq {seq}: the 32/8 or 32/32 d 64 shape was not measured or not registered: no verdict"]
    gc = {k: g[k] / c[k] - 1 for k in ("fwd_s", "bwd_s")}
    cm = {k: c[k] / p[k] - 1 for k in ("fwd_s", "bwd_s")}

    def both(ok: dict[str, bool]) -> str:
        return "MET (both passes)" if all(ok.values()) else ("not met; forward only" if ok["fwd_s"] else
                                                              "not met; backward only" if ok["bwd_s"] else "not met")

    fmt = lambda d: f"fwd {d['fwd_s']:+.1%} / bwd {d['bwd_s']:+.1%}"   # noqa: E731
    r2 = {k: abs(gc[k]) <= RULE2_GQA and abs(cm[k]) <= RULE2_CONTROL for k in gc}
    return [f"seq {seq}: rule 1 (GQA >= 8% faster than its control; GQA vs control {fmt(gc)}): "
            f"{both({k: v <= RULE1_FASTER for k, v in gc.items()})}",
            f"seq {seq}: rule 2 (GQA within 3% of its control and the control within 5% of the model; control vs model "
            f"{fmt(cm)}): {both(r2)}",
            f"seq {seq}: rule 3 (the control >= 8% under the model): {both({k: v <= RULE3_UNDER for k, v in cm.items()})}"]


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else BUNDLE / "gqa.json"
    readme = Path(argv[1]) if len(argv) > 1 else BUNDLE / "README.md"
    try:
        model, meas = registered(readme), measured(path)
        missing = sorted(set(meas) - set(model))
        if missing:
            h, kv, d, s = missing[0]
            raise ReadError(f"{path}: {len(missing)} measured shape(s) not in the registration ({readme.name}), "
                            f"first {h}/{kv} d {d} seq {s}")
    except ReadError as exc:
        print(f"attention_gqa_read: {exc}", file=sys.stderr)
        return 1
    print("measured vs registered model (measured / model - 1; - = measured faster)")
    print(f"{'heads/kv':>8} {'d':>4} {'seq':>6} | {'fwd ms':>7} {'model':>7} {'err':>7} | {'bwd ms':>7} {'model':>7} {'err':>7} "
          f"| GQA vs MHA control fwd / bwd")
    for key in sorted(meas):
        h, kv, d, s = key
        m, p = meas[key], model[key]
        ef, eb = m["fwd_s"] / p["fwd_s"] - 1, m["bwd_s"] / p["bwd_s"] - 1
        ctrl = meas.get((h, h, d, s)) if kv != h else None
        vs = f"{m['fwd_s'] / ctrl['fwd_s'] - 1:+.1%} / {m['bwd_s'] / ctrl['bwd_s'] - 1:+.1%}" if ctrl else "(control)"
        print(f"{h:>4}/{kv:<3} {d:>4} {s:>6} | {m['fwd_s'] * 1e3:7.3f} {p['fwd_s'] * 1e3:7.3f} {ef:+7.1%} | "
              f"{m['bwd_s'] * 1e3:7.3f} {p['bwd_s'] * 1e3:7.3f} {eb:+7.1%} | {vs}")
    print("\nthe README's rules (fixed before the run), d 64:")
    for seq in (16384, 32768):
        for line in rules(meas, model, seq):
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=2, usage="[GQA_JSON [README]]")
    sys.exit(main(sys.argv[1:]))
