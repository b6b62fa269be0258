"""NVLS inside one NVLink domain larger than a board (issue 41, session 44; collectives/nvls_domain.py): NVLS channels by
NCCL version, NCCL's NVLS chunk rule, the card's carry to counts it lacks, the fitted per-channel ceiling (Blackwell above
8 GPUs only) and the pipeline fill (above 8 GPUs only), the published GB200 racks priced with them, and (session 44 mend,
cold review A44 items 3-4) an 8-GPU board and the in-network node stage priced exactly as before session 44."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT

from simcluster.cards import load_collective, load_nvls
from simcluster.collectives.domain import domain_predict
from simcluster.collectives.nccl_search import NcclTopology, graphs
from simcluster.collectives.nccl_versions import NcclRelease
from simcluster.collectives.nvls_domain import (
    FITTED_LABEL,
    CHANNEL_ALGBW_Bps,
    carried_algbw,
    channel_ceiling_Bps,
    domain_fill_s,
    domain_nvls_rate,
    nvls_channels,
    nvls_chunk_bytes,
    nvls_fill_s,
    nvls_heads,
)
from simcluster.collectives.pipeline_fill import stream_chunk_bytes
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


def test_channel_ceiling_binds_on_blackwell_above_one_board_only():
    """The fitted ceiling applies where it was fitted (a Blackwell domain above 8 GPUs: NVL72-class) and its binding
    label says it is a fit; a Hopper domain above 8 GPUs keeps the card's carried rate (no ceiling)."""
    assert channel_ceiling_Bps(8, 24, "blackwell") == math.inf
    assert channel_ceiling_Bps(16, 24, "blackwell") == 24 * CHANNEL_ALGBW_Bps
    assert channel_ceiling_Bps(32, 16, "hopper") == math.inf
    rate, binds = domain_nvls_rate(TABLE, 72, 32, "blackwell")
    assert rate == 32 * CHANNEL_ALGBW_Bps < TABLE[72] and binds.startswith(FITTED_LABEL) and "32 channels" in binds
    assert "development" in binds and "mechanism unknown" in binds
    rate, binds = domain_nvls_rate(TABLE, 8, 24, "blackwell")
    assert rate == TABLE[8] and "NVLS card" in binds
    rate, binds = domain_nvls_rate(TABLE, 72, 16, "hopper")
    assert rate == TABLE[72] and "fitted" not in binds
    assert domain_nvls_rate(TABLE, 4, 24, "blackwell") is None


def test_channel_rate_is_the_fit_of_the_ladder_with_the_models_own_fill():
    """a_ch (development) solves T = l + (S + 2 C H c) / (C a_ch) at the GB300 ladder's 8 GiB points (16 / 32 / 60 GPUs,
    24 channels): the mean, to 0.1 GB/s. Recomputed from the published files, so a change of the files, the fill or the
    latency that the constant does not follow fails here (cold review A44 item 5: it was taken without the fill)."""
    size, fits = 8 * GiB, []
    for n in (16, 32, 60):
        ref = read_published(PUBLISHED / f"nccl-gb300-nvl72-w{n}-ncclbpf.yaml", "published-nccl-run")
        busbw = next(r["busbw_GBps"] for r in ref.runs if r["bytes"] == size) * 1e9
        t = size / (busbw * n / (2 * (n - 1)))
        chunk = stream_chunk_bytes(nvls_chunk_bytes(size, 24, nvls_heads(n)), size, 24 * nvls_heads(n))
        fits.append((size + 2 * 24 * nvls_heads(n) * chunk) / (24 * (t - LATENCY)))
    assert CHANNEL_ALGBW_Bps == pytest.approx(sum(fits) / 3, abs=0.05e9)
    assert max(fits) - min(fits) < 0.5e9


def test_fill_is_two_loops_and_fades_with_size():
    """Three pipelined warp groups: two loops of C H c at the NVLS rate; the fill's share of the call falls with S."""
    rate = 32 * CHANNEL_ALGBW_Bps
    assert nvls_fill_s(512 * MiB, 32, 32, rate) == pytest.approx(2 * 32 * 32 * 65536 / rate)
    assert nvls_fill_s(1 * MiB, 32, 32, rate) == pytest.approx(2 * MiB / rate)       # a chunk is at most S / (C H)
    shares = [nvls_fill_s(s, 32, 32, rate) / (s / rate) for s in (512 * MiB, 4 * GiB - 1)]
    assert shares[0] > 4 * shares[1]


def test_fill_applies_above_one_board_only():
    """Above 8 GPUs the fill; on a board (8 GPUs, Hopper or Blackwell) none (no 8-GPU row tested it)."""
    assert domain_fill_s(16 * MiB, 8, 16, 275e9) == 0.0
    assert domain_fill_s(16 * MiB, 16, 24, 350e9) == nvls_fill_s(16 * MiB, 24, 16, 350e9) > 0


def test_one_domain_time_is_latency_rate_and_fill_with_the_domains_nccl():
    intra = load_collective(MODELS / "collective" / "gb200-nvlink-derived.yaml")[0]
    size = 2 * GiB
    old = domain_predict(intra, "all_reduce", size, 72, "blackwell", (TABLE, LATENCY), NcclRelease((2, 25)))
    new = domain_predict(intra, "all_reduce", size, 72, "blackwell", (TABLE, LATENCY), NcclRelease((2, 29)))
    assert old.breakdown["nccl_channels"] == 32 and new.breakdown["nccl_channels"] == 24
    assert old.breakdown["binding_limit"].startswith(FITTED_LABEL)
    assert old.time_s < new.time_s


