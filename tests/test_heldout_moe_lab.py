"""Issue 44 (moeband): the Megatron-Core local-spec MoE lab sets as held-out rows of their own regime
(simcluster/heldout/moe_lab.py, trust/regime.py's `llm local spec` family)."""

import json
import shutil
from pathlib import Path

import pytest

from simcluster.cli import main
from simcluster.errors import SimclusterError
from simcluster.heldout import moe_lab
from simcluster.trust.build import moe_lab_residuals
from simcluster.trust.regime import llm_regime
from simcluster.trust.table import Table, conformal_bounds

ROOT = Path(__file__).resolve().parent.parent
MOE2, MOE4, MOE3, MOE5 = (ROOT / f for f in moe_lab.REGISTERED[:4])
KEY = "llm | Megatron local spec | MoE | bf16"


def test_moe2_and_moe4_rows_are_rank0s_median_against_the_registered_step():
    from simcluster.strict import load_yaml

    for folder, gpus, runs in ((MOE2, 4, 4), (MOE4, 1, 14)):   # moe4: 6 on its lease, 8 on lease2/ (the same registration)
        rows, _ = moe_lab.read_set(folder)
        registered = load_yaml(folder / "registered.yaml")["runs"]
        assert len(rows) == runs and {r["source"] for r in rows} == {folder.name} and {r["gpus"] for r in rows} == {gpus}
        for r in rows:
            assert r["predicted_s"] == registered[r["run"]]["predicted_step_s"]
            name = f"megatron-moe-h200-x{gpus}-{r['run']}{'-arm' + r['arm'] if r['arm'] else ''}.json"
            assert r["measured_s"] == json.loads((folder / r["lease"] / name).read_text())["rank0"]["median_step_s"]
    assert {r["arm"] for r in moe_lab.read_set(MOE4)[0]} == {"A", "B"}
    assert {r["lease"] for r in moe_lab.read_set(MOE4)[0]} == {"", "lease2"}


def test_failed_runs_are_skipped_with_why_and_the_development_set_stays_out():
    _, skipped = moe_lab.read_set(MOE4)
    assert sorted(s.file for s in skipped) == [f"megatron-moe-h200-x1-switch-e8-top1-ffn8192-ep1-arm{a}.json" for a in "AB"]
    assert all("no document" in s.why for s in skipped)
    assert not set(moe_lab.DEVELOPMENT) & set(moe_lab.REGISTERED + moe_lab.LAUNCHED)
    assert {r["source"] for r in moe_lab.held_out_rows()} <= {Path(f).name for f in moe_lab.REGISTERED + moe_lab.LAUNCHED}


def test_a_set_registered_but_not_run_gives_no_rows_and_is_picked_up_once_its_files_exist(tmp_path):
    if not list(MOE3.glob("megatron-moe-*.json")):       # moe3 not run yet: registered, nothing to read, no error
        assert moe_lab.read_set(MOE3) == ([], [])
    folder = tmp_path / MOE3.name
    folder.mkdir()
    shutil.copy(MOE3 / "registered.yaml", folder)
    assert moe_lab.read_set(folder) == ([], [])
    doc = json.loads((MOE4 / "megatron-moe-h200-x1-e16-top4-ffn2048-ep1-armB.json").read_text())
    doc = {**doc, "world_size": 2, "parallel": {**doc["parallel"], "ep": 2}, "rank0": {**doc["rank0"], "median_step_s": 0.07}}
    (folder / "megatron-moe-h200-x2-e16-top4-ffn2048-ep2-armA.json").write_text(json.dumps(doc))
    (folder / "megatron-moe-h200-x2-e16-top4-ffn2048-ep2-armB.json").write_text(json.dumps(doc)[:500])    # cut off
    failed = {**doc, "rank0": {"status": "error", "error": "RuntimeError: CUDA out of memory"}}
    (folder / "megatron-moe-h200-x2-e32-top6-ffn1408-ep2-armA.json").write_text(json.dumps(failed))
    (folder / "megatron-moe-h200-x2-e64-top8-ffn512-ep2-armA.json").write_text(json.dumps(doc))   # not its configuration
    (folder / "megatron-moe-h200-x2-smoke-armA.json").write_text(json.dumps(doc))                  # never registered
    rows, skipped = moe_lab.read_set(folder)
    assert [(r["run"], r["arm"], r["gpus"], r["predicted_s"], r["measured_s"]) for r in rows] == \
        [("e16-top4-ffn2048-ep2", "A", 2, 0.05871, 0.07)]
    why = {s.file.removeprefix("megatron-moe-h200-x2-"): s.why for s in skipped}
    assert "not a whole JSON document" in why["e16-top4-ffn2048-ep2-armB.json"]
    assert "rank 0 error: RuntimeError: CUDA out of memory" == why["e32-top6-ffn1408-ep2-armA.json"]
    assert why["e64-top8-ffn512-ep2-armA.json"].startswith("heads 16, registered 32")
    assert why["smoke-armA.json"] == "no registered prediction for this run"


