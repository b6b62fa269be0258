"""Session 50 moeker50: the router chain and torch permutations timed by three clocks (studies/moe_kernel_device.py), the
reader (heldout/moeker50.py) and the read-out's rules G / R / P (validation/moeker50.py) on synthetic runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, load_script, wrong_bundles

from simcluster.errors import SimclusterError
from simcluster.hardware.gpu import load_gpu
from simcluster.heldout import moeker50, moerouter
from simcluster.runner.moerouter_grid import GRID

BUNDLE = moeker50.BUNDLE
MOERUN = ROOT / "calibration" / "h200x1-moerouter-2026-12-01" / "runs" / moerouter.TRACE


def write_trace(runs: Path, router_k=0.25, permute_k=0.6, graph=1.05, spread=0.04, n_kernels=30.0, kernels=True,
                name="NVIDIA H200", quick=False, permute_graph=True) -> None:
    """A studies/moe_kernel_device.py bundle in `runs`: each layer's events clock at moerouter's measured seconds
    (its runs), the kernels clock at router_k / permute_k of them (n_kernels a call; kernels False: none seen), the
    router's graph at `graph` x the kernels, each record's samples spread +- spread / 2 around its median; and the
    permutations' graph attempt (not captured) in its own file."""
    moe = json.loads(MOERUN.read_text())["records"]
    base = {(r["layer"], r["piece"], r["pass"]): r["time_s"] for r in moe if r["impl"] == "torch"}
    recs, extra = [], []

    def rec(lay, piece, pas, clock, t, **kw):
        s = [] if t is None else [t * (1 - spread / 2), t, t * (1 + spread / 2)]
        return {"layer": lay, "piece": piece, "pass": pas, "impl": "torch", "clock": clock, "time_s": t, "samples": s, **kw}

    for lay, *_ in GRID:
        for piece, share in (("router", router_k), ("permute", permute_k)):
            for pas in ("fwd", "fwdbwd"):
                e = base[(lay, piece, pas)]
                k = e * share if kernels else 0.0
                recs += [rec(lay, piece, pas, "events", e),
                         rec(lay, piece, pas, "kernels", k, n_kernels=n_kernels if kernels else 0.0, span_s=1.2 * k, gemm_s=0.1 * k)]
                if piece == "router":
                    recs.append(rec(lay, piece, pas, "graph", graph * k))
                else:
                    extra.append(rec(lay, piece, pas, "graph", None, why="RuntimeError: operation not permitted when stream is capturing"))
    dev = {"name": name, "torch": "2.11.0+cu130", "cuda": "13.0", "dtype": "torch.bfloat16"}
    runs.mkdir(parents=True, exist_ok=True)
    (runs / moeker50.TRACE).write_text(json.dumps({"device": dev, "quick": quick, "clocks": [], "inner": 5, "records": recs}))
    if permute_graph:
        (runs / moeker50.PERMUTE_GRAPH).write_text(json.dumps({"device": dev, "quick": quick, "records": extra}))


def stub_under(script, monkeypatch, reg: dict) -> list:
    """validation/moeker50.under stubbed (no validate pass): the registered rows for the shipped table, a marked copy
    otherwise; returns the tables it was asked for."""
    asked = []
    shipped = moerouter.session49_table()[0]   # the table shipped when the set ran (adopt50 replaced the file after)

    def under(table):
        asked.append(table)
        return reg if tuple(table) == tuple(shipped) else {**reg, "qwen3_row0_gpu_work_s": 1.0, "c_rederived_us": 2.0}
    monkeypatch.setattr(script, "under", under)
    return asked


def bundle_with(tmp_path: Path, **kw) -> Path:
    b = tmp_path / "b"
    (b / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", b / "registered.yaml")
    write_trace(b / "runs", **kw)
    return b


def read(tmp_path, monkeypatch, **kw):
    script = load_script("validation/moeker50.py")
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]
    asked = stub_under(script, monkeypatch, reg)
    return script, script.read_out(bundle_with(tmp_path, **kw)), asked


