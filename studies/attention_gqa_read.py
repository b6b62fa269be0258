"""Read calibration/h200x1-attention-gqa-2026-11-29/gqa.json against its registered model times (issue 44, session 37).

Per shape: flash forward and backward measured vs the model's 'fa2' time (the registration's --predict, today's card),
and each grouped-K/V shape against its MHA control (same query heads and head size); then the README's reading rules.
    python studies/attention_gqa_read.py [gqa.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BUNDLE = ROOT / "calibration" / "h200x1-attention-gqa-2026-11-29"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else BUNDLE / "gqa.json"
    try:
        records = [r for r in json.loads(path.read_text())["records"] if r.get("backend") == "flash" and "fwd_s" in r]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"{path}: not the probe's document ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 1
    sys.path.insert(0, str(BUNDLE))
    from device_run import predict  # the registered script's model times

    model = {(r["heads"], r["kv_heads"], r["head_dim"], r["seq"]): r for r in predict()}
    meas = {(r["heads"], r["kv_heads"], r["head_dim"], r["seq"]): r for r in records}
    print(f"{'heads/kv':>8} {'d':>4} {'seq':>6} | {'fwd ms':>7} {'model':>7} {'err':>7} | {'bwd ms':>7} {'model':>7} {'err':>7} "
          f"| GQA vs MHA control fwd / bwd")
    for key in sorted(meas):
        h, kv, d, s = key
        m, p = meas[key], model[key]
        ef, eb = p["fwd_s"] / m["fwd_s"] - 1, p["bwd_s"] / m["bwd_s"] - 1
        ctrl = meas.get((h, h, d, s)) if kv != h else None
        vs = f"{m['fwd_s'] / ctrl['fwd_s'] - 1:+.1%} / {m['bwd_s'] / ctrl['bwd_s'] - 1:+.1%}" if ctrl else "(control)"
        print(f"{h:>4}/{kv:<3} {d:>4} {s:>6} | {m['fwd_s'] * 1e3:7.3f} {p['fwd_s'] * 1e3:7.3f} {ef:+7.1%} | "
              f"{m['bwd_s'] * 1e3:7.3f} {p['bwd_s'] * 1e3:7.3f} {eb:+7.1%} | {vs}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