def test_a_registered_file_of_another_framework_is_one_line(tmp_path):
    (tmp_path / "registered.yaml").write_text("framework: megatron\nruns: {a: {predicted_step_s: 0.1}}\n")
    with pytest.raises(SimclusterError) as err:
        moe_lab.read_set(tmp_path)
    assert "\n" not in str(err.value) and "registered.yaml: framework" in str(err.value)
    (tmp_path / "registered.yaml").write_text("framework: megatron-local-spec\ngpu: H200 x 2 (NVLink)\nruns: {a: {predicted_step_s: -1}}\n")
    with pytest.raises(SimclusterError, match=r"runs\.a\.predicted_step_s: expected a positive number"):
        moe_lab.read_set(tmp_path)


def test_local_spec_is_its_own_family_and_every_other_megatron_stays_megatron_nemo():
    local = llm_regime("megatron-local-spec", 1, 1, 1, 1, True, "bf16", 4)
    assert (local.family, local.key, local.scale) == ("llm local spec", KEY, 4.0)
    for name in ("megatron", "megatron-unfused-attention", "megatron-te-fa2", "megatron-2023-sync"):
        assert llm_regime(name, 1, 1, 1, 1, True, "bf16", 4).key == "llm | Megatron/NeMo | MoE | bf16"
    residuals = moe_lab_residuals(moe_lab.held_out_rows())
    assert {(r.family, r.regime) for r in residuals} == {("llm local spec", KEY)}
    assert len({r.source for r in residuals}) == 7 and {r.scale for r in residuals} == {1.0, 2.0, 4.0}   # moe5, moe6, moelab49 / 49b


def local_spec_scenario(root: Path) -> dict:
    """moe2's Qwen3-like layer at 64 experts on 4 x H200, EP 4, as one llm_training job of a scenario."""
    model = dict(layers=4, hidden=2048, ffn=768, heads=32, kv_heads=4, vocab=32768, seq=4096, experts=64, top_k=8,
                 expert_ffn=768, attn_head_dim=128, qk_norm=True)
    job = dict(kind="llm_training", model=model, parallel=dict(dp=4, ep=4), global_batch=4, micro_batch=1,
               framework="megatron-local-spec")
    machine = dict(card=f"{root}/models/collective/h200x4-primitives.yaml", gpus_per_node=4,
                   gpu=dict(card=f"{root}/models/gpu/h200-sxm-interleaved.yaml"))
    return dict(name="local-spec-moe", machine=machine, jobs=[job])


def test_a_local_spec_answer_gets_its_regime_and_the_band_of_its_own_rows(tmp_path, capsys):
    """Through `predict training --json`: the regime is the local spec's; since moe3 (2 GPUs, session 33) it has three
    sources (four since moe5, session 40; seven with moelab49 / 49b, session 49) and has its own band by the band rule
    (5 rows from 3 sources), every held-out local-spec row (wide: the sets disagree), not the Megatron/NeMo family's;
    extrapolated, not validated, since session 54 (rule54, trust/targets): its rows' mean |error| is over the lab target."""
    path = tmp_path / "moe.yaml"
    path.write_text(json.dumps(local_spec_scenario(ROOT)))   # JSON is YAML
    assert main(["predict", "training", "--scenario", str(path), "--json"]) == 0      # the shipped table, as it is
    doc = json.loads(capsys.readouterr().out)
    v = doc["validation"]
    residuals = moe_lab_residuals(moe_lab.held_out_rows())
    assert v["regime"] == KEY and v["status"] == "extrapolated"
    assert v["outside"] == "held-out mean |error| 17.3% over the llm local spec family's 8% target"
    assert v["rows"] == len(residuals) and v["sources"] == 7 and v["validated_gpus"] == [1, 4]
    lo, hi = conformal_bounds([r.rho for r in residuals])
    assert v["measured_over_predicted_time"] == [round(lo, 4), round(hi, 4)]
    assert doc["step_time_s_band"] == pytest.approx([doc["step_time_s"] * lo, doc["step_time_s"] * hi])


