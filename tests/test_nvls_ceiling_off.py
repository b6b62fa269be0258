"""studies/nvls_ceiling_off.py: the NVLS-domain ceiling's counterfactual on OCI's GB200 rack, cited by collectives.md
(review A49 finding 8): it prints its committed output, moves only the ceiling's rows, and leaves a_ch as fitted outside its context."""

from __future__ import annotations

import math

from conftest import ROOT, load_script

from simcluster.collectives import nvls_domain


def test_the_study_prints_its_committed_output_and_restores_the_ceiling(capsys):
    study = load_script("studies/nvls_ceiling_off.py")
    a_ch = nvls_domain.CHANNEL_ALGBW_Bps
    study.main()
    assert capsys.readouterr().out == (ROOT / "studies" / "nvls_ceiling_off.txt").read_text()
    assert nvls_domain.CHANNEL_ALGBW_Bps == nvls_domain.channel_algbw_Bps() == a_ch
    shipped, removed = study.all_reduce_rows(a_ch), study.all_reduce_rows(math.inf)
    assert len(shipped) == 2 and all(b.predicted > a.predicted for a, b in zip(shipped, removed, strict=True))   # the ceiling binds


def test_the_counterfactual_is_a_context_that_rebinds_nothing():
    """nvls_domain.channel_algbw_as prices a_ch inside its block only (the ceiling C x a_ch, and the label that names
    it), restores it after an exception, and never rebinds the module's CHANNEL_ALGBW_Bps."""
    fitted = nvls_domain.CHANNEL_ALGBW_Bps
    assert nvls_domain.channel_ceiling_Bps(16, 24, "blackwell") == 24 * fitted
    with nvls_domain.channel_algbw_as(10e9):
        assert nvls_domain.CHANNEL_ALGBW_Bps == fitted and nvls_domain.channel_algbw_Bps() == 10e9
        assert nvls_domain.channel_ceiling_Bps(16, 24, "blackwell") == 24 * 10e9
        assert nvls_domain.domain_nvls_rate({8: 1e12}, 16, 24, "blackwell")[1].endswith("24 channels x 10 GB/s")
        with nvls_domain.channel_algbw_as(math.inf):
            assert nvls_domain.channel_ceiling_Bps(16, 24, "blackwell") == math.inf
        assert nvls_domain.channel_algbw_Bps() == 10e9
    try:
        with nvls_domain.channel_algbw_as(1.0):
            raise RuntimeError
    except RuntimeError:
        pass
    assert nvls_domain.channel_algbw_Bps() == fitted and nvls_domain.channel_ceiling_Bps(16, 24, "blackwell") == 24 * fitted
