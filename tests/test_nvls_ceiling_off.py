"""studies/nvls_ceiling_off.py: the NVLS-domain ceiling's counterfactual on OCI's GB200 rack, cited by collectives.md
(review A49 finding 8): it prints its committed output, moves only the ceiling's rows, and restores a_ch."""

from __future__ import annotations

import math

from conftest import ROOT, load_script

from simcluster.collectives import nvls_domain


def test_the_study_prints_its_committed_output_and_restores_the_ceiling(capsys):
    study = load_script("studies/nvls_ceiling_off.py")
    a_ch = nvls_domain.CHANNEL_ALGBW_Bps
    study.main()
    assert capsys.readouterr().out == (ROOT / "studies" / "nvls_ceiling_off.txt").read_text()
    assert nvls_domain.CHANNEL_ALGBW_Bps == a_ch
    shipped, removed = study.all_reduce_rows(a_ch), study.all_reduce_rows(math.inf)
    assert len(shipped) == 2 and all(b.predicted > a.predicted for a, b in zip(shipped, removed, strict=True))   # the ceiling binds
