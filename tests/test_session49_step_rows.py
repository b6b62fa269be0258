"""Session 49's read registered step sets as error-band rows (wire49): hb49 (heldout/eager_hostsingle.HB49_BUNDLE),
x2set49 (one REGISTERED_STEP_SETS entry, two readers: heldout/eager_nosync for its zero-3 / zero-2 parts, heldout/
eager_compilefsdp for its compiled FSDP2 part, the uncheckpointed row through NOCKPT_VARIANTS) and mem49 (compiled
FSDP2 without checkpointing, heldout/eager_compilefsdp.MEM49_BUNDLE). Each row is the mean of
its processes' rank-0 median steps (the read-outs' processes) against the registered shipped step, in the regime its
configuration is."""

from __future__ import annotations

import json
import shutil
import statistics
from collections import Counter

import pytest
from conftest import ROOT

from simcluster.heldout import eager_compilefsdp, eager_hostsingle, eager_nosync, step_sets
from simcluster.trust.build import eager_residuals

HB49 = ROOT / eager_hostsingle.HB49_BUNDLE
X2SET49 = ROOT / eager_nosync.X2SET49_BUNDLE
MEM49 = ROOT / eager_compilefsdp.MEM49_BUNDLE
EAGER = "llm | PyTorch eager | {} | bf16"


def _read(bundle):
    return dict(step_sets.REGISTERED_STEP_SETS)[str(bundle.relative_to(ROOT))](bundle)


def _median_ms(bundle, stem: str) -> float:
    doc = json.loads((bundle / "runs" / f"{stem}.json").read_text())
    return doc["shapes"][0]["median_step_s"] * 1e3


def test_hb49_rows_are_its_processes_means_against_the_registered_product_step():
    rows = _read(HB49)
    regimes = Counter(r.regime for r in eager_residuals(rows))
    assert regimes == {EAGER.format("single+sac-op+host-bound"): 4, EAGER.format("single+host-bound"): 1}
    by = {r["label"].split(" seq")[0] + r["label"].split("seq")[1]: r for r in rows}
    row = by["0.8b single+host-bound 1696 mb 1"]
    assert row["predicted_s"] == pytest.approx(0.06055) and row["recompute"] == "none"
    assert row["measured_s"] * 1e3 == pytest.approx(statistics.mean(_median_ms(HB49, f"hb-0.8b-r{k}") for k in (1, 2, 3)))
    assert all(r["predicted_s"] == pytest.approx(r["today_s"], rel=1e-4) for r in rows)   # the model is the registered one


def test_x2set49_rows_split_by_part_into_fsdp_and_the_two_compiled_regimes():
    rows = _read(X2SET49)
    regimes = Counter(r.regime for r in eager_residuals(rows))
    assert regimes == {EAGER.format("FSDP"): 3, EAGER.format("FSDP+compile+ckpt"): 1, EAGER.format("FSDP+compile"): 1}
    nock = next(r for r in rows if r.get("recompute") == "none" and r.get("framework") == "torch-compile+fsdp2")
    assert nock["predicted_s"] == pytest.approx(0.12366) and nock["processes"] == 2
    assert nock["measured_s"] * 1e3 == pytest.approx(statistics.mean(_median_ms(X2SET49, f"1b-3040x2-fsdpnock-r{k}") for k in (1, 2)))
    zero2 = next(r for r in rows if r["label"].startswith("2b fsdp zero2"))
    assert zero2["zero"] == 2 and zero2["predicted_s"] == pytest.approx(0.74742)
    # each part by its own reader only: no compiled row read as an FSDP2 accumulation row, or the reverse
    assert len(eager_nosync.held_out_rows(X2SET49, parts=("Z3", "G"))) == 3
    assert len(eager_compilefsdp.held_out_rows(X2SET49, parts=("C",))) == 2


def test_a_compiled_process_whose_checkpointing_is_not_its_rows_is_left_out(tmp_path):
    bundle = tmp_path / "x2set49"
    shutil.copytree(X2SET49, bundle, ignore=shutil.ignore_patterns("*.stderr.txt"))
    for stem, ac in (("1b-3040x2-fsdpnock-r1", "full"), ("1b-2464x2-fsdp-r1", "none")):
        path = bundle / "runs" / f"{stem}.json"
        path.write_text(json.dumps(json.loads(path.read_text()) | {"ac_mode": ac}))
    rows = {r["recompute"]: r for r in eager_compilefsdp.held_out_rows(bundle, parts=("C",))}
    assert rows["none"]["processes"] == 1 and rows["full"]["processes"] == 2
    assert rows["none"]["measured_s"] * 1e3 == pytest.approx(_median_ms(X2SET49, "1b-3040x2-fsdpnock-r2"))
    reg = {"name": "1b-3040x2-fsdpnock", "variant": "fsdpnock", "preset": "1b", "seq": 3040, "micro_batch": 2}
    assert eager_compilefsdp.process_step(bundle, reg, 1)[1].startswith("not --compile-scope model with --ac-mode none")


def test_mem49_rows_join_x2set49s_uncheckpointed_compiled_row():
    rows = _read(MEM49)
    assert [r.regime for r in eager_residuals(rows)] == [EAGER.format("FSDP+compile")] * 2
    assert [r["processes"] for r in rows] == [2, 1] and [r["predicted_s"] for r in rows] == [pytest.approx(0.21994), pytest.approx(0.18222)]
    assert rows[1]["measured_s"] * 1e3 == pytest.approx(_median_ms(MEM49, "2b-3104x2-fsdpnock-r1"))
