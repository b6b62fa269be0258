"""NVLS inside one NVLink domain larger than a board (issue 41, session 44; collectives/nvls_domain.py): NVLS channels by
NCCL version, NCCL's NVLS chunk rule, the card's carry to counts it lacks, the per-channel ceiling above 8 GPUs, the
pipeline fill, and the published GB200 racks priced with them."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT

from simcluster.cards import load_collective, load_nvls
from simcluster.collectives.domain import domain_predict
from simcluster.collectives.nccl_search import NcclTopology, graphs
from simcluster.collectives.nvls_domain import (
    CHANNEL_ALGBW_Bps,
    carried_algbw,
    channel_ceiling_Bps,
    domain_nvls_rate,
    nvls_channels,
    nvls_chunk_bytes,
    nvls_fill_s,
)
from simcluster.machine_models import build_cluster
from simcluster.published import read_published
from simcluster.reference.nccl import system_rows
from simcluster.scenario import load_variants

MODELS = ROOT / "models"
PUBLISHED = ROOT / "calibration" / "published"
TABLE, LATENCY, _ = load_nvls(MODELS / "nvswitch" / "gb200-nvl72-nvls-derived.yaml")
MiB, GiB = 2**20, 2**30


def test_nvls_channels_follow_nccl_version_and_clique():
    """nvls.cc at each tag: Blackwell 32 up to 2.26, 24 from 2.27 on one clique (32 across cliques); Hopper 16. The
    model's own version (None) agrees with the search's count."""
    assert [nvls_channels("blackwell", v, True) for v in ((2, 25), (2, 26), (2, 27), (2, 29))] == [32, 32, 24, 24]
    assert nvls_channels("blackwell", (2, 29), one_clique=False) == 32
    assert nvls_channels("hopper", (2, 29), True) == 16
    assert nvls_channels("blackwell", None, True) == graphs(NcclTopology("blackwell", 72, 1, nvls=True))["nvls_channels"]


def test_nvls_chunk_follows_nccls_rule():
    """enqueue.cc (NCCL_ALGO_NVLS): 128 KiB, cut to 64 / 32 / 16 KiB while S < 64 / 8 / 2 x C H c."""
    ops = 32 * 32                                     # 72 GPUs on NCCL 2.25: 32 channels x 32 heads
    assert nvls_chunk_bytes(8 * GiB, 32, 32) == 131072           # 8 GiB = 64 x ops x 128 KiB: not below
    assert nvls_chunk_bytes(8 * GiB - 1, 32, 32) == 65536
    assert nvls_chunk_bytes(512 * MiB, 32, 32) == 65536          # = 8 x ops x 64 KiB: not below
    assert nvls_chunk_bytes(256 * MiB, 32, 32) == 32768
    assert nvls_chunk_bytes(2 * ops * 32768 - 1, 32, 32) == 16384


def test_card_law_carries_upwards_only():
    """At a card count the card's own rate; between counts the heads law from the nearest lower one; below the
    smallest none (the NVLink card prices it)."""
    assert carried_algbw(TABLE, 72) == TABLE[72]
    assert carried_algbw(TABLE, 16) == pytest.approx(466e9 * (9 / 8) / (17 / 16))
    assert carried_algbw(TABLE, 40) == pytest.approx(TABLE[36])        # heads capped at 32 from 32 GPUs
    assert carried_algbw(TABLE, 7) is None


def test_channel_ceiling_binds_above_one_board_only():
    assert channel_ceiling_Bps(8, 24) == math.inf
    assert channel_ceiling_Bps(16, 24) == 24 * CHANNEL_ALGBW_Bps
    rate, binds = domain_nvls_rate(TABLE, 72, 32)
    assert rate == 32 * CHANNEL_ALGBW_Bps < TABLE[72] and "32 channels" in binds
    rate, binds = domain_nvls_rate(TABLE, 8, 24)
    assert rate == TABLE[8] and "NVLS card" in binds
    assert domain_nvls_rate(TABLE, 4, 24) is None


def test_fill_is_two_loops_and_fades_with_size():
    """Three pipelined warp groups: two loops of C H c at the NVLS rate; the fill's share of the call falls with S."""
    rate = 32 * CHANNEL_ALGBW_Bps
    assert nvls_fill_s(512 * MiB, 32, 32, rate) == pytest.approx(2 * 32 * 32 * 65536 / rate)
    assert nvls_fill_s(1 * MiB, 32, 32, rate) == pytest.approx(2 * MiB / rate)       # a chunk is at most S / (C H)
    shares = [nvls_fill_s(s, 32, 32, rate) / (s / rate) for s in (512 * MiB, 4 * GiB - 1)]
    assert shares[0] > 4 * shares[1]


