"""Flow model vs SimGrid's flow models (LV08, CM02) at 256 and 512 hosts, where ns-3 is too slow (issue 41 item 5).

    python validation/simgrid_sharing.py [--hosts 256,512] [--patterns ring,ring-strided,tree,incast] [--json]

Both sides run the same flows (simcluster/packet/patterns.py) on the same links: every Platform link a SimGrid link
(SHARED, its capacity, its latency plus the port latency of the switch it enters), every flow routed on the links the
Platform's per-flow ECMP hash gives it (a full zone with one explicit route per flow's host pair). SimGrid's LV08 is
its TCP-calibrated max-min model (bandwidth factor 0.97, latency factor 13.01, Velho and Legrand 2009); CM02 is
plain max-min with no correction (Casanova and Marchal 2002), the closest to the project's flow model. The time
compared is the pattern's completion (its last byte).

SimGrid is not on PyPI as a wheel: `pip install simgrid` builds 370 C++ files (needs boost headers, pybind11 < 3,
wheel, --no-build-isolation), which did not finish in 15 minutes on this project's 2-core machine; Debian's
python3-simgrid (3.32, prebuilt for CPython 3.11) is used instead, found at SIMGRID_PATH (default
/usr/lib/python3/dist-packages) and run in a child process per case (one SimGrid engine per process).
Fabrics: leaf-spine, 16 hosts per leaf, 8 spines, 100 Gb/s, 100 ns links, 600 ns ports, cut-through; 1:1 and 2:1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIMGRID_PATH = os.environ.get("SIMGRID_PATH", "/usr/lib/python3/dist-packages")
MTU = 9000


def platform(hosts: int, oversubscription: float):
    from simcluster.network.builders import FabricSpec, machine_platform

    spec = FabricSpec(hosts, 1, 12.5e9, "leaf-spine", down_ports=16, spines=8, oversubscription=oversubscription,
                      link_latency_s=100e-9, switch_latency_s=600e-9, forwarding="cut-through")
    return machine_platform(hosts, 0, 0.0, spec)


def case(hosts: int, oversubscription: float, pattern: str, flow_bytes: float) -> dict:
    """The flow model's time and the flows, links and routes SimGrid needs."""
    from simcluster.packet import patterns

    plat = platform(hosts, oversubscription)
    t = patterns.traffic(plat, pattern, flow_bytes)
    _, finish = patterns.flow_model(plat, t, MTU)
    r = plat.routes(t.src, t.dst)
    per = plat.per_block
    link_latency = np.zeros(plat.links)
    link_latency[r.link_idx] = per["latency"][r.child_block] + per["switch"][r.into_block]
    used = np.unique(r.link_idx)
    routes = [[int(x) for x in r.link_idx[r.flow_idx == f]] for f in range(len(t.src))]
    return {"hosts": hosts, "oversubscription": oversubscription, "pattern": pattern, "flow_bytes": float(t.nbytes.max()),
            "flows": len(t.src), "model_s": float(finish.max()),
            "links": {int(i): [float(plat.capacity[i]), float(link_latency[i])] for i in used},
            "src": [int(x) for x in t.src], "dst": [int(x) for x in t.dst], "bytes": [float(x) for x in t.nbytes],
            "routes": routes}


