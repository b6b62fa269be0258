"""Flow model vs packet level (ns-3) on 16- to 64-host fabrics, 1:1 and 2:1, every traffic pattern.

    python studies/packet_level.py [--fabrics ls16,ls64,rail32] [--patterns ring,incast] [--sizes 1MiB,16MiB] [--json]

Needs the `packet` extra (pip install -e '.[packet]'). The fabrics (100 Gb/s links, 100 ns per link, 600 ns per
switch port, store-and-forward as ns-3's routers are):
  ls16    16 hosts, 4 per leaf, 4 spines: 4 uplinks of 100G (1:1) or 2 (2:1)
  ls64    64 hosts, 16 per leaf, 8 spines: 8 uplinks of 200G (1:1) or 100G (2:1)
  rail32  16 nodes x 2 NICs, rail-optimized, 8 NICs per leaf, 4 spines
Each at 1:1 and 2:1. The alltoall runs at the smallest size only (16 hosts at 16 MiB per flow: 240 flows, ten minutes
of ns-3 on this project's 2-core machine).
"""

from __future__ import annotations

import json
import sys

from simcluster.network.builders import FabricSpec, machine_platform
from simcluster.packet.compare import PacketValidation, compare
from simcluster.packet.patterns import PATTERNS
from simcluster.script_args import ArgumentParser
from simcluster.units import parse_size

FABRICS = {"ls16": (16, 1, "leaf-spine", 4, 4), "ls64": (64, 1, "leaf-spine", 16, 8), "rail32": (16, 2, "rail-optimized", 8, 4)}


def platform(name: str, oversubscription: float, forwarding: str = "store-and-forward"):
    nodes, nics, kind, ports, spines = FABRICS[name]
    spec = FabricSpec(nodes, nics, 12.5e9, kind, down_ports=ports, spines=spines, oversubscription=oversubscription,
                      link_latency_s=100e-9, switch_latency_s=600e-9, forwarding=forwarding)
    return machine_platform(nodes, 0, 0.0, spec)


def main(argv=None) -> int:
    p = ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fabrics", default="ls16,ls64,rail32")
    p.add_argument("--oversubscription", default="1,2")
    p.add_argument("--patterns", default=",".join(PATTERNS))
    p.add_argument("--sizes", default="1MiB,16MiB")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    out = PacketValidation("studies/packet_level.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    for name in a.fabrics.split(","):
        for over in (float(x) for x in a.oversubscription.split(",")):
            plat = platform(name, over)
            for pattern in a.patterns.split(","):
                for size in sizes:
                    if pattern == "alltoall" and size > min(sizes):
                        continue   # 16 MiB per flow: 10 minutes for 240 flows here
                    row = compare(plat, f"{name} {over:g}:1", pattern, size, over)
                    out.rows.append(row)
                    print(f"# {row.fabric} {row.pattern} {size / 2**20:g}MiB model {row.model_s * 1e6:.1f} us ns-3 "
                          f"{row.packet_s * 1e6:.1f} us {row.error_pct:+.1f}% ({row.ns3_wall_s:.0f} s)", file=sys.stderr, flush=True)
    sys.stdout.write(json.dumps(out.to_json(), indent=1) + "\n" if a.json else out.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
