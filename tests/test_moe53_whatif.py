"""Session 53 moe53's what-if study (final read 53 item 7, mendF53): its committed output, header line included, is
what the script prints (predictions of published MoE rows with one setting changed, the model unchanged)."""

from __future__ import annotations

from conftest import ROOT, load_script


def test_the_study_prints_its_committed_output(capsys):
    study = load_script("studies/moe53_whatif.py")
    study.main()
    study.alltoall_check()
    assert capsys.readouterr().out == (ROOT / "studies" / "moe53_whatif.txt").read_text()
