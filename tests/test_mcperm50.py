"""Session 50 mcperm50: Megatron-Core's own permutations against the adopted permutation column
(studies/mcore_perm_device.py, validation/mcperm50.py) on synthetic runs: rules P / S / L, the refusals, the
registration's freshness and its prediction (the product's own permute price)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import ROOT, cpu_dry_run, fresh_register_equals, load_script
from test_mcrouter50 import device_document, read_synthetic, refuses_bundles

from simcluster.runner.moerouter_grid import GRID

BUNDLE = ROOT / "calibration" / "h200x1-mcperm50-2026-12-01"


def write_trace(runs: Path, mcore=1.0, torch_x=1.0, n_kernels=50.0, name="NVIDIA H200", quick=False, note="0.14.0",
                stopped=None, drop_layer=None, piece="permute") -> None:
    """A studies/mcore_perm_device.py output in `runs`: each layer's torch form at torch_x x the registered moeker50
    events and Megatron at mcore x them (kernels 0.7 x the events); drop_layer: Megatron missing there."""
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]["moeker50_events_us"]
    recs = []
    for lay, *_ in GRID:
        for impl, x in (("torch", torch_x), ("mcore", mcore)):
            if impl == "mcore" and lay == drop_layer:
                continue
            for pas in ("fwd", "fwdbwd"):
                t = 1e-6 * reg[lay][pas] * x
                base = {"layer": lay, "piece": piece, "pass": pas, "impl": impl}
                recs += [{**base, "clock": "events", "time_s": t, "samples": [t]},
                         {**base, "clock": "kernels", "time_s": 0.7 * t, "samples": [0.7 * t] * 2, "n_kernels": n_kernels,
                          "span_s": 0.9 * t, "gemm_s": 0.0}]
    device_document(runs / "mcore-perm.json", recs, name, quick, note, stopped)


def read(tmp_path, **kw):
    return read_synthetic("validation/mcperm50.py", BUNDLE, write_trace, tmp_path, **kw)


def column_over_moeker50() -> float:
    rows = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]
    return rows["moeker50_events_fwdbwd_sum_us"] / rows["predicted_fwdbwd_sum_us"]


@pytest.mark.parametrize("p, word", [(1.0, "HOLDS"), (1.29, "HOLDS"), (0.71, "HOLDS"), (1.31, "OVER"), (0.69, "UNDER"), (2.0, "OVER")])
def test_rule_p_reads_megatron_events_against_the_column_on_a_30_percent_band(tmp_path, p, word, capsys):
    """Megatron's events set to p x the column (the torch form at moeker50's events: L REPEATS)."""
    script, res = read(tmp_path, mcore=p / column_over_moeker50())
    v = res["verdicts"]
    assert v["P"].startswith(word) and f"= {p:.3f}" in v["P"] and v["L"].startswith("REPEATS (") and "= 1.000" in v["L"], v
    script.show(res)
    out = capsys.readouterr().out
    assert [ln.split(":")[0] for ln in out.splitlines() if ln.startswith("RULE")] == ["RULE P", "RULE S", "RULE L"]
    assert ("stands as Megatron's non-fused permutations" in out) == (word == "HOLDS")
    assert f"(x{0.7 * p:.3f} of the column)" in out   # the kernels ratio, printed


def test_a_drifting_lease_is_told_apart_from_the_implementation(tmp_path):
    """The torch form 1.5 x moeker50's on this lease and Megatron 1.5 x too: P OVER, S HOLDS (1.000), L DRIFTS;
    Megatron at 0.6 x the torch form on a repeating lease: S UNDER."""
    _, res = read(tmp_path, mcore=1.5, torch_x=1.5)
    v = res["verdicts"]
    assert v["P"].startswith("OVER") and v["S"].startswith("HOLDS (") and "= 1.000" in v["S"] and v["L"].startswith("DRIFTS"), v
    _, res = read(tmp_path / "u", mcore=0.6)
    assert res["verdicts"]["S"].startswith("UNDER (") and "= 0.600" in res["verdicts"]["S"], res["verdicts"]
    _, res = read(tmp_path / "r", torch_x=1.14)
    assert res["verdicts"]["L"].startswith("REPEATS") and read(tmp_path / "d", torch_x=1.16)[1]["verdicts"]["L"].startswith("DRIFTS")


@pytest.mark.parametrize("kw, said", [({"note": "not run: ModuleNotFoundError: No module named 'megatron'"}, "No module named"),
                                      ({"drop_layer": "dsv3-ep64"}, "no events record"),
                                      ({"stopped": "SIGTERM after 40 records"}, "SIGTERM"),
                                      ({"piece": "router"}, "no events record")])
def test_no_complete_megatron_measurement_decides_nothing(tmp_path, kw, said, capsys):
    script, res = read(tmp_path, **kw)
    assert res["verdicts"]["P"].startswith("UNDECIDED") and said in res["verdicts"]["P"], res["verdicts"]
    script.show(res)
    assert "no verdict" in capsys.readouterr().out


def test_the_read_out_refuses_quick_foreign_and_wrong_bundles_in_one_line(tmp_path, capsys):
    refuses_bundles(load_script("validation/mcperm50.py"), BUNDLE, write_trace, "mcore-perm.json",
                    "studies/mcore_perm_device.py", "mcrouter50", "mcperm50", tmp_path, capsys)


def test_the_registration_is_fresh_and_predicts_the_products_permute_price(tmp_path, monkeypatch, adopt50_table_file):
    """--register writes registered.yaml byte for byte (adopt50_table_file: the table file as it was
    registered), never over it; the prediction is, by hand, the adopted table's
    permute factors (nearest by bytes) times the H200's HBM price of each layer's permute bytes."""
    from simcluster.heldout import moerouter
    from simcluster.llm import moe_router_term

    script = load_script("validation/mcperm50.py")
    reg = fresh_register_equals(script, BUNDLE, tmp_path, monkeypatch, "commit")
    rows, gpu = moe_router_term.read_table()[0], script.card()
    for name, _T, _E, h, _k, _sf, local, _ep, routed, *_ in GRID:
        b = (4 if local > 1 else 2) * 2 * routed * h * 2
        near = min(rows, key=lambda r: abs(r[7] - b))   # every layer's bytes are some table row's exactly
        assert near[7] == b == moerouter.permute_bytes(routed, h, local)
        price = 1e6 * gpu.memory_time_s(b)
        got = reg["rows"]["predicted_us"][name]
        assert got["fwd"] == pytest.approx(near[5] * price, abs=0.01)
        assert got["fwdbwd"] == pytest.approx((near[5] + near[6]) * price, abs=0.01)
    assert reg["rows"]["predicted_us"]["mixtral-ep8"] == reg["rows"]["predicted_us"]["qwen15-a800"]   # same bytes, same price


def test_the_device_script_runs_its_cpu_dry_run():
    """studies/mcore_perm_device.py --device cpu --quick on one chunked layer: the torch form's records, and Megatron's
    where megatron-core imports (skipped where torch is not installed: the project's venv has none; the device has it)."""
    doc = cpu_dry_run("studies/mcore_perm_device.py", "--layers", "moonlight-ep8")
    impls = {"torch"} | ({"mcore"} if not doc["mcore"].startswith("not run") else set())
    assert doc["quick"] and {(r["piece"], r["impl"], r["pass"], r["clock"]) for r in doc["records"]} == {
        ("permute", i, p, c) for i in impls for p in ("fwd", "fwdbwd") for c in ("events", "kernels")}
