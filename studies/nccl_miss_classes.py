"""Published multi-node nccl-tests: the systems the held-out check leaves over 10%, classified by fabric, algorithm,
NCCL version, size range and sign of the error (issue 41, session 42, engineer ncclsys). Descriptive only: nothing is
fitted, tuned or changed; the cause categories of studies/nccl_miss_triage.py are printed beside each system.

    fabric     EFA (SRD, aws-ofi-nccl) | IB (InfiniBand verbs) | RoCE | NVLink (no network: one NVLink domain),
               from the file's system.transport (the words the source prints) and the model's regime label;
               IB|RoCE where the source names both
    algorithm  NCCL's choice or the forced algorithm per row, as the model runs it (ring / tree / nvls / nvls-tree /
               alltoall), with the row count
    NCCL       the file's system.nccl, first word
    sizes      the rows' smallest-largest message; peak when the source gives peaks without a size
    sign       + all rows predicted faster, - all slower, +/- mixed (by row, the held-out error)

    python studies/nccl_miss_classes.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

TARGET_PCT = 10.0


def fabric(transport: str, regime: str) -> str:
    """One fabric word from the source's transport text and the model's regime label."""
    text = (transport or "").lower()
    if "efa" in regime or "efa" in text:
        return "EFA"
    if "rdma" not in regime and "tcp" not in regime:
        return "NVLink"
    roce = "roce" in text or "ethernet" in text
    ib = "infiniband" in text or " ib" in f" {text}" or "ndr" in text or "hdr" in text
    if roce and ib:
        return "IB|RoCE"
    if roce or ib:
        return "RoCE" if roce else "IB"
    return "verbs?"


def sign(errors: list[float]) -> str:
    if all(e > 0 for e in errors):
        return "+"
    if all(e < 0 for e in errors):
        return "-"
    return "+/-"


def classes() -> list[dict]:
    from nccl_miss_triage import over_target, triage

    from simcluster.reference import nccl

    triaged = {t["system"].rstrip("*"): t["category"] for t in triage()}
    out = []
    for s, r, ref in over_target():
        by_run = {row.run: row for row in nccl.system_rows(ref)}
        algos, regimes, sizes = Counter(), set(), []
        for row in s.rows:
            ref_row = by_run[row.run]
            algos[(ref_row.detail or "?").split("/")[0]] += 1
            regimes.add(ref_row.regime.split(" | ")[-1] if ref_row.regime else "")
            if not row.peak:
                sizes.append(max(row.sizes))
        version = str(ref.system.get("nccl") or "?").split()[0]
        out.append({"system": s.name + ("*" if r.outlier else ""), "held_out_pct": r.held_out_pct, "rows": len(s.rows),
                    "fabric": fabric(str(ref.system.get("transport") or ""), " ".join(sorted(regimes))),
                    "algorithms": dict(algos), "nccl": version,
                    "sizes": (min(sizes), max(sizes)) if sizes else None, "sign": sign(r.row_errors_pct),
                    "category": triaged.get(s.name, "?")})
    return out


def _size(n: int) -> str:
    return f"{n / 2**30:g}G" if n >= 2**30 else f"{n / 2**20:g}M"


def main() -> None:
    rows = classes()
    print(f"{'system (held out > 10%)':42s} {'held out':>8s} {'rows':>4s} {'fabric':6s} {'NCCL':12s} {'sizes':>9s} "
          f"{'sign':4s} {'triage':14s} algorithms (rows)")
    for r in sorted(rows, key=lambda r: (r["fabric"], r["system"])):
        sizes = f"{_size(r['sizes'][0])}-{_size(r['sizes'][1])}" if r["sizes"] else "peak"
        algos = " ".join(f"{k} {v}" for k, v in sorted(r["algorithms"].items()))
        print(f"{r['system'][:42]:42s} {r['held_out_pct']:7.1f}% {r['rows']:4d} {r['fabric']:6s} {r['nccl'][:12]:12s} "
              f"{sizes:>9s} {r['sign']:4s} {r['category']:14s} {algos}")
    for key in ("fabric", "sign", "category"):
        counts = Counter(r[key] for r in rows)
        print(f"by {key}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    algo = Counter()
    for r in rows:
        algo.update(r["algorithms"])
    print("rows by algorithm: " + ", ".join(f"{k} {v}" for k, v in sorted(algo.items())))


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
