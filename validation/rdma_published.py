"""Read-out: the published per-core RDMA rows (calibration/published/host-stack-rdma.yaml) against the host-stack model
as shipped (simcluster/heldout/rdma_published.py says how each row is compared), then every per-operation row
(host-stack-rdma-ops.yaml with the operating points of the first file's rows) before (the shipped card) and after (the
polled-verbs model, hardware/verbs.py, fitted on heldout/rdma_ops.FIT), each declared fit subset predicting the rows
outside it, and the fit's sensitivity to the batch the source does not print (heldout/rdma_ops.py); last, the rows
recorded after the model (heldout/rdma_ops.EXTRA: host-stack-rdma-ops-2.yaml, session 39), each with its totals.

    python validation/rdma_published.py
"""

from __future__ import annotations

import sys

from simcluster.errors import SimclusterError
from simcluster.heldout import rdma_ops
from simcluster.heldout.rdma_published import CARD, other_rdma_cards, read
from simcluster.script_args import ArgumentParser


def _quantity(row, value: float) -> str:
    if row.compare == "rate":
        return f"{value * 8 / 1e9:.1f} Gb/s"
    return f"{value * 1e9:.0f} ns/msg"


def main(argv: list[str] = ()) -> int:
    """The read-out; it takes no arguments (any is one line, script_args' usage error, exit 2); bad input (a CalibrationError, or
    any SimclusterError, from the published files or the cards): one line on stderr naming the file and key, exit 1."""
    ArgumentParser(description=__doc__.splitlines()[0]).parse_args(list(argv))
    try:
        show()
    except SimclusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def show() -> None:
    rows = read()
    print(f"card: {CARD.relative_to(CARD.parents[2])} (seed 004's event-mode card, 1.17 us per message; the polled-verbs card per operation below)")
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
    others = other_rdma_cards()
    zero = [name for name, cost in others if cost == 0]
    for name, cost in others:
        if cost:
            print(f"{name} prices {cost * 1e9:.1f} ns per message at its message size (its verbs block: per operation, below)")
    print(f"every other shipped RDMA card prices 0 s per message ({len(zero)}: {', '.join(zero)}): "
          "a host cost never binds on them, whatever the rows measure")

    after()
    later()


def _ns(seconds: float) -> str:
    return f"{seconds * 1e9:.1f} ns"


def _met(rows, model) -> str:
    """'points A of N met, bounds B of K' (model None: the shipped card's cost): never one count over both kinds."""
    def met(r):
        return r.met(r.before if model is None else rdma_ops.predict(model, r))

    points, bounds = [r for r in rows if r.compare != "bound"], [r for r in rows if r.compare == "bound"]
    return (f"points {sum(map(met, points))} of {len(points)} met, bounds {sum(map(met, bounds))} of {len(bounds)}")


def _point(r) -> str:
    """The row's comparison, batch, signalling and measured cost per WQE ('<= ' for a bound), as the tables print them."""
    sig = "-" if r.signal_every is None else f"{r.signal_every:.0f}"
    return f"{r.compare:5} {r.batch:>5.0f} {sig:>4} {('<= ' if r.compare == 'bound' else '') + _ns(r.measured):>14}"


def after() -> None:
    rows = rdma_ops.read()
    model = rdma_ops.fit(rows)
    print(f"\nper operation (heldout/rdma_ops.py): polled verbs fitted on {rdma_ops.FIT} "
          f"({', '.join(rdma_ops.FITS[rdma_ops.FIT])}): wqe {_ns(model.cpu_s_per_wqe)}, doorbell "
          f"{_ns(model.cpu_s_per_doorbell)}, completion 0 (not separable: every fit row signals 1 in 64), inline 0")
    print(f"{'row':30} {'role':8} {'cmp':5} {'batch':>5} {'sig':>4} {'measured/WQE':>14} {'before':>10} {'err':>8} "
          f"{'after':>9} {'err':>8}  met")
    for r in rows:
        p, point = rdma_ops.predict(model, r), _point(r)
        print(f"{r.id:30} {r.role:8} {point} {_ns(r.before):>10} {r.error(r.before) * 100:>+7.1f}% {_ns(p):>9} "
              f"{r.error(p) * 100:>+7.1f}%  {'yes' if r.met(p) else 'NO'}")
    held = [r for r in rows if r.id not in rdma_ops.FITS[rdma_ops.FIT]]
    print(f"held out {len(held)}: before {_met(held, None)}; after {_met(held, model)} "
          "(points: rate, cost within 10%; bounds: within the bound)")
    print("each declared fit subset predicting every row outside it (error %, bound rows: > 0 a miss):")
    for name in rdma_ops.FITS:
        m = rdma_ops.fit(rows, name)
        out = [f"{r.id} {r.error(rdma_ops.predict(m, r)) * 100:+.1f}" for r in rows if r.id not in rdma_ops.FITS[name]]
        outside = [r for r in rows if r.id not in rdma_ops.FITS[name]]
        print(f"  {name} (wqe {_ns(m.cpu_s_per_wqe)}, doorbell {_ns(m.cpu_s_per_doorbell)}; {_met(outside, m)}): "
              f"{'; '.join(out)}")
    batch = rdma_ops.FITS[rdma_ops.FIT][1]
    m = rdma_ops.fit(rows, batch_of={batch: rdma_ops.SEQ_BATCH_6_CORES})
    out = [f"{r.id} {r.error(rdma_ops.predict(m, r)) * 100:+.1f}" for r in held]
    print(f"sensitivity: {batch} at {rdma_ops.SEQ_BATCH_6_CORES} WQEs per doorbell (the 6-core batch) instead of 32: "
          f"wqe {_ns(m.cpu_s_per_wqe)}, doorbell {_ns(m.cpu_s_per_doorbell)} ({_met(held, m)}); {'; '.join(out)}")


def later() -> None:
    """The rows of the files recorded after the model (rdma_ops.EXTRA), predicted by FIT as shipped: each row, then
    the file's totals and the rows it does not compare (with why)."""
    rows = rdma_ops.read()
    model = rdma_ops.fit(rows)
    for path in rdma_ops.EXTRA:
        mine = [r for r in rows if r.file == path.name]
        print(f"\nrecorded after the model ({path.name}; every row held out), predicted once by {rdma_ops.FIT} "
              f"(wqe {_ns(model.cpu_s_per_wqe)}, doorbell {_ns(model.cpu_s_per_doorbell)}, completion 0):")
        print(f"{'row':30} {'testbed':8} {'cmp':5} {'batch':>5} {'sig':>4} {'measured/WQE':>14} {'predicted':>10} "
              f"{'err':>8}  met")
        for r in mine:
            p = rdma_ops.predict(model, r)
            print(f"{r.id:30} {rdma_ops.testbed(r.source):8} {_point(r)} {_ns(p):>10} {r.error(p) * 100:>+7.1f}%  "
                  f"{'yes' if r.met(p) else 'NO'}")
        skipped = [(i, why) for name, i, why in rdma_ops.not_compared((path,))]
        beds = sorted({rdma_ops.testbed(r.source) for r in mine})
        print(f"{path.name}: compared {len(mine)} ({_met(mine, model)}); before (seed 004's card) {_met(mine, None)}; "
              f"testbeds {', '.join(beds)}; not compared {len(skipped)}")
        for i, why in skipped:
            print(f"  not compared: {i}: {why}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
