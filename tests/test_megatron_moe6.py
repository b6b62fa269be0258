"""The moe6 lab set (issue 44, session 41, calibration/h200x2-megatron-moe6-2026-11-30): its registration (today's model,
arm B only, two layers new to calibration/ and moe5's four again, each with its GPU-only part), compare.py's reading rule
and GPU / host split on a synthetic bundle, heldout/moe_lab reading its rows at their registered predictions, and
device_run.sh's flow with stub nvidia-smi / pip / launcher (no GPU here)."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from test_megatron_moe_lab import run_device_script, synthetic_doc

ROOT = Path(__file__).resolve().parents[1]
SET6 = ROOT / "calibration" / "h200x2-megatron-moe6-2026-11-30"
sys.path.insert(0, str(ROOT / "studies" / "megatron_moe"))

import compare  # noqa: E402
import register  # noqa: E402

from simcluster.heldout import moe_lab  # noqa: E402


def test_moe6_registers_two_new_layers_and_moe5s_four_with_their_gpu_only_parts():
    reg = yaml.safe_load((SET6 / "registered.yaml").read_text())
    assert list(reg["runs"]) == list(register.SET6) and set(reg["arms"]) == {"B"} and reg["framework"] == "megatron-local-spec"
    assert "--pin" in reg["arms"]["B"]["device_flags"] and reg["arms"]["B"]["env"] == "CUDA_MODULE_LOADING=EAGER"
    assert list(register.SET6)[:2] == list(register.NEW6)        # the new two first: the budget guard cuts the last
    known = {n for s in ("moe2", "moe3", "moe4", "moe5") for n in register.SETS[s][0]} | set(compare.CONFIGS)
    assert not set(register.NEW6) & known and set(register.SET6) - set(register.NEW6) == set(register.SET5)
    seen_flags = {register.flags(m) for s in ("moe2", "moe3", "moe4", "moe5") for m in register.SETS[s][0].values()}
    for name, run in reg["runs"].items():
        assert run["flags"] == register.flags(register.SET6[name])
        assert run["seen"] is (name in register.SET5) and (run["flags"] in seen_flags) is (name in register.SET5)
        # the GPU-only part is the step less its host part, and the host part is what the model says it is (> 0)
        assert run["gpu_only_s"] == pytest.approx(run["predicted_step_s"] - run["parts_s"]["host"], abs=2e-5)
        assert 0 < run["gpu_only_s"] < run["predicted_step_s"]
    assert reg["runs"]["e16-top4-ffn1408-ep1"]["parts_s"].get("ep", 0) == 0     # EP 1: no dispatch collective priced
    assert reg["runs"]["e8-top2-ffn2048-h32-mb2-ep2"]["flags"].count("--micro-batch 2") == 1


def _doc(name: str, step_s: float, busy_s: float | None = None) -> dict:
    m = register.SET6[name]
    register.SET3[name] = m      # synthetic_doc reads its configuration from SET3
    try:
        doc = synthetic_doc(name, "B", step_s, [0.8 * step_s, 0.78 * step_s])
    finally:
        del register.SET3[name]
    doc["parallel"] = {"ep": m["ep"], "tp": 1, "pp": 1, "dp": 2}
    if busy_s is not None:
        doc["rank0"]["profile"]["kernel_time_per_step_s"] = busy_s
    return doc


def _bundle(folder: Path, factors) -> dict[str, float]:
    folder.mkdir()
    (folder / "registered.yaml").write_text((SET6 / "registered.yaml").read_text())
    reg = compare.registered_predictions([str(folder)])
    for name, k in zip(register.SET6, factors, strict=False):
        (folder / f"megatron-moe-h200-x2-{name}-armB.json").write_text(json.dumps(_doc(name, reg[name] * k)))
    return reg


@pytest.mark.parametrize(("factors", "rule"), [
    ((1.05, 1.1, 0.95, 1.12, 1.1, 1.1), "1:"),    # HOLDS: within 15% mean, each within 25%
    ((1.1, 1.1, 1.12, 1.1, 1.15), "1:"),          # the last repeat skipped by the budget guard: five still read
    ((1.3, 1.35, 1.25, 1.3, 1.2, 1.2), "2:"),     # STILL FAST: registered 17-26% fast
    ((1.05, 1.05, 1.05, 1.05, 1.05, 1.5), "3:"),  # one row 33% fast: past the bound, mean not past -15%
    ((0.8, 0.8, 0.8, 0.8, 0.8, 0.8), "3:"),       # slow
    ((1.05, 1.1), "0:")])                         # two measured
def test_compare_reads_moe6_with_moe5s_rule(tmp_path, capsys, factors, rule):
    folder = tmp_path / "set"
    _bundle(folder, factors)
    assert compare.main([str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"arm B: {rule}" in out.split("reading rule (README, declared before the run), ")[1]
    assert sum("GPU-only part registered" in ln for ln in out.splitlines()) == len(factors)


def test_compare_splits_a_miss_into_gpu_and_host(tmp_path, capsys):
    """The registered GPU-only part against rank 0's GPU busy, the registered host part against the step beyond it."""
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "registered.yaml").write_text((SET6 / "registered.yaml").read_text())
    run = yaml.safe_load((SET6 / "registered.yaml").read_text())["runs"]["e16-top4-ffn1408-ep1"]
    gpu, step = run["gpu_only_s"], run["predicted_step_s"]
    doc = _doc("e16-top4-ffn1408-ep1", 0.1, busy_s=gpu / 1.1)     # GPU-only part 10% over the busy time
    (folder / "megatron-moe-h200-x2-e16-top4-ffn1408-ep1-armB.json").write_text(json.dumps(doc))
    assert compare.main([str(folder)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "GPU-only part" in ln)
    assert f"registered {gpu * 1e3:.2f} ms vs GPU busy {gpu / 1.1 * 1e3:.2f} ms (+10.0%)" in line
    assert f"registered host part {(step - gpu) * 1e3:.2f} ms" in line
    assert f"measured step beyond GPU busy {(0.1 - gpu / 1.1) * 1e3:.2f} ms" in line


def test_moe_lab_reads_moe6_rows_at_their_registered_predictions(tmp_path):
    """Once run, moe6's files become `llm local spec` rows at the steps registered with today's model (EP 1's too)."""
    assert "calibration/" + SET6.name in moe_lab.REGISTERED
    if not list(SET6.glob("megatron-moe-*.json")):       # registered, not run yet: nothing to read, no error
        assert moe_lab.read_set(SET6) == ([], [])
    folder = tmp_path / SET6.name
    reg = _bundle(folder, (1.1, 1.2, 1.1, 1.1, 1.1, 1.1))
    registered = yaml.safe_load((SET6 / "registered.yaml").read_text())["runs"]
    rows, skipped = moe_lab.read_set(folder)
    assert not skipped and len(rows) == 6 and {r["source"] for r in rows} == {SET6.name}
    for r in rows:
        assert r["predicted_s"] == registered[r["run"]]["predicted_step_s"] == reg[r["run"]]
        assert r["measured_s"] == pytest.approx(r["predicted_s"] * (1.2 if r["run"] == "e16-top4-ffn1408-ep1" else 1.1))
        assert r["arm"] == "B" and r["gpus"] == 2 and r["ep"] == register.SET6[r["run"]]["ep"]
    # a run at EP 2 under the EP 1 name is not the registered configuration: no row
    wrong = _doc("e16-top4-ffn1408-ep1", 0.09)
    wrong["parallel"]["ep"] = 2
    (folder / "megatron-moe-h200-x2-e16-top4-ffn1408-ep1-armB.json").write_text(json.dumps(wrong))
    rows, skipped = moe_lab.read_set(folder)
    assert len(rows) == 5 and [s.file for s in skipped] == ["megatron-moe-h200-x2-e16-top4-ffn1408-ep1-armB.json"]
    assert "ep 2, registered 1" in skipped[0].why


def test_device_py_gathers_every_ranks_host_issue_with_the_eager_runners_function():
    """One gather (runner/host_issue.gather), not a copy: the run document's per-step keys are its fields."""
    src = (ROOT / "studies" / "megatron_moe" / "device.py").read_text()
    assert "host_issue.gather(torch, record, world)" in src and "**issue_fields" in src
    assert "all_gather_object(ranks, mine)" in src and '"host_issue_s"' not in src.split("mine = {")[1].split("}")[0]


def test_moe6_device_run_flow_with_stubs(tmp_path):
    out, res = run_device_script(tmp_path, 2, SET6 / "device_run.sh", MOE6_WORK=str(tmp_path / "moe6"))
    lines = res.stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines if "device.py" in ln] == [f"h200-x2-{n}-armB" for n in register.SET6], res.stderr
    assert all("CUDA_MODULE_LOADING=EAGER device.py" in ln and "--pin --warmup 10" in ln for ln in lines if "device.py" in ln)
    assert sum(" exit 0 " in ln for ln in lines) == 6
    with tarfile.open(out / "runs.tgz") as tgz:
        names = tgz.getnames()
    assert sorted(Path(m).name for m in names if m.endswith("-armB.json")) == sorted(f"megatron-moe-h200-x2-{n}-armB.json" for n in register.SET6)
    assert all(moe_lab.RUN_FILE.match(Path(m).name) for m in names if m.endswith("-armB.json"))
    assert "runs/commit.txt" in names and "runs/host.txt" in names
    # the budget guard: 155 s, no run launched after it; each run cut at 45 s (worst case 200 s)
    script = (SET6 / "device_run.sh").read_text()
    assert "BUDGET_S=${BUDGET_S:-155}" in script and 'guarded "megatron-moe-$tag" 45 ' in script
    (tmp_path / "b0").mkdir()
    _, res = run_device_script(tmp_path / "b0", 2, SET6 / "device_run.sh", MOE6_WORK=str(tmp_path / "b0" / "w"), BUDGET_S="0")
    assert res.stdout.count("skipped: budget 0 s spent") == 6
