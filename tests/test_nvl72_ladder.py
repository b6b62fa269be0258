"""NVLink domains larger than 8 GPUs (issue 41, session 43): the GB300 NVL72 ladder (4-60 GPUs in one domain,
datacrunch-research/nccl-eBPF), the NVLS channels each NCCL version runs, and what the ladder says about the NVLS
card's carry from 8 GPUs (studies/nvl72_domain_ladder.py)."""

from __future__ import annotations

import pytest
from conftest import ROOT, load_script

from simcluster.collectives.nccl_search import NcclTopology, graphs
from simcluster.published import read_published
from simcluster.reference.nccl import system_rows

STUDY = load_script("studies/nvl72_domain_ladder.py")
LADDER = {n: ROOT / "calibration" / "published" / f"nccl-gb300-nvl72-w{n}-ncclbpf.yaml" for n in (4, 8, 16, 32, 60)}


def test_nvls_channels_follow_the_nccl_version_and_agree_with_the_search():
    """nvls.cc: 32 NVLS channels on Blackwell up to 2.26; from 2.27 24 on one node / MNNVL clique, 32 across cliques.
    The model's search (NCCL 2.28 facts) gives the 2.27+ counts."""
    assert [STUDY.nvls_channels(v) for v in ("2.25.1", "2.26.6", "2.27.3", "2.29.7")] == [32, 32, 24, 24]
    assert STUDY.nvls_channels("2.29.7", one_clique=False) == 32
    assert graphs(NcclTopology("blackwell", 16, 1, nvls=True))["nvls_channels"] == STUDY.nvls_channels("2.28.3")


def test_ladder_files_are_one_domain_one_source_and_not_in_the_published_check():
    """GB300 has no card: validate --published nccl does not predict the files (the session 19 / 31 rule); the study
    compares them on the GB200 cards through its proxy scenarios. The 8-60 GPU files are development since session 44
    (the NVLS per-channel ceiling was taken from them); the 4-GPU ring stays held out."""
    for n, path in LADDER.items():
        ref = read_published(path, "published-nccl-run")
        assert ref.system["nodes"] * ref.system["gpus_per_node"] == n
        assert ref.usage["held_out"] is (n == 4) and ref.usage["source_group"] == "gb300-nvl72-ncclbpf"
        assert n == 4 or ref.usage["why"].startswith("development since session 44")
        assert all(r["busbw_GBps"] > 0 and r["bytes"] >= 64 * 2**20 for r in ref.runs)
        assert ref.file("scenario") is None and "no GB300 card" in ref.usage["not_predicted"] and system_rows(ref) == []
        assert STUDY.read(path.stem).file("scenario").is_file()


def test_no_carry_law_from_8_gpus_fits_the_ladder_above_8():
    """The 8 GiB plateau falls from 836 GB/s at 8 GPUs to 645-689 at 16-60: the card's bytes law (rising), busbw
    constant in n and the switch-adder law (falling as 1/(n - 1)) each miss some rung by more than 20%."""
    lines = {r["ranks"]: r for r in STUDY.ladder() if r["file"].startswith("nccl-gb300")}
    measured = [lines[n]["busbw"] for n in STUDY.LADDER]
    assert lines[8]["busbw"] > 1.2 * max(measured)
    for law, values in STUDY.laws_at(lines[8]["busbw"]).items():
        worst = max(abs(v / m - 1) for v, m in zip(values, measured, strict=True))
        assert worst > 0.20, law
    assert STUDY.laws_at(836e9)["bytes"][0] > STUDY.laws_at(836e9)["busbw"][0] > STUDY.laws_at(836e9)["adder"][0]


def test_counts_the_nvls_card_lacks_run_nvls_carried_and_under_the_channel_ceiling():
    """The NVL72 NVLS card holds rates at 8, 36, 64 and 72 GPUs; at 16 / 32 / 60, where NCCL ran NVLS (the source), the
    model now runs NVLS too (session 44: the card's law carried from 8 GPUs, under 24 channels x a_ch). Not an accuracy
    check (a_ch was fitted on these three 8 GiB points: development): that the fit was solved with the model's own fill,
    so its residuals straddle zero (+2.0 / -1.2 / -1.0%) instead of all falling on one side (-0.0 / -3.2 / -3.0% when
    a_ch was taken without the fill; cold review A44 item 5)."""
    plateau = []
    for n in (8, 16, 32, 60):
        rows = system_rows(STUDY.read(LADDER[n].stem))
        assert rows and all(r.detail.startswith("nvls/") for r in rows), n
        plateau.append(rows[-1].error)
    fitted = plateau[1:]
    assert min(fitted) < 0 < max(fitted) and abs(sum(fitted) / 3) < 0.005


def test_predict_collective_names_no_stand_in_where_the_card_law_carries():
    """predict collective on a 16-GPU NVL72 sub-domain runs NVLS (carried from the card's 8 GPUs) and so adds no
    stand-in note; below the card's smallest count (7 GPUs, where NCCL's decision model picks NVLS from 64 MiB) NCCL's
    NVLS is still priced as the NVLink card and nvls_unpriced says so."""
    from simcluster.collectives.domain import NvlinkDomain
    from simcluster.predict_collective import sweep_from_scenario

    (w16,) = sweep_from_scenario(str(ROOT / "scenarios/published/gb300-nvl72-w16-ncclbpf.yaml"), "all_reduce", "64M", "8G", 2,
                                 None)
    assert not any("NCCL runs NVLS" in n for n in w16.notes)
    assert any("fitted on GB300 NVL72" in n for n in w16.notes)       # the fit is named (cold review A44 item 3)
    assert all(p.algorithm == "nvls" for p in w16.predictions)
    assert w16.predictions[-1].busbw_Bps == pytest.approx(658.0e9, rel=2e-3)   # 8 GiB, as the study's (development)
    domain = NvlinkDomain(None, 7, "blackwell", ({8: 466e9}, 10e-6))
    assert domain.nvls_unpriced("all_reduce", [2**20, 2**30]) == [2**30]     # NCCL's ring at 1 MiB
    assert domain.nvls_unpriced("all_reduce", [2**30], 16) == []
