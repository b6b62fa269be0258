"""Read-out: the published per-core RDMA rows (calibration/published/host-stack-rdma.yaml) against the host-stack model
as shipped (simcluster/heldout/rdma_published.py says how each row is compared). Prints one line per row and a summary.

    python validation/rdma_published.py
"""

from __future__ import annotations

from simcluster.heldout.rdma_published import CARD, other_rdma_cards, read


def _quantity(row, value: float) -> str:
    if row.compare == "rate":
        return f"{value * 8 / 1e9:.1f} Gb/s"
    return f"{value * 1e9:.0f} ns/msg"


def main() -> None:
    rows = read()
    print(f"card: {CARD.relative_to(CARD.parents[2])} (the one shipped RDMA card with a host cost)")
    print(f"{'row':30} {'transport':10} {'compare':7} {'m':>8} {'measured':>14} {'predicted':>14} {'error':>9}  met")
    for r in rows:
        if r.compare == "none":
            print(f"{r.id:30} {r.transport[:10]:10} {'none':7}  not compared: {r.why}")
            continue
        what = "<= " if r.compare == "bound" else ""
        print(f"{r.id:30} {r.transport:10} {r.compare:7} {r.message_bytes:>7.0f}B {what + _quantity(r, r.measured):>14} "
              f"{_quantity(r, r.predicted):>14} {r.error * 100:>+8.1f}%  {'yes' if r.met else 'NO'}")
    judged = [r for r in rows if r.met is not None]
    print(f"judged {len(judged)}, met {sum(bool(r.met) for r in judged)} (cost and rate: within 10%; bound: within it); "
          f"not compared {len(rows) - len(judged)}")
    zero = [name for name, cost in other_rdma_cards() if cost == 0]
    print(f"every other shipped RDMA card prices 0 s per message ({len(zero)}: {', '.join(zero)}): "
          "a host cost never binds on them, whatever the rows measure")


if __name__ == "__main__":
    main()
