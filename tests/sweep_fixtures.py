"""Small sweep scenarios for the sweep and plan tests (cards from the repository's models/, absolute paths)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


def collective_sweep(tmp: Path, nodes=(2, 3, 4), per_node=(1, 2), extra: dict | None = None, name="sweep.yaml") -> Path:
    """A multi-node all_reduce at one size: each point is a few milliseconds."""
    doc = {"name": "test-sweep",
           "machine": {"card": str(MODELS / "collective/h200x4-nvlink.yaml"), "gpus_per_node": 4, "nodes": 2,
                       "nic": {"card": str(MODELS / "nic/roce-400g.yaml"), "per_node": 4},
                       "fabric": {"kind": "leaf-spine", "down_ports": 32, "spines": 4}},
           "jobs": [{"kind": "collective_sweep", "op": "all_reduce", "min_size": "1M", "max_size": "1M"}],
           "sweep": {"keys": {"machine.nodes": list(nodes), "machine.nic.per_node": list(per_node)}}}
    doc.update(extra or {})
    path = tmp / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
