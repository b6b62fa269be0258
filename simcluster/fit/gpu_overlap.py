"""A GPU card's comm_overlap block from overlap-micro documents (studies/overlap_micro/device.py): how much compute and
NCCL slow each other when they run at once.

Per document (median of its repetitions): GEMMs alone g_a, beside the all_reduces g_b; all_reduces alone a_a,
beside a_b (their loop outlasts the GEMMs' and its tail runs alone at the alone rate):
    compute_slowdown = 1 - g_a / g_b                                        (compute rate lost)
    comm_rate        = (B - (a_b - g_b) B / a_a) / g_b  /  (B / a_a)        (NCCL's rate beside compute, relative)
with B the bytes reduced; the card takes the mean over the documents (GEMM sizes).
    python -m simcluster.fit.gpu_overlap calibration/h200x2-overlap-2026-11-23/overlap-g*.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from simcluster import strict
from simcluster.errors import CalibrationError


def terms(doc: dict) -> tuple[float, float]:
    """(compute_slowdown, comm_rate) of one overlap-micro document."""
    runs = doc["runs_s"]
    g_a = statistics.median(r["gemm"] for r in runs["gemm"])
    a_a = statistics.median(r["all_reduce"] for r in runs["all_reduce"])
    g_b = statistics.median(r["gemm"] for r in runs["both"])
    a_b = statistics.median(r["all_reduce"] for r in runs["both"])
    total = doc["all_reduce"]["bytes"] * doc["all_reduce"]["count"]
    alone_rate = total / a_a
    beside = max(0.0, total - max(0.0, a_b - g_b) * alone_rate) / min(g_b, a_b)
    return 1.0 - g_a / g_b, beside / alone_rate


def fit(paths: list[Path]) -> dict:
    """The card block: the means of the documents' terms, each rounded as the card keeps them."""
    pairs = [terms(strict.load_json(p, CalibrationError, "overlap document")) for p in paths]
    return {"compute_slowdown": round(statistics.mean(s for s, _ in pairs), 3),
            "comm_rate": round(statistics.mean(r for _, r in pairs), 3),
            "per_document": [(round(s, 3), round(r, 3)) for s, r in pairs]}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    try:
        print(json.dumps(fit([Path(a) for a in argv])))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: cannot read an overlap-micro document: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