def test_one_domain_time_is_latency_rate_and_fill_with_the_domains_nccl():
    intra = load_collective(MODELS / "collective" / "gb200-nvlink-derived.yaml")[0]
    size = 2 * GiB
    old = domain_predict(intra, "all_reduce", size, 72, "blackwell", (TABLE, LATENCY), (2, 25))
    new = domain_predict(intra, "all_reduce", size, 72, "blackwell", (TABLE, LATENCY), (2, 29))
    assert old.breakdown["nccl_channels"] == 32 and new.breakdown["nccl_channels"] == 24
    for p, c in ((old, 32), (new, 24)):
        rate = c * CHANNEL_ALGBW_Bps
        assert p.time_s == pytest.approx(LATENCY + size / rate + nvls_fill_s(size, c, 32, rate))
    assert old.time_s < new.time_s


def test_published_rack_runs_the_channels_of_its_stated_nccl():
    """The CoreWeave rack states NCCL 2.25.1 (its job script): 32 NVLS channels; its 4-8 GiB rows within 7%
    (development: the rows were in view when the ceiling was adopted, docs/models/fabric-findings.md, session 44)."""
    rows = system_rows(read_published(PUBLISHED / "nccl-gb200-nvl72-coreweave.yaml", "published-nccl-run"))
    assert [r.detail for r in rows] == ["nvls/Simple"] * 5 and not any(r.held_out for r in rows)
    assert all(abs(r.error) < 0.07 for r in rows[3:])


def test_two_racks_nvls_tree_domain_term_is_under_the_ceiling():
    """Across cliques NCCL runs 32 NVLS channels (any version): the 64-GPU domain's NVLS term is 32 x a_ch."""
    machine = load_variants(ROOT / "scenarios" / "published" / "gb200-nvl72-2racks-coreweave.yaml", None)[0][1].machine
    assert build_cluster(machine).nvls[0] == pytest.approx(32 * CHANNEL_ALGBW_Bps)


def test_an_nvls_card_without_a_rate_at_or_below_the_domain_is_a_one_line_error(tmp_path):
    """A 4-GPU NVLink domain with the H100 NVLS card (rates at 5-8 GPUs): nothing to carry from, so the machine is
    refused in one line naming the card, never priced silently."""
    import yaml

    from simcluster.errors import ModelCardError

    m = {"card": str(MODELS / "collective" / "h200x4-nvlink.yaml"), "gpus_per_node": 4, "nodes": 2,
         "nvls": {"card": str(MODELS / "nvswitch" / "h100-nvls.yaml")},
         "nic": {"card": str(MODELS / "nic" / "roce-400g.yaml"), "per_node": 4}, "fabric": {"kind": "rail-optimized"}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "machine": m, "jobs": [{"kind": "collective_sweep", "op": "all_reduce",
                                                                         "min_size": "1G", "max_size": "1G"}]}))
    with pytest.raises(ModelCardError) as exc:
        build_cluster(load_variants(path, None)[0][1].machine)
    line = exc.value.one_line()
    assert "no NVLS bandwidth for 4 GPUs" in line and "h100-nvls.yaml" in line and "\n" not in line
