"""The shape of the GB200 misses (issue 41, session 51, helper gb200x51): every published nccl-tests row run on GB200
(calibration/published/nccl-*gb200*.yaml with a scenario) as `simcluster validate --published nccl` prices it, one line
per file x collective x size: NVLink domains x GPUs per domain, the NCCL version the file states, what the model runs
(algorithm / protocol, the channels NCCL's decision model gives the call), measured and predicted busbw, the error, the
measured and predicted time per call, and the limit that binds the prediction (its breakdown's `binding_limit`).

Then, per file with >= 3 sizes, the shape: T = a + S / B through consecutive sizes (S the call's bytes, B the marginal
algbw; busbw = B x the collective's bus factor) for the measured and the predicted times. A level miss moves a and B
together; a shape miss shows as a different B (the slope) with a compensating a. Last, for the multi-rack files, the
protocol NCCL's own code enables across nodes on GB200 by the version the file states (src/graph/tuning.cc: LL128 needs
the GPU-NIC path <= PXN up to 2.26; GB200's NICs hang off the Grace CPU, path PHB; 2.27 adds P2C and NCCL_LL128_C2C,
default 1), and what the model prices with each protocol forced. Descriptive only: nothing is fitted or changed.

    python studies/gb200x51_shape.py          (its print: studies/gb200x51_shape.txt)
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PUBLISHED = ROOT / "calibration" / "published"
MIB = 2**20


def gb200_files() -> list[Path]:
    """The published nccl files whose rows ran on GB200 and that name a scenario (the ones the check compares)."""
    from simcluster.reference import nccl

    return [p for p in sorted(PUBLISHED.glob("nccl-*gb200*.yaml")) if nccl.read_nccl_file(p).file("scenario") is not None]


def _bus_factor(op: str, n: int) -> float:
    from simcluster.collectives.model import bus_factor
    from simcluster.collectives.schedule import canonical_op

    return bus_factor(canonical_op(op), n)


def _cluster(ref, run: dict):
    """The machine the check builds for this run (reference/nccl.system_runs), and its node count."""
    from simcluster.reference import nccl

    nodes = nccl.run_nodes(ref, run)
    cluster = nccl._stated_nccl(nccl._cluster(ref.file("scenario"), nodes), ref)
    return (cluster if run.get("nvls") is not False else dataclasses.replace(cluster, nvls=None)), nodes


def predict_row(ref, run: dict, algorithm: str | None = None, protocol: str | None = None, version_rule: bool = True):
    """The model's prediction for one published run, as the check prices it (algorithm / protocol forced where given;
    `version_rule` False: LL128 priced across nodes whatever the NCCL version, as before session 51)."""
    from simcluster import documents
    from simcluster.collectives.domain import NvlinkDomain
    from simcluster.collectives.fabric import predict_fabric
    from simcluster.collectives.ring_flows import ring_flows
    from simcluster.reference import nccl

    cluster, nodes = _cluster(ref, run)
    if not version_rule and not isinstance(cluster, NvlinkDomain):
        cluster = dataclasses.replace(cluster, nic_via_cpu=False)
    size = int(run["bytes"])
    per_node = int(ref.system["gpus_per_node"])
    forced = nccl._forced(run) or nccl.chooser_algorithm(ref, nodes * per_node, size, run["op"])
    if isinstance(cluster, NvlinkDomain):
        return cluster, cluster.predict(run["op"], size, forced)
    a, p = documents.split_choice(forced)
    return cluster, predict_fabric(cluster, run["op"], size, algorithm or a, ring_flows(cluster), protocol or p)


def rows(path: Path) -> list[dict]:
    from simcluster.reference import nccl

    ref = nccl.read_nccl_file(path)
    out = []
    for i, run in enumerate(ref.runs):
        if not run.get("bytes") or int(run["bytes"]) < nccl.MIN_BYTES:
            continue
        cluster, p = predict_row(ref, run)
        n = p.nranks
        measured = float(run["busbw_GBps"]) * 1e9
        bus = _bus_factor(run["op"], n)
        b = getattr(p, "breakdown", {}) or {}
        domain = getattr(cluster, "gpus_per_node", n)
        out.append({"file": ref.name, "run": i, "op": run["op"], "ranks": n, "domains": max(1, n // domain), "per_domain": min(n, domain),
                    "nccl": str(ref.system.get("nccl") or "-").split(" ")[0], "size": int(run["bytes"]),
                    "algorithm": getattr(p, "algorithm", "nvlink-card"), "protocol": p.protocol,
                    "channels": b.get("nccl_channels", "-"), "measured": measured, "predicted": p.busbw_Bps,
                    "error": p.busbw_Bps / measured - 1, "t_meas": int(run["bytes"]) * bus / measured, "t_pred": p.time_s,
                    "binds": str(b.get("binding_limit", "the NVLink card (no breakdown)")), "held_out": ref.held_out(i)})
    return out


def marginal(table: list[dict]) -> list[tuple]:
    """(op, size_lo, size_hi, measured B busbw, predicted B busbw, measured a, predicted a) between consecutive sizes."""
    out = []
    for op in sorted({r["op"] for r in table}):
        rs = sorted((r for r in table if r["op"] == op), key=lambda r: r["size"])
        for lo, hi in itertools.pairwise(rs):
            if hi["size"] <= lo["size"]:
                continue
            bus = _bus_factor(op, hi["ranks"])
            bm = (hi["size"] - lo["size"]) / (hi["t_meas"] - lo["t_meas"]) * bus
            bp = (hi["size"] - lo["size"]) / (hi["t_pred"] - lo["t_pred"]) * bus
            am = lo["t_meas"] - lo["size"] * bus / bm
            ap = lo["t_pred"] - lo["size"] * bus / bp
            out.append((op, lo["size"], hi["size"], bm, bp, am, ap))
    return out


def protocol_arms(path: Path) -> list[str]:
    """A multi-rack file's rows with the ring and tree forced at each protocol the model knows (Simple, LL128)."""
    from simcluster.reference import nccl

    ref = nccl.read_nccl_file(path)
    lines = []
    for run in ref.runs:
        if not run.get("bytes") or int(run["bytes"]) < nccl.MIN_BYTES or nccl._forced(run):
            continue
        cells = []
        for a, p in (("ring", "Simple"), ("ring", "LL128"), ("tree", "Simple"), ("tree", "LL128")):
            _, q = predict_row(ref, run, a, p, version_rule=False)
            cells.append(f"{a}/{p} {(q.busbw_Bps / (float(run['busbw_GBps']) * 1e9) - 1) * 100:+6.1f}%")
        lines.append(f"  {int(run['bytes']) // MIB:6d} MiB  " + "  ".join(cells))
    return lines


