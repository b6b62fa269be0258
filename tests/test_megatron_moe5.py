"""The moe5 lab set (issue 44, session 40, calibration/h200x2-megatron-moe5-2026-11-30): its registration (arm B only,
predictions of the model with the local spec's torch kernel chains), compare.py's reading rule on a synthetic bundle,
and device_run.sh's flow with stub nvidia-smi / pip / launcher (no GPU here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from test_megatron_moe_lab import STUB_LAUNCHER, synthetic_doc

ROOT = Path(__file__).resolve().parents[1]
SET5 = ROOT / "calibration" / "h200x2-megatron-moe5-2026-11-30"
sys.path.insert(0, str(ROOT / "studies" / "megatron_moe"))

import compare  # noqa: E402
import register  # noqa: E402

from simcluster.heldout import moe_lab  # noqa: E402


def test_moe5_registers_arm_b_and_predictions_slower_than_before_session_40():
    reg = yaml.safe_load((SET5 / "registered.yaml").read_text())
    assert set(reg["runs"]) == set(register.SET5) and set(reg["arms"]) == {"B"} and reg["framework"] == "megatron-local-spec"
    assert "--pin" in reg["arms"]["B"]["device_flags"] and reg["arms"]["B"]["env"] == "CUDA_MODULE_LOADING=EAGER"
    for name, run in reg["runs"].items():
        assert run["flags"] == register.flags(register.SET5[name])
        # the torch chains move every one of these compute-bound layers by well over a run's noise (> 20%)
        assert run["predicted_step_s"] > 1.2 * run["before_s"]
    known = {n for s in ("moe2", "moe3", "moe4") for n in register.SETS[s][0]} | set(compare.CONFIGS)
    assert not set(register.SET5) & known     # configurations new to calibration/
    assert len(moe_lab.read_set(SET5)[0]) == 4   # run once (2026-11-30): its four rows, at their registered predictions


def _doc(name: str, step_s: float) -> dict:
    m = register.SET5[name]
    register.SET3[name] = m      # synthetic_doc reads its configuration from SET3
    try:
        return synthetic_doc(name, "B", step_s, [0.8 * step_s, 0.78 * step_s])
    finally:
        del register.SET3[name]


@pytest.mark.parametrize(("factors", "rule"), [
    ((1.05, 1.1, 0.95, 1.12), "1:"),       # within 15% mean, each within 25%
    ((1.3, 1.35, 1.25, 1.3), "2:"),        # registered 20-26% fast
    ((1.05, 1.05, 1.05, 1.5), "3:"),       # one row 33% fast: past the bound, mean not past -15%
    ((0.8, 0.8, 0.8, 0.8), "3:"),          # slow
    ((1.05, 1.1), "0:")])                  # two measured
def test_compare_reads_moe5_with_its_rule(tmp_path, capsys, factors, rule):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "registered.yaml").write_text((SET5 / "registered.yaml").read_text())
    reg = compare.registered_predictions([str(folder)])
    for name, k in zip(register.SET5, factors, strict=False):
        (folder / f"megatron-moe-h200-x2-{name}-armB.json").write_text(json.dumps(_doc(name, reg[name] * k)))
    assert compare.main([str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"arm B: {rule}" in out.split("reading rule (README, declared before the run), ")[1]
    rows, skipped = moe_lab.read_set(folder)
    assert len(rows) == len(factors) and not skipped


def test_moe5_device_run_flow_with_stubs(tmp_path):
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "nvidia-smi").write_text('#!/bin/sh\ncase "$*" in\n  -L) echo "GPU 0: NVIDIA H200"; echo "GPU 1: NVIDIA H200";;\n'
                                      '  *query-gpu*) echo 00000000:18:00.0; echo 00000000:19:00.0;;\n  *) echo topo;;\nesac\n')
    (stubs / "pip").write_text("#!/bin/sh\nexit 0\n")
    (stubs / "timeout").write_text(STUB_LAUNCHER.format(python=sys.executable))
    (stubs / "python3").symlink_to(sys.executable)
    for f in stubs.iterdir():
        f.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, PATH=f"{stubs}:{os.environ['PATH']}", OUT=str(out), MOE5_WORK=str(tmp_path / "moe5"))
    res = subprocess.run(["bash", str(SET5 / "device_run.sh")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    lines = res.stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines if "device.py" in ln] == [f"h200-x2-{n}-armB" for n in register.SET5], res.stderr
    assert all("CUDA_MODULE_LOADING=EAGER device.py" in ln and "--pin --warmup 10" in ln for ln in lines if "device.py" in ln)
    assert sum(" exit 0 " in ln for ln in lines) == 4
    with tarfile.open(out / "runs.tgz") as tgz:
        names = tgz.getnames()
    # the run files as the read-out (heldout/moe_lab.RUN_FILE) names them, and device_lib's record of what ran
    assert sorted(Path(m).name for m in names if m.endswith("-armB.json")) == sorted(f"megatron-moe-h200-x2-{n}-armB.json" for n in register.SET5)
    assert all(moe_lab.RUN_FILE.match(Path(m).name) for m in names if m.endswith("-armB.json"))
    assert "runs/commit.txt" in names and "runs/host.txt" in names


def test_compare_refuses_a_folder_without_run_files_in_one_line(tmp_path, capsys):
    """Review C 11: a folder that is not a set (or a path that is not there) is one line naming it, exit 2, not the
    default configurations' predictions."""
    (tmp_path / "notes.txt").write_text("no runs here")
    for path in (tmp_path, tmp_path / "absent"):
        assert compare.main([str(path)]) == 2
        got = capsys.readouterr()
        assert got.out == "" and len(got.err.strip().splitlines()) == 1 and str(path) in got.err


def test_compare_prints_todays_mean_error_per_arm(tmp_path, capsys):
    """Review C 6: the last line is today's model against the measured steps (llm.md's "Today's model" table quotes
    it); a profiled megatron-moe-trace-* re-run is no step row."""
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "registered.yaml").write_text((SET5 / "registered.yaml").read_text())
    name = next(iter(register.SET5))
    today_s, _ = compare.predicted_s({**register.SET5[name], "ep": 2}, 2, "H200")
    (folder / f"megatron-moe-h200-x2-{name}-armB.json").write_text(json.dumps(_doc(name, today_s / 0.8)))
    (folder / f"megatron-moe-trace-h200-x2-{name}.json").write_text(json.dumps(_doc(name, today_s / 0.5)))
    assert compare.main([str(folder)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "today's model, arm B: mean |error| 20.0% over 1 runs, mean error -20.0%"
