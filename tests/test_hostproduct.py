"""Session 44 (hostproduct): the product's ckpt and op host terms are the mean of the leases' own fits, each taken at the
product folder's host speed (leases.yaml scaled_to: single, llm/eager.lease_scaling); FALLBACK only where no lease
measured the mode; and the hostsingle set's rows in the error bands (heldout/eager_hostsingle)."""

from __future__ import annotations

import math
import shutil
from collections import Counter

import pytest
import yaml
from conftest import ROOT

from simcluster.errors import SimclusterError
from simcluster.heldout.eager import MODE_HOST
from simcluster.llm import eager
from simcluster.llm.spec import ParallelSpec

HOSTSINGLE = ROOT / "calibration" / "h200x2-hostsingle-2026-11-30"


def test_the_products_op_and_ckpt_terms_are_the_leases_fits_at_the_products_host_speed():
    fits = eager.fit_modes(MODE_HOST)
    assert eager.lease_scaling(MODE_HOST) == {"ckpt": "single", "op": "single"}
    for mode, kinds in (("op", {"h200x1", "h200x2"}), ("ckpt", {"h200x1"})):
        leases = eager.lease_fits(MODE_HOST, mode)
        # the machine kind of each lease (1 x H200: 16 vCPUs, a slower host core; 2 x H200: 32 vCPUs)
        assert len(leases) == 2 and {str(path.relative_to(ROOT / "calibration"))[:6] for path, _ in leases} == kinds
        ratios = []
        with eager.leases_unread():
            for path, (c, _, _) in leases:
                ratios.append(c / eager.fit_modes(path)["single"][0])   # over the lease's own single fit
        # the physical premise: the mode's cost over single's is a property of the software, not of the lease's host
        assert max(ratios) / min(ratios) < 1.1, (mode, ratios)
        assert fits[mode][0] == pytest.approx(fits["single"][0] * sum(ratios) / len(ratios), rel=1e-9)
    # the figures leases.yaml and the docs state (us per kernel): op 55.9, ckpt 31.6 at the pooled single's 24.7
    assert (round(fits["single"][0] * 1e6, 1), round(fits["op"][0] * 1e6, 1), round(fits["ckpt"][0] * 1e6, 1)) == (24.7, 55.9, 31.6)


def test_fallback_only_where_no_lease_measured_the_mode():
    fits = eager.fit_modes(MODE_HOST)
    assert eager.fitted_mode("op", fits) == "op" and eager.fitted_mode("ckpt", fits) == "ckpt"
    op = eager.torch_framework(ParallelSpec(recompute="op"), fits)
    assert op.host_bwd_kernel_s > 0   # its own fit: priced per phase (caveats.sac_op_host's measured text)
    with eager.leases_unread(("ckpt", "op")):   # the product before: op -> ckpt -> single
        before = eager.fit_modes(MODE_HOST)
        assert "op" not in before and "ckpt" not in before and before["single"] == fits["single"]
        assert eager.fitted_mode("op", before) == "single"
    with eager.leases_unread():
        assert eager.fitted_mode("op", eager.fit_modes(MODE_HOST)) == "single"
    assert eager.fitted_mode("op", eager.fit_modes(ROOT / "calibration" / "h200x2-llm-host-2026-11-27")) == "single"


def test_a_scaled_entry_names_a_plain_mode_and_leases_with_that_modes_runs(tmp_path):
    folder = tmp_path / "product"
    shutil.copytree(MODE_HOST, folder, ignore=shutil.ignore_patterns("leases.yaml"))
    lease = ROOT / "calibration" / "h200x1-llm-diag-2026-11-29" / "host"
    no_single = tmp_path / "nosingle"
    no_single.mkdir()
    for p in lease.glob("op-L*.json"):
        shutil.copy(p, no_single / p.name)
    good = {"single": [".", str(ROOT / "calibration" / "h200x2-llm-host-2026-11-27")],
            "op": {"scaled_to": "single", "leases": [str(lease), str(HOSTSINGLE / "runs" / "host")]}}
    (folder / "leases.yaml").write_text(yaml.safe_dump(good))
    assert eager.fit_modes(folder)["op"][0] > eager.fit_modes(folder)["single"][0] * 2
    for bad, match in (({"scaled_to": "fsdp", "leases": good["op"]["leases"]}, "scaled_to: a mode listed here"),
                       ({"scaled_to": "single", "folders": good["op"]["leases"]}, "scaled_to: a mode listed here"),
                       ({"scaled_to": ["single"], "leases": good["op"]["leases"]}, "scaled_to: a mode listed here"),   # review C 9
                       ({"scaled_to": "single", "leases": [str(lease), str(no_single)]}, "fewer than two layer counts of single")):
        (folder / "leases.yaml").write_text(yaml.safe_dump(good | {"op": bad}))
        with pytest.raises(ValueError, match=match):
            eager.fit_modes(folder)


def test_the_hostsingle_set_enters_the_error_bands_against_its_registered_product_step():
    from simcluster.heldout import eager_hostsingle, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_hostsingle.HOSTSINGLE_BUNDLE in step_sets.STEP_SET_BUNDLES
    rows = eager_hostsingle.held_out_rows()
    reg = {r["name"]: r for r in yaml.safe_load((HOSTSINGLE / "registered.yaml").read_text())["rows"]}
    assert len(rows) == 4
    for r, x in zip(rows, reg.values(), strict=True):
        assert r["predicted_s"] == x["predicted"]["product"]["step_ms"] / 1e3 and r["host_flag"] == "registered"
        assert r["recompute"] == ("op" if x["ac_mode"] == "op" else "none")
        if x["ac_mode"] == "none":   # today's product moved only its op price
            assert r["today_s"] == pytest.approx(r["predicted_s"], rel=2e-3)
        else:
            assert r["today_s"] > 1.1 * r["predicted_s"]
    assert [res.regime for res in eager_residuals(rows)] == [x["regime"] for x in reg.values()]
    # the registered product's op+host-bound row: 58.9% fast over its processes (the read-out's R), today's 12.5%
    op_hb = rows[3]
    assert math.log(op_hb["predicted_s"] / op_hb["measured_s"]) < -0.85 and -0.2 < math.log(op_hb["today_s"] / op_hb["measured_s"]) < 0
    assert Counter(res.source for res in eager_residuals(rows)) == {HOSTSINGLE.name: 4}


def test_a_registered_row_without_the_products_share_is_one_line(tmp_path):
    from simcluster.heldout import eager_hostsingle

    assert eager_hostsingle.held_out_rows(tmp_path) == []   # not run: no row
    bundle = tmp_path / "set"
    shutil.copytree(HOSTSINGLE, bundle)
    text = (bundle / "registered.yaml").read_text().replace("host_share: 0.8528", "host_share: null", 1)
    (bundle / "registered.yaml").write_text(text)
    with pytest.raises(SimclusterError, match=r"registered.yaml: rows\[0\]: no predicted.product.host_share"):
        eager_hostsingle.held_out_rows(bundle)