def test_kernels_far_below_events_rebuild_the_router_and_permute_columns(tmp_path, monkeypatch, capsys):
    script, res, asked = read(tmp_path, monkeypatch)
    v = res["verdicts"]
    assert v["G"].startswith("CONSISTENT (14 router records") and v["R"].startswith("REBUILD") and v["P"].startswith("REBUILD"), v
    gpu = load_gpu(moerouter.H200_CARD)[0]
    assert len(asked) == 1 and asked[0] != moerouter.session49_table()[0]
    kern = moeker50.rows(moeker50.read_bundle(tmp_path / "b" / "runs"), "kernels", gpu, tmp_path)
    assert [r[3:7] for r in asked[0]] == [r[3:7] for r in kern]
    script.show(res)
    out = capsys.readouterr().out
    assert [ln.split(":")[0] for ln in out.splitlines() if ln.startswith("RULE")] == ["RULE G", "RULE R", "RULE P"]
    assert "operation not permitted when stream is capturing" in out and "1.00 s; profiled GPU-active 22.821 s" in out


def test_kernels_near_events_keep_the_table_and_predict_nothing_new(tmp_path, monkeypatch, capsys):
    """A drop within the lease's noise + 15 points keeps both pieces: no rebuilt table, the registered figures printed."""
    script, res, asked = read(tmp_path, monkeypatch, router_k=0.95, permute_k=0.97, spread=0.1)
    assert res["verdicts"]["R"].startswith("KEEP") and res["verdicts"]["P"].startswith("KEEP") and not asked
    script.show(res)
    assert "table unchanged (no rebuild)" in capsys.readouterr().out


def test_a_drop_inside_the_noise_plus_margin_keeps_and_one_above_rebuilds(tmp_path, monkeypatch):
    """Noise 40%: a router drop of ~50% (inside 40 + 15) keeps, ~75% rebuilds; the permute decided on its own."""
    _, res, _ = read(tmp_path, monkeypatch, router_k=0.5, permute_k=0.3, spread=0.4)
    assert res["verdicts"]["R"].startswith("KEEP") and res["verdicts"]["P"].startswith("REBUILD"), res["verdicts"]


@pytest.mark.parametrize("graph, word", [(3.0, "INCONSISTENT"), (0.5, "INCONSISTENT")])
def test_a_graph_far_from_the_kernel_sum_leaves_the_router_undecided(tmp_path, monkeypatch, graph, word):
    _, res, _ = read(tmp_path, monkeypatch, graph=graph, n_kernels=1.0)
    assert res["verdicts"]["G"].startswith(word) and res["verdicts"]["R"].startswith("UNDECIDED (G INCONSISTENT")
    assert res["verdicts"]["P"].startswith("REBUILD")   # no graph gate on the permutations


def test_no_kernels_seen_decides_nothing(tmp_path, monkeypatch):
    _, res, asked = read(tmp_path, monkeypatch, kernels=False)
    assert all(res["verdicts"][k].startswith("UNDECIDED (the profiler saw no kernels") for k in ("R", "P")) and not asked


def test_the_reader_refuses_a_quick_foreign_or_missing_trace(tmp_path):
    for kw, said in (({"quick": True}, "a --quick trace"), ({"name": "NVIDIA H100"}, "expected an H200")):
        write_trace(tmp_path / "r", **kw)
        with pytest.raises(SimclusterError, match=said):
            moeker50.read_bundle(tmp_path / "r")
    with pytest.raises(SimclusterError, match="moe-kernels.json: missing"):
        moeker50.read_bundle(tmp_path / "nothing")
    write_trace(tmp_path / "s", permute_graph=False)   # the budget skipped the permutations' attempt: read without it
    assert not moeker50.permute_graph_why(moeker50.read_bundle(tmp_path / "s"))


