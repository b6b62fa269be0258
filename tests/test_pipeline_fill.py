"""The tree pipelines' fill (collectives/pipeline_fill.py): NCCL's chunk rules and the sum - max of a pipeline's
stages, and what it does to a multi-node all_reduce on a shipped scenario."""

from __future__ import annotations

import pytest
from conftest import ROOT

from simcluster import scenario
from simcluster.collectives import pipeline_fill as pf
from simcluster.collectives.fabric import predict_fabric
from simcluster.machine_models import build_cluster

MiB = 2**20


def test_chunks_follow_nccl_calc_coll_chunking():
    # Simple: a tree's chunk is one 512 KiB step at every size; LL half of its 64 KiB step
    assert pf.tree_chunk_bytes("Simple", 64 * MiB, 8, 2, 16) == 512 * 1024
    assert pf.tree_chunk_bytes("LL", 64 * MiB, 8, 2, 16) == 32 * 1024
    # LL128: 614,400-byte step x 15/16 = 576,000; 2 nodes x 8: steps 2.8, halve while < 22.4 chunks per channel
    assert pf.tree_chunk_bytes("LL128", 8 * 1024 * MiB, 8, 2, 16) == 576000
    assert pf.tree_chunk_bytes("LL128", 64 * MiB, 8, 2, 16) == 288000          # 14 chunks -> halved once: 29
    # 1 MiB: the first rule stops at 72,000 (under 128 KiB), the second halves while above 32 KiB: 36,000, 18,000
    assert pf.tree_chunk_bytes("LL128", 1 * MiB, 8, 2, 16) == 18000
    # NVLS tree: 128 KiB below 4 nodes, 64 KiB from 4; halved under 4 / 1 x channels x heads x chunk
    assert pf.nvls_tree_chunk_bytes(1024 * MiB, 16, 8, 2) == 128 * 1024
    assert pf.nvls_tree_chunk_bytes(1024 * MiB, 16, 8, 4) == 64 * 1024
    assert pf.nvls_tree_chunk_bytes(32 * MiB, 16, 8, 2) == 64 * 1024          # 32 MiB < 4 x 128 x 128 KiB
    assert pf.nvls_tree_chunk_bytes(8 * MiB, 16, 8, 2) == 64 * 1024           # not under 1 x 128 x 64 KiB
    assert pf.nvls_tree_chunk_bytes(4 * MiB, 16, 8, 2) == 32 * 1024


def test_fill_is_every_stage_but_the_slowest():
    assert pf.fill_s([]) == 0.0
    assert pf.fill_s([1.0, 3.0, 2.0]) == pytest.approx(3.0)
    stages = pf.tree_stages_s(1000.0, 4, 5, 14, 1e-9, 2e-9)              # 5 nodes: depth 3 each way
    assert len(stages) == 14 + 6
    assert stages[0] == pytest.approx(4e-6) and stages[-1] == pytest.approx(8e-6)


def test_tree_fill_is_a_fixed_time_that_fades_with_size():
    """On a shipped 2-node A100 EFA scenario the tree's fill is a bounded time (NCCL's chunks never grow with the
    size: LL128's shrink at 64 MiB, Simple's 512 KiB above), so the fraction of the call it costs falls as the size
    grows; the ring has none."""
    cluster = build_cluster(scenario.load(ROOT / "scenarios" / "published" / "aws-p4de-24xlarge-x2.yaml").machine)
    small = predict_fabric(cluster, "all_reduce", 64 * MiB, algorithm="tree")
    large = predict_fabric(cluster, "all_reduce", 1024 * MiB, algorithm="tree")
    ring = predict_fabric(cluster, "all_reduce", 64 * MiB, algorithm="ring")
    f_small, f_large = small.breakdown["pipeline_fill_s"], large.breakdown["pipeline_fill_s"]
    assert 0 < f_small <= f_large
    assert f_small / small.time_s > 5 * f_large / large.time_s
    assert "pipeline_fill_s" not in ring.breakdown
