"""Session 50 mcrouter50: Megatron-Core's own router against the adopted router column (studies/mcore_router_device.py,
validation/mcrouter50.py) on synthetic runs: rules R / S / L, the refusals, the registration's freshness."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, cpu_dry_run, fresh_register_equals, load_script, wrong_bundles

from simcluster.runner.moerouter_grid import GRID

BUNDLE = ROOT / "calibration" / "h200x1-mcrouter50-2026-12-01"


def write_trace(runs: Path, mcore=1.0, torch_x=1.0, fp32=1.1, n_kernels=40.0, name="NVIDIA H200", quick=False,
                note="0.14.0", stopped=None, drop_layer=None) -> None:
    """A studies/mcore_router_device.py output in `runs`: each layer's torch chain at torch_x x the registered moeker50
    kernels, Megatron at mcore x and mcore-fp32 at fp32 x them (events 5x the kernels); drop_layer: Megatron missing there."""
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]["moeker50_kernels_us"]
    recs = []
    for lay, *_ in GRID:
        for impl, x in (("torch", torch_x), ("mcore", mcore), ("mcore-fp32", fp32)):
            if impl != "torch" and lay == drop_layer:
                continue
            for pas in ("fwd", "fwdbwd"):
                t = 1e-6 * reg[lay][pas] * x
                base = {"layer": lay, "piece": "router", "pass": pas, "impl": impl}
                recs += [{**base, "clock": "events", "time_s": 5 * t, "samples": [5 * t]},
                         {**base, "clock": "kernels", "time_s": t, "samples": [t, t], "n_kernels": n_kernels, "span_s": 1.5 * t,
                          "gemm_s": 0.2 * t}]
    device_document(runs / "mcore-router.json", recs, name, quick, note, stopped)


def device_document(path: Path, recs: list, name: str, quick: bool, note: str, stopped: str | None) -> None:
    """A Megatron device script's output (studies/mcore_router_device.py, mcore_perm_device.py): `recs` on the card
    `name`, --quick or not, megatron-core's version (or why it did not run) and the guard's stop (mcperm50's test too)."""
    dev = {"name": name, "torch": "2.11.0+cu130", "cuda": "13.0", "dtype": "torch.bfloat16"}
    if stopped:
        dev["stopped"] = stopped
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"device": dev, "quick": quick, "mcore": note, "records": recs}))


def bundle_with(bundle: Path, folder: Path) -> Path:
    """`folder` as a bundle: `bundle`'s registration copied in, an empty runs/."""
    (folder / "runs").mkdir(parents=True)
    shutil.copy(bundle / "registered.yaml", folder / "registered.yaml")
    return folder


def read_synthetic(readout: str, bundle: Path, write, tmp_path: Path, **kw):
    """The read-out script `readout` and its read_out of `bundle`'s registration beside a trace `write(runs, **kw)` wrote
    (mcperm50's test too)."""
    script = load_script(readout)
    b = bundle_with(bundle, tmp_path / "b")
    write(b / "runs", **kw)
    return script, script.read_out(b)


def read(tmp_path, **kw):
    return read_synthetic("validation/mcrouter50.py", BUNDLE, write_trace, tmp_path, **kw)


@pytest.mark.parametrize("mcore, word", [(1.0, "HOLDS"), (1.29, "HOLDS"), (0.71, "HOLDS"), (1.31, "OVER"), (0.69, "UNDER"), (2.0, "OVER")])
def test_rule_r_reads_megatron_against_the_column_on_a_30_percent_band(tmp_path, mcore, word, capsys):
    script, res = read(tmp_path, mcore=mcore)
    v = res["verdicts"]
    assert v["R"].startswith(word) and v["S"].startswith(word) and v["L"].startswith("REPEATS"), v
    assert f"= {mcore:.3f}" in v["R"]
    script.show(res)
    out = capsys.readouterr().out
    assert [ln.split(":")[0] for ln in out.splitlines() if ln.startswith("RULE")] == ["RULE R", "RULE S", "RULE L"]
    assert ("stands as Megatron's router" in out) == (word == "HOLDS") and "moe_router_dtype fp32" in out