def test_each_set_left_out_falls_outside_the_others_band():
    """moe2 (4 GPUs, the ranks' wait for the slowest host) and moe4 (1 GPU, no wait) disagree: with one left out, the
    family's pooled band is the other's rows alone, and none of the left-out rows falls inside (docs/models/trust.md)."""
    from simcluster.trust.build import held_out_coverage

    rows = moe_lab.held_out_rows((moe_lab.REGISTERED[0], moe_lab.REGISTERED[1]))
    (cov,) = held_out_coverage(Table(moe_lab_residuals(rows)))
    assert (cov.family, cov.rows, cov.sources, cov.checked, cov.covered) == ("llm local spec", 18, 2, 18, 0)
    rho = {src: sorted(r["measured_s"] / r["predicted_s"] for r in rows if r["source"] == src) for src in {r["source"] for r in rows}}
    moe2, moe4 = rho[MOE2.name], rho[MOE4.name]
    assert moe4[-1] < moe2[0]      # every 1-GPU step (both leases: 0.73-1.28) under every 4-GPU one (1.48-2.06)
    assert moe4[0] < 1 < moe4[-1]  # on one GPU the registered step is neither fast nor slow throughout: lease2 ran faster


def test_a_registration_without_its_gpu_count_is_one_line(tmp_path):
    (tmp_path / "registered.yaml").write_text("framework: megatron-local-spec\ngpu: some H200s\nruns: {a: {predicted_step_s: 0.1}}\n")
    with pytest.raises(SimclusterError) as err:
        moe_lab.read_set(tmp_path)
    assert "\n" not in str(err.value) and "registered.yaml: gpu: expected 'KIND x N" in str(err.value)


def test_a_run_on_another_gpu_count_than_registered_is_skipped_with_why(tmp_path):
    folder = tmp_path / MOE3.name
    folder.mkdir()
    shutil.copy(MOE3 / "registered.yaml", folder)
    doc = json.loads((MOE4 / "megatron-moe-h200-x1-e16-top4-ffn2048-ep1-armB.json").read_text())
    doc = {**doc, "world_size": 4, "parallel": {**doc["parallel"], "ep": 2}}
    (folder / "megatron-moe-h200-x4-e16-top4-ffn2048-ep2-armA.json").write_text(json.dumps(doc))
    rows, skipped = moe_lab.read_set(folder)
    assert rows == [] and [s.why for s in skipped] == ["ran on 4 GPUs where the registration predicted 2"]
    labels = [r.row for r in moe_lab_residuals(moe_lab.read_set(MOE4)[0])]
    assert len(labels) == len(set(labels)) == 14     # each launch its own label: lease2's rows are marked


def test_moe5_rows_join_the_local_spec_at_their_registered_predictions():
    from simcluster.strict import load_yaml

    rows, _ = moe_lab.read_set(MOE5)
    registered = load_yaml(MOE5 / "registered.yaml")["runs"]
    assert len(rows) == 4 and {r["arm"] for r in rows} == {"B"} and {r["gpus"] for r in rows} == {2}
    for r in rows:
        assert r["predicted_s"] == registered[r["run"]]["predicted_step_s"]   # the registered step, not today's model
        assert -0.19 < r["predicted_s"] / r["measured_s"] - 1 < -0.13       # the Result: -13.7 .. -18.1%
    assert MOE5.name in {r["source"] for r in moe_lab.held_out_rows()}