def main() -> int:
    files = gb200_files()
    print("# GB200 published nccl rows as `simcluster validate --published nccl` prices them (shipped cards; + = predicted"
          " faster). h: held out (else development).")
    print("# domains x GPUs: NVLink domains (MNNVL cliques or trays) x GPUs in each; ch: the channels NCCL's decision"
          " model gives the call; times per call in ms")
    head = (f"{'file':38s} {'op':10s} {'dom x gpu':>9s} {'nccl':>7s} {'size':>9s} {'alg/proto':18s} {'ch':>3s} "
            f"{'meas':>6s} {'pred':>6s} {'err':>7s} {'t_meas':>7s} {'t_pred':>7s}  h  binding limit")
    print(head)
    shapes = {}
    for path in files:
        table = rows(path)
        for r in table:
            print(f"{r['file'][:38]:38s} {r['op']:10s} {r['domains']:>4d} x {r['per_domain']:<3d} {r['nccl']:>7s} "
                  f"{r['size'] // MIB:>5d} MiB {r['algorithm'] + '/' + r['protocol']:18s} {r['channels']!s:>3s} "
                  f"{r['measured'] / 1e9:6.1f} {r['predicted'] / 1e9:6.1f} {r['error'] * 100:+6.1f}% "
                  f"{r['t_meas'] * 1e3:7.2f} {r['t_pred'] * 1e3:7.2f}  {'h' if r['held_out'] else '-'}  {r['binds'][:70]}")
        shapes[path] = (table, marginal(table))
    print("\n# the shape: T = a + S / B between consecutive sizes, B as busbw (GB/s), a in ms; measured vs predicted")
    for table, m in shapes.values():
        if len(table) < 3:
            continue
        print(f"{table[0]['file']}")
        for op, lo, hi, bm, bp, am, ap in m:
            print(f"  {op:10s} {lo // MIB:6d}-{hi // MIB:<6d} MiB  B measured {bm / 1e9:7.1f}  predicted {bp / 1e9:7.1f} "
                  f"({(bp / bm - 1) * 100:+6.1f}%)   a measured {am * 1e3:6.2f}  predicted {ap * 1e3:6.2f}")
    print("\n# multi-rack files: each size with the algorithm and protocol forced (error %; LL128 priced even where the"
          " file's NCCL does not run it): NCCL <= 2.26 runs no LL128 across GB200 nodes (GPU-NIC path PHB: tuning.cc),"
          " 2.27+ does (P2C, NCCL_LL128_C2C=1)")
    for path in files:
        table = rows(path)
        if table and max(r["domains"] for r in table) > 1 and table[0]["op"] == "all_reduce":
            print(f"{table[0]['file']} (NCCL {table[0]['nccl']})")
            print("\n".join(protocol_arms(path)))
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    raise SystemExit(main())