def test_a_drifting_lease_is_told_apart_from_the_implementation(tmp_path):
    """The torch chain 1.5 x moeker50's on this lease and Megatron 1.5 x too: R OVER (against the column), S HOLDS
    (the same implementation cost on this lease), L DRIFTS."""
    _, res = read(tmp_path, mcore=1.5, torch_x=1.5)
    v = res["verdicts"]
    assert v["R"].startswith("OVER") and v["S"].startswith("HOLDS (") and v["L"].startswith("DRIFTS"), v


@pytest.mark.parametrize("kw, said", [({"note": "not run: ModuleNotFoundError: No module named 'megatron'"}, "No module named"),
                                      ({"drop_layer": "dsv3-ep64"}, "no kernels seen"), ({"n_kernels": 0.0}, "no kernels seen"),
                                      ({"stopped": "SIGTERM after 40 records"}, "SIGTERM")])
def test_no_complete_megatron_measurement_decides_nothing(tmp_path, kw, said, capsys):
    script, res = read(tmp_path, **kw)
    assert res["verdicts"]["R"].startswith("UNDECIDED") and said in res["verdicts"]["R"], res["verdicts"]
    script.show(res)
    assert "no verdict" in capsys.readouterr().out


def refuses_bundles(script, bundle: Path, write, trace: str, producer: str, other_set: str, own_set: str, tmp_path, capsys) -> None:
    """A registered set's read-out (`script`, its `bundle`) refuses in one line: a --quick trace and a foreign card's
    (written by `write(runs, **kw)`), an empty folder, another set's registration, its own without keys, no `trace` under
    runs/ and a trace that is no `producer` output (mcperm50's test takes it too)."""
    for i, (kw, said) in enumerate((({"quick": True}, "a --quick trace"), ({"name": "NVIDIA H100"}, "expected an H200"))):
        b = bundle_with(bundle, tmp_path / f"q{i}")
        write(b / "runs", **kw)
        assert script.main([str(b)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err, err
    empty, other, keyless = wrong_bundles(tmp_path, other_set, own_set)
    for folder, said in ((empty, f"{empty}/registered.yaml: missing"), (other, f"set '{other_set}', expected '{own_set}'"),
                         (keyless, "registered.yaml: no readable")):
        assert script.main([str(folder)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "Traceback" not in err, err
    b = bundle_with(bundle, tmp_path / "norun")
    assert script.main([str(b)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and trace in err and "cannot read" in err, err
    (b / "runs" / trace).write_text('{"device": {}, "quick": false}')
    assert script.main([str(b)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"not a {producer} output" in err, err


def test_the_read_out_refuses_quick_foreign_and_wrong_bundles_in_one_line(tmp_path, capsys):
    refuses_bundles(load_script("validation/mcrouter50.py"), BUNDLE, write_trace, "mcore-router.json",
                    "studies/mcore_router_device.py", "moeker50", "mcrouter50", tmp_path, capsys)


def test_the_registration_is_fresh_and_predicts_the_adopted_column(tmp_path, monkeypatch, adopt50_table_file):
    """--register writes registered.yaml byte for byte (adopt50_table_file: the table file as it was
    registered), never over it; the prediction is the adopted column plus the
    GEMM price, which (no floor clamped) is moeker50's kernels clock of the same records."""
    rows = fresh_register_equals(load_script("validation/mcrouter50.py"), BUNDLE, tmp_path, monkeypatch, "commit")["rows"]
    for lay, *_ in GRID:
        for pas in ("fwd", "fwdbwd"):
            assert rows["predicted_us"][lay][pas] == pytest.approx(rows["moeker50_kernels_us"][lay][pas], abs=0.02)


def test_the_device_script_runs_its_cpu_dry_run():
    """studies/mcore_router_device.py --device cpu --quick on one layer: the torch chain's records, and Megatron's where
    megatron-core imports (skipped where torch is not installed: the project's venv has none; the device has it)."""
    doc = cpu_dry_run("studies/mcore_router_device.py", "--layers", "mixtral-ep8")
    impls = {"torch"} | ({"mcore", "mcore-fp32"} if not doc["mcore"].startswith("not run") else set())
    assert doc["quick"] and {(r["impl"], r["pass"], r["clock"]) for r in doc["records"]} == {
        (i, p, c) for i in impls for p in ("fwd", "fwdbwd") for c in ("events", "kernels")}