def test_kernel_sample_sums_device_events_per_call():
    study = load_script("studies/moe_kernel_device.py")
    trace = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "nvjet_tst_gemm", "ts": 100.0, "dur": 10.0},
        {"ph": "X", "cat": "kernel", "name": "softmax", "ts": 120.0, "dur": 4.0},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset", "ts": 130.0, "dur": 2.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 90.0, "dur": 50.0},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 95.0, "dur": 5.0}]}
    s = study.kernel_sample(trace, 2)
    assert s == pytest.approx({"busy_s": 8e-6, "n": 1.5, "span_s": 16e-6, "gemm_s": 5e-6})
    assert study.kernel_sample({"traceEvents": []}, 5)["n"] == 0


def test_the_read_out_on_a_wrong_or_empty_bundle_is_one_line_naming_the_file(tmp_path, capsys):
    script = load_script("validation/moeker50.py")
    empty, other, keyless = wrong_bundles(tmp_path, "moerouter", "moeker50")
    for folder, said in ((empty, f"{empty}/registered.yaml: missing"), (other, "set 'moerouter', expected 'moeker50'"),
                         (keyless, f"{keyless}/registered.yaml: no readable 'shipped_added_us'")):
        assert script.main([str(folder)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "Traceback" not in err, err
    f = tmp_path / "file"
    f.write_text("x")
    assert script.main([str(f)]) == 1 and "not a bundle folder" in capsys.readouterr().err


def test_the_registration_is_fresh(tmp_path, monkeypatch):
    """--register now writes registered.yaml byte for byte (today's model with the table shipped then, session 49's:
    one validate pass, the Qwen3 row and c's search), never over it; the sha256 it names is that table's file text
    (heldout/moerouter.table_text), which adopt50 replaced with this set's rebuild (tests/test_adopt50.py)."""
    script = load_script("validation/moeker50.py")
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    monkeypatch.setenv("REGISTER_COMMIT", reg["commit"])
    assert script.main(["--register", str(tmp_path / "again.yaml")]) == 0
    assert (tmp_path / "again.yaml").read_text() == (BUNDLE / "registered.yaml").read_text()
    assert script.main(["--register", str(BUNDLE / "registered.yaml")]) == 2


def test_the_device_script_runs_its_cpu_dry_run():
    """studies/moe_kernel_device.py --device cpu --quick on one layer: every clock's records, the graph ones with why
    'cpu' (skipped where torch is not installed: the project's venv has none; the device has it)."""
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, "studies/moe_kernel_device.py", "--device", "cpu", "--quick", "--repeats", "2",
                          "--prof-repeats", "1", "--warmup", "0", "--layers", "mixtral-ep8", "--clocks",
                          "events,kernels,graph-router,graph-permute"], cwd=ROOT, capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["quick"] and {(r["piece"], r["pass"], r["clock"]) for r in doc["records"]} == {
        (p, s, c) for p in ("router", "permute") for s in ("fwd", "fwdbwd") for c in ("events", "kernels", "graph")}
    assert all(r["why"] == "cpu" for r in doc["records"] if r["clock"] == "graph")


def test_the_device_script_refuses_an_unknown_clock():
    out = subprocess.run([sys.executable, "studies/moe_kernel_device.py", "--clocks", "wall"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--clocks 'wall'" in out.stderr


def test_rederive_prints_c_before_adopt49_as_shipped_and_under_todays_model(capsys):
    """studies/moe_te_host.py --rederive: before adopt49 the derivation gives the shipped c (147.2 us); with session 49's
    router table (before_adopt50) the figures moeker50 registered (29.94 s, 208.2 us); under today's model (adopt50's
    table) the line says the c that adds the profile's idle (or that none up to 5 ms does); nothing is shipped from it."""
    study = load_script("studies/moe_te_host.py")
    study.rederive()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0].startswith("before adopt49: GPU work (c = 0) 20.24 s") and lines[0].endswith("c = 147.2 us")
    assert lines[1].startswith("before adopt50 (session 49's router table): GPU work (c = 0) 29.94 s")
    assert lines[1].endswith("c = 208.2 us (development row: printed, not shipped)")
    assert lines[2].startswith("adopted model (router term on): GPU work (c = 0) 26.07 s") and "c = 185.3 us" in lines[2]
    assert lines[2].endswith("(development row: printed, not shipped)")   # review A50, finding 1