def run_simgrid(spec: dict, model: str) -> float:
    """In a child process: the pattern's completion time (s) on SimGrid with network model `model`."""
    sys.path.append(SIMGRID_PATH)
    import simgrid as sg

    e = sg.Engine(["simgrid_sharing", f"--cfg=network/model:{model}", "--log=root.thres:critical"])
    zone = sg.NetZone.create_full_zone("fabric")
    ends = sorted(set(spec["src"]) | set(spec["dst"]))
    host = {v: zone.create_host(f"h{v}", 1e9) for v in ends}
    link = {}
    for i, (cap, lat) in spec["links"].items():
        link[int(i)] = zone.create_link(f"l{i}", cap)
        link[int(i)].set_latency(lat)
        link[int(i)].seal()
    seen = set()
    for s, d, route in zip(spec["src"], spec["dst"], spec["routes"], strict=True):
        if (s, d) in seen:
            continue
        seen.add((s, d))
        zone.add_route(host[s].netpoint, host[d].netpoint, None, None, [sg.LinkInRoute(link[i]) for i in route], False)
    zone.seal()
    done = []

    def starter():
        comms = [sg.Comm.sendto_async(host[s], host[d], int(b)) for s, d, b in zip(spec["src"], spec["dst"], spec["bytes"], strict=True)]
        sg.Comm.wait_all(comms)
        done.append(e.clock)

    sg.Actor.create("starter", host[ends[0]], starter)
    e.run()
    return done[0]


def compare(hosts: int, oversubscription: float, pattern: str, flow_bytes: float) -> dict:
    spec = case(hosts, oversubscription, pattern, flow_bytes)
    row = {k: spec[k] for k in ("hosts", "oversubscription", "pattern", "flow_bytes", "flows", "model_s")}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        for model in ("LV08", "CM02"):
            out = subprocess.run([sys.executable, __file__, "--child", f.name, model], capture_output=True, text=True, timeout=900)
            if out.returncode != 0:
                raise RuntimeError(f"SimGrid failed: {out.stderr.strip().splitlines()[-1:]}")
            t = float(out.stdout.strip().splitlines()[-1])
            row[f"{model}_s"] = t
            row[f"error_vs_{model}_pct"] = (spec["model_s"] / t - 1) * 100
    finally:
        os.unlink(f.name)
    return row


def main(argv=None) -> int:
    from simcluster.script_args import ArgumentParser

    p = ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", default="256,512")
    p.add_argument("--oversubscription", default="1,2")
    p.add_argument("--patterns", default="ring,ring-strided,tree,incast")
    p.add_argument("--size", type=float, default=16 * 2**20, help="bytes per flow")
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(run_simgrid(json.loads(Path(a.child[0]).read_text()), a.child[1]))
        return 0
    rows = []
    for hosts in (int(x) for x in a.hosts.split(",")):
        for over in (float(x) for x in a.oversubscription.split(",")):
            for pattern in a.patterns.split(","):
                row = compare(hosts, over, pattern, a.size)
                rows.append(row)
                print(f"# {hosts} hosts {over:g}:1 {pattern}: model {row['model_s'] * 1e6:.1f} us, LV08 {row['LV08_s'] * 1e6:.1f} "
                      f"({row['error_vs_LV08_pct']:+.1f}%), CM02 {row['CM02_s'] * 1e6:.1f} ({row['error_vs_CM02_pct']:+.1f}%)",
                      file=sys.stderr, flush=True)
    summary = {f"mean_abs_error_vs_{m}_pct": round(float(np.mean([abs(r[f"error_vs_{m}_pct"]) for r in rows])), 2)
               for m in ("LV08", "CM02")}
    if a.json:
        print(json.dumps({"summary": summary, "rows": rows}, indent=1))
    else:
        print(f"{'hosts':>5} {'over':>4} {'pattern':12s} {'flows':>5} {'model us':>10} {'LV08 us':>10} {'err':>7} {'CM02 us':>10} {'err':>7}")
        for r in rows:
            print(f"{r['hosts']:5d} {r['oversubscription']:4g} {r['pattern']:12s} {r['flows']:5d} {r['model_s'] * 1e6:10.1f} "
                  f"{r['LV08_s'] * 1e6:10.1f} {r['error_vs_LV08_pct']:+6.1f}% {r['CM02_s'] * 1e6:10.1f} {r['error_vs_CM02_pct']:+6.1f}%")
        print(f"mean |error| vs LV08 {summary['mean_abs_error_vs_LV08_pct']}%, vs CM02 {summary['mean_abs_error_vs_CM02_pct']}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