# d39e0960 (before session 44), printed by the commands below run in a checkout of d39e0960 with the scenarios
# _scenario writes below, paths pointed at the d39e0960 copy (docs/models/fabric-findings.md, session 44 mend):
#   python -m simcluster predict collective --scenario S --op all_reduce -b 16M -e 64M -f 4 [--algorithm in-network]
# 1 node x 8 H200, h100-nvls card: 16 MiB 71.01 us (busbw 413.48 GB/s), 64 MiB 254.03 us (462.31)
# 16 nodes x 8 H200, 8 x NDR 400G, sharp-quantum2-400g, in-network: 16 MiB 85.21 us (390.71), 64 MiB 268.23 us (496.46)
BEFORE_SESSION44_US = {"board": (71.01, 254.03), "in-network": (85.21, 268.23)}


def _scenario(tmp_path, nodes: int, extra: dict):
    import yaml

    m = {"card": str(MODELS / "collective" / "h200x4-nvlink.yaml"), "gpu": {"card": str(MODELS / "gpu" / "h200-sxm.yaml")},
         "gpus_per_node": 8, "nodes": nodes, "nvls": {"card": str(MODELS / "nvswitch" / "h100-nvls.yaml")}, **extra}
    path = tmp_path / f"s{nodes}.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "machine": m, "jobs": [{"kind": "collective_sweep", "op": "all_reduce",
                                                                         "min_size": "16M", "max_size": "64M"}]}))
    return str(path)


@pytest.mark.parametrize("what", ["board", "in-network"])
def test_hopper_board_and_in_network_node_stage_price_as_before_session_44(tmp_path, what):
    """Cold review A44 item 4: the fill and the ceiling above 8 GPUs only, so a one-node 8 x H200 NVLS all_reduce and the
    in-network node stage on 8-GPU nodes print what d39e0960 printed (to the printed 0.01 us)."""
    from simcluster.predict_collective import sweep_from_scenario

    if what == "board":
        path, algorithm = _scenario(tmp_path, 1, {}), None
    else:
        extra = {"nic": {"card": str(MODELS / "nic" / "ib-ndr-400g.yaml"), "per_node": 8}, "fabric": {"kind": "rail-optimized"},
                 "aggregation": {"card": str(MODELS / "switch" / "sharp-quantum2-400g.yaml")}}
        path, algorithm = _scenario(tmp_path, 16, extra), "in-network"
    (result,) = sweep_from_scenario(path, "all_reduce", "16M", "64M", 4, algorithm)
    assert [round(p.time_s * 1e6, 2) for p in result.predictions] == list(BEFORE_SESSION44_US[what])
    assert [p.algorithm for p in result.predictions] == ["nvls" if what == "board" else "in-network"] * 2
    assert not any("NVLS on" in n for n in result.notes)          # nothing above 8 GPUs to note


def test_a_hopper_domain_above_8_gpus_takes_no_ceiling_and_is_noted_unmeasured(tmp_path):
    """Cold review A44 item 3: a 32-GPU Hopper NVLink domain is priced on the card's carried rate (no Blackwell fit), and
    predict collective says, in text and --json, that the price above 8 GPUs is unmeasured."""
    import json

    from simcluster.predict_collective import sweep_from_scenario

    path = _scenario(tmp_path, 4, {"nvlink_domain": 32})
    (result,) = sweep_from_scenario(path, "all_reduce", "1G", "1G", 2, None)
    (p,) = result.predictions
    assert p.algorithm == "nvls" and "fitted" not in p.breakdown["binding_limit"]
    assert p.breakdown["nvls_algbw_Bps"] == pytest.approx(carried_algbw(load_nvls(MODELS / "nvswitch" / "h100-nvls.yaml")[0], 32))
    (note,) = [n for n in result.notes if "NVLS on 32 GPUs" in n]
    assert "unmeasured above 8 GPUs" in note and "extrapolated" in note
    assert note in json.loads(json.dumps(result.to_json()))["notes"]


def test_a_blackwell_rack_names_the_fit_in_its_note(tmp_path):
    """Where the ceiling applies (the GB300 16-GPU proxy scenario), the note says it is a fit on development rows."""
    from simcluster.predict_collective import sweep_from_scenario

    (result,) = sweep_from_scenario(str(ROOT / "scenarios/published/gb300-nvl72-w16-ncclbpf.yaml"), "all_reduce", "8G", "8G", 2,
                                    None)
    assert result.predictions[0].breakdown["binding_limit"].startswith(FITTED_LABEL)
    assert any("fitted on GB300 NVL72" in n and "development" in n for n in result.notes)


def test_published_rack_runs_the_channels_of_its_stated_nccl():
    """The CoreWeave rack states NCCL 2.25.1 (its job script): 32 NVLS channels, its rows NVLS and development (in view
    when the ceiling was adopted: no accuracy is asserted on them here)."""
    rows = system_rows(read_published(PUBLISHED / "nccl-gb200-nvl72-coreweave.yaml", "published-nccl-run"))
    assert [r.detail for r in rows] == ["nvls/Simple"] * 5 and not any(r.held_out for r in rows)


def test_two_racks_nvls_tree_domain_term_is_under_the_ceiling():
    """Across cliques NCCL runs 32 NVLS channels (any version): the 64-GPU domain's NVLS term is 32 x a_ch."""
    machine = load_variants(ROOT / "scenarios" / "published" / "gb200-nvl72-2racks-coreweave.yaml", None)[0][1].machine
    assert build_cluster(machine).nvls[0] == pytest.approx(32 * CHANNEL_ALGBW_Bps)   # outside the fit's range (one clique)


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
