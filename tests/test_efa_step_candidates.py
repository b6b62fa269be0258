"""The session-29 EFA per-step candidates (validation/efa_step_candidates.py): scored on a temporary copy of the cards,
scenarios and published files, so k = 1 must reproduce the repository's own held-out table, and k = 2 must reach the
model (the multi-node HyperPod rows move) while the shipped cards stay untouched."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "validation"))

import efa_step_candidates  # noqa: E402

from simcluster.reference.nccl_held_out import held_out_systems  # noqa: E402


def test_k1_reproduces_the_repository_and_k2_moves_the_multi_node_rows():
    cards = {c: (ROOT / "models" / "nic" / f"{c}.yaml").read_text() for c in efa_step_candidates.EFA_CARDS}
    shipped, held, within, systems = efa_step_candidates.score(1.0)
    repo = {r.system.removeprefix("nccl-"): r for r in held_out_systems()}
    assert held == {s: repo[s].held_out_pct for s in held} and len(held) >= 8
    assert shipped == {s: repo[s].shipped_pct for s in held}
    assert within == sum(r.held_out_pct <= 10.0 for r in repo.values()) and systems == len(repo)
    shipped2, _, _, _ = efa_step_candidates.score(2.0)
    assert shipped2["aws-p5-hyperpod-x2-x32-gpucomm"] < shipped["aws-p5-hyperpod-x2-x32-gpucomm"] - 5.0
    assert cards == {c: (ROOT / "models" / "nic" / f"{c}.yaml").read_text() for c in efa_step_candidates.EFA_CARDS}
