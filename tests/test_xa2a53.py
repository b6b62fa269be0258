"""Session 53 (issues 41 / 44, helper xa2a53): the p5 EFA alltoall's regimes on its development rows. The study prints
its committed output, and NCCL's p2p channel rule it quotes gives the values the findings state."""

from __future__ import annotations

from conftest import ROOT, load_script


def test_the_study_prints_its_committed_output(capsys):
    load_script("studies/xa2a53_regimes.py").main()
    assert capsys.readouterr().out == (ROOT / "studies" / "xa2a53_regimes.txt").read_text()


def test_nccl_2_27_channels_per_net_peer_on_16_p2p_channels():
    """paths.cc (v2.27.7-1): 2, halved while 2 x ranks > 4 x 16 p2p channels: 2 / 2 / 1 / 1 / 1 at 16-256 ranks."""
    study = load_script("studies/xa2a53_regimes.py")
    assert [study.channels_per_peer(n) for n in (16, 32, 64, 128, 256)] == [2, 2, 1, 1, 1]


def test_the_new_rows_are_held_out_and_read_fast():
    """The AWS EP-comparison file's two rows compare held out; the shipped model reads them fast (its first print,
    validation/xa2a53-p5-epbackend-alltoall-predicted-once.txt: +33.0 / +30.2%)."""
    from simcluster.reference.nccl import validate_published_nccl

    rows = [r for r in validate_published_nccl().rows if r.source == "nccl-aws-p5-x4-x8-epbackend-alltoall"]
    assert len(rows) == 2 and all(r.held_out for r in rows)
    assert [round(100 * r.error, 1) for r in rows] == [33.0, 30.2]
