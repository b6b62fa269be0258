"""Goodput: interruptions, checkpoints and restarts (llm/goodput.py, llm/goodput_des.py, llm/reliability.py,
reference/reliability.py): hand-computed closed forms, the job DES against them, error paths, determinism."""

from __future__ import annotations

import json
import math
import pathlib
import re

import pytest
import yaml

from simcluster.cli import main
from simcluster.cost import time_to_train_s
from simcluster.errors import ScenarioError, SimclusterError
from simcluster.llm.goodput import checkpoint_bytes, checkpoint_plan, expected_job_s, expected_segment_s, first_order_goodput, young_daly_s
from simcluster.llm.goodput_des import simulate_job
from simcluster.llm.reliability import CheckpointStorage, Reliability, parse_failure_rate
from simcluster.llm.spec import TransformerSpec
from simcluster.plan.search import read_plan
from simcluster.reference.reliability import validate_published_reliability
from simcluster.scenario import load, load_variants

ROOT = pathlib.Path(__file__).resolve().parents[1]
HOUR = 3600.0


def test_young_daly_by_hand():
    # delta 60 s, M 3 h = 10,800 s: sqrt(2 x 60 x 10,800) = sqrt(1,296,000) = 1,138.42 s
    assert young_daly_s(60.0, 10_800.0) == pytest.approx(1138.4199, rel=1e-6)


def test_first_order_goodput_by_hand():
    # tau 1000, delta 100, R 200, M 10,000: 1000/1100 x (1 - (200 + 1100/2) / 10,000) = 0.909091 x 0.925 = 0.840909
    assert first_order_goodput(1000.0, 100.0, 200.0, 10_000.0) == pytest.approx(0.840909, rel=1e-5)
    # asynchronous: the last write (300 s) is not yet durable: 0.909091 x (1 - 1050 / 10,000) = 0.813636
    assert first_order_goodput(1000.0, 100.0, 200.0, 10_000.0, 300.0) == pytest.approx(0.813636, rel=1e-5)


def test_exponential_segment_by_hand():
    # rate 1e-4/s, R 100 s, L + delta 1000 s: e^0.01 (e^0.1 - 1) / 1e-4 = 1.0100502 x 0.1051709 x 1e4 = 1062.28 s
    assert expected_segment_s(900.0, 100.0, 100.0, 1e-4) == pytest.approx(1.0100502 * 0.1051709 * 1e4, rel=1e-6)
    # no failures: the work and the checkpoint, nothing else
    assert expected_segment_s(900.0, 100.0, 100.0, 1e-12) == pytest.approx(1000.0, rel=1e-6)
    # a job of 2.5 intervals: two full segments and a half one, each with its checkpoint
    job = expected_job_s(2500.0, 1000.0, 100.0, 100.0, 1e-4)
    assert job == pytest.approx(2 * expected_segment_s(1000.0, 100.0, 100.0, 1e-4) + expected_segment_s(500.0, 100.0, 100.0, 1e-4))


def test_checkpoint_bytes_are_14_per_parameter():
    model = TransformerSpec(126, 16384, 53248, 128, 8, 128256, 8192)   # Llama 3 405B
    assert checkpoint_bytes(model) == model.parameter_count() * 14.0   # bf16 weight + fp32 master, m, v


def _uninterruptible_restarts_job_s(work, tau, delta, restart, rate):
    """A deliberately wrong form: each failure costs exactly R (restarts never interrupted), e^(lambda R) -> 1 + lambda R."""
    return work / tau * (1 + rate * restart) * math.expm1(rate * (tau + delta)) / rate


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_des_agrees_with_the_exponential_form(seed):
    """Synchronous checkpoints: the wall time is a sum of i.i.d. segment times, so the DES's own standard error (from
    its cycles) bounds its distance to the exact expectation; 4 standard errors: a correct model fails this for a
    given seed with probability 6e-5. The restart is half the MTBF, so restarts are interrupted often: the exponential
    form's e^(lambda R) = 1.65 against 1 + lambda R = 1.5 of a form with uninterruptible restarts is a 9% difference,
    which the test must see (rejected at > 4 standard errors: the SE is about 0.65% of the wall time)."""
    work, tau, delta, restart, rate = 8000 * HOUR, 1800.0, 300.0, 1800.0, 1 / HOUR
    run = simulate_job(work, tau, delta, 0.0, restart, rate, seed)
    expected = expected_job_s(work, tau, delta, restart, rate)
    assert abs(run.wall_s - expected) < 4 * run.wall_se_s
    assert run.wall_se_s / expected < 0.01   # the bound is tight enough to mean something
    wrong = _uninterruptible_restarts_job_s(work, tau, delta, restart, rate)
    assert wrong / expected < 0.92 and abs(run.wall_s - wrong) > 4 * run.wall_se_s   # the wrong form is rejected
    # interruptions: Poisson over the wall time (Wald): within 4 standard deviations of rate x E[T]
    assert abs(run.interruptions - rate * expected) < 4 * math.sqrt(rate * expected) + 4 * rate * run.wall_se_s


def test_des_standard_error_is_calibrated_across_seeds():
    """100 runs of a 2-day job at the 405B what-if's 16K-GPU parameters (M 3.09 h, tau 95.7 s, delta 0.4 s, R 10 min):
    their mean is within 4 standard errors of the exponential form, and their spread matches the standard error each
    run reports from its own cycles (a ratio within 0.75-1.33: about 3 standard deviations of a spread estimated from
    100 runs)."""
    work, tau, delta, restart, rate = 2 * 86400.0, 95.7, 0.396, 600.0, 1 / (3.093 * HOUR)
    runs = [simulate_job(work, tau, delta, 0.0, restart, rate, seed) for seed in range(100)]
    walls = [r.wall_s for r in runs]
    mean = sum(walls) / len(walls)
    spread = math.sqrt(sum((w - mean) ** 2 for w in walls) / (len(walls) - 1))
    assert abs(mean - expected_job_s(work, tau, delta, restart, rate)) < 4 * spread / math.sqrt(len(walls))
    reported = math.sqrt(sum(r.wall_se_s ** 2 for r in runs) / len(runs))
    assert 0.75 < spread / reported < 1.33


@pytest.mark.parametrize("seed", [3, 4])
def test_des_asynchronous_against_first_order(seed):
    """Asynchronous checkpoints have no exact form here: the first-order expression is checked within 4 standard
    errors plus its neglected second-order term, computed: ((R + P/2 + delta_w) / M)^2 = ((300 + 1805 + 1800) / 36,000)^2
    = 1.18%. The write (not yet durable for delta_w = 5% of the MTBF after each copy) is large enough that the same
    form without the not-durable term (5% off) is rejected."""
    work, tau, copy, write, restart, mtbf = 20_000 * HOUR, 3600.0, 10.0, 1800.0, 300.0, 10 * HOUR
    run = simulate_job(work, tau, copy, write, restart, 1 / mtbf, seed)
    slack = ((restart + (tau + copy) / 2 + write) / mtbf) ** 2
    assert slack == pytest.approx(0.01177, rel=1e-3)
    expected = work / first_order_goodput(tau, copy, restart, mtbf, write)
    assert abs(run.wall_s - expected) < 4 * run.wall_se_s + slack * expected
    wrong = work / first_order_goodput(tau, copy, restart, mtbf)   # a deliberately wrong form: durable at once
    assert abs(run.wall_s - wrong) > 4 * run.wall_se_s + slack * wrong


def test_des_asynchronous_with_an_instant_write_is_the_synchronous_job():
    a = simulate_job(500 * HOUR, 1800.0, 60.0, 0.0, 600.0, 1 / (5 * HOUR), seed=7)
    b = simulate_job(500 * HOUR, 1800.0, 60.0, 1e-9, 600.0, 1 / (5 * HOUR), seed=7)
    assert b.wall_s == pytest.approx(a.wall_s, abs=1e-3) and b.interruptions == a.interruptions


def test_des_is_deterministic_per_seed():
    args = (300 * HOUR, 1200.0, 30.0, 0.0, 600.0, 1 / (2 * HOUR))
    assert simulate_job(*args, seed=5) == simulate_job(*args, seed=5)
    assert simulate_job(*args, seed=5) != simulate_job(*args, seed=6)


def test_failure_rate_units():
    assert parse_failure_rate("2e-5/GPU-hour") == pytest.approx(2e-5 / 3600)
    assert parse_failure_rate("4.8e-4/GPU-day") == pytest.approx(4.8e-4 / 86400)
    for bad in ("2e-5", "2e-5/hour", "-1/GPU-hour", "0/GPU-hour", 3):
        with pytest.raises(ValueError):
            parse_failure_rate(bad)


def test_published_reliability_rows_are_the_named_arithmetic():
    v = validate_published_reliability(ROOT / "calibration" / "published")
    rows = {(r.source, r.configuration.split("rate from ")[-1]): r for r in v.rows}
    llama = rows["reliability-llama3-405b", "opt175b-chronicles run 0"]
    assert llama.measured == pytest.approx(54 * 24 * HOUR / 419)                            # 54 days / 419 unexpected
    assert llama.predicted == pytest.approx(1 / (16384 * 90 / (1024 * 56 * 24 * HOUR)))     # OPT's ~90 restarts at 16,384 GPUs
    rsc = rows["reliability-kokolis2025-rsc-unverified", "llama3-405b run 0"]
    assert rsc.measured == pytest.approx(7.9 * HOUR)                                         # a measured MTTF at 1,024 GPUs
    assert rows["reliability-opt175b-chronicles", "kokolis2025-rsc-unverified run 0"].predicted == pytest.approx(
        1 / (1024 * 6.5e-3 / (8 * 24 * HOUR)))                                               # 6.5 per 1000 node-days, 8 GPUs a node
    ck = rows["reliability-opt175b-chronicles", "checkpoint of 175B parameters"]
    assert (ck.measured, ck.predicted) == (1.6e12, pytest.approx(175e9 * 14)) and ck.error == pytest.approx(1 - 2.45 / 1.6)
    bloom = rows["reliability-bloom176b-chronicles", "checkpoint of 176.236B parameters"]
    assert bloom.measured == pytest.approx(2.3 * 2**40, rel=1e-3) and bloom.predicted == pytest.approx(176.236e9 * 14)
    assert all(r.held_out for r in v.rows)
    assert not any(r.run in (2, 3) for r in v.rows if "kokolis" in r.source)                # projections: not compared


GOOD = ("{failure_rate: 1e-3/GPU-hour, restart: 10min, checkpoint: {storage: {nvme: "
        "%s/models/nvme/micron-9400-pro-7.68tb.yaml, drives: 2, replica: 100GB/s}, interval: auto}}")


def _write(tmp_path, reliability=GOOD, tokens="2G"):
    """Llama 3 8B on one node of 8 H100 (TP 8) with a reliability block (YAML flow text, `%s` the checkout)."""
    doc = {"name": "t", "seed": 3,
           "machine": {"card": f"{ROOT}/models/collective/h200x4-nvlink.yaml", "gpus_per_node": 8,
                       "gpu": {"card": f"{ROOT}/models/gpu/h100-sxm.yaml"}},
           "jobs": [{"kind": "llm_training", "parallel": {"tp": 8}, "global_batch": 16, "micro_batch": 1, "train_tokens": tokens,
                     "model": dict(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256, seq=8192),
                     "reliability": yaml.safe_load(reliability.replace("%s", str(ROOT)))}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, default_flow_style=False, sort_keys=False))
    return path


def test_predict_training_json_has_goodput_and_is_deterministic(tmp_path, capsys):
    path = _write(tmp_path)
    outs = []
    for _ in range(2):
        assert main(["predict", "training", "--scenario", str(path), "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    out = outs[0]
    assert outs[0] == outs[1]
    for key in ("goodput", "checkpoint_s", "checkpoint_interval_s", "mtbf_s", "expected_interruptions", "days_to_train"):
        assert out[key] > 0
    assert out["mtbf_s"] == pytest.approx(3600 / (8 * 1e-3))
    # 8B x 14 bytes over one node's two drives at 7 GB/s each, durable once copied on at 100 GB/s
    assert out["checkpoint_s"] == pytest.approx(out["checkpoint_bytes"] / 14e9)
    assert out["checkpoint_not_durable_s"] == pytest.approx(out["checkpoint_bytes"] / 100e9)
    assert out["checkpoint_interval_s"] >= out["checkpoint_not_durable_s"]
    assert out["days_to_train"] == pytest.approx(out["productive_s"] / out["goodput"] / 86400)
    assert out["simulated"]["seed"] == 3


@pytest.mark.parametrize("reliability,message", [
    ("{failure_rate: 1e-3/hour, restart: 10min, checkpoint: {storage: {filesystem: 1TB/s}}}",
     "jobs[0].reliability.failure_rate: '1e-3/hour' is not a failure rate per GPU"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 10 parsecs, checkpoint: {storage: {filesystem: 1TB/s}}}",
     "jobs[0].reliability.restart:"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 1min, checkpoint: {storage: {filesystem: 1TB/s}}, spare: 2}",
     "jobs[0].reliability.spare: unknown key 'spare'"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 1min, checkpoint: {storage: {tape: 1}}}",
     "jobs[0].reliability.checkpoint.storage: expected {nvme: CARD, drives: N, replica: RATE}"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 1min, checkpoint: {storage: {filesystem: 1TB/s}, interval: soon}}",
     "jobs[0].reliability.checkpoint.interval:"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 1min, checkpoint: {storage: {filesystem: 1TB/s}, async_copy: 0GB/s}}",
     "jobs[0].reliability.checkpoint.async_copy: expected a rate > 0"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 1min, checkpoint: {storage: {nvme: %s/models/nvme/local-vda-2026-11-22.yaml, drives: 1, "
     "replica: 1TB/s}}}", "jobs[0].reliability.checkpoint.storage.nvme: the card local-vda-2026-11-22 states no write_bandwidth"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 1min, checkpoint: {storage: {nvme: %s/models/nvme/micron-9400-pro-7.68tb.yaml, drives: 0, "
     "replica: 1TB/s}}}",
     "jobs[0].reliability.checkpoint.storage.drives: expected an integer from 1 to 64"),
    ("{failure_rate: {published: %s/calibration/published/reliability-llama3-405b.yaml, run: 4}, restart: 1min, "
     "checkpoint: {storage: {filesystem: 1TB/s}}}", "jobs[0].reliability.failure_rate: run 4 is not a run of the file"),
    ("{failure_rate: {published: %s/calibration/published/reliability-kokolis2025-rsc-unverified.yaml, run: 1}, restart: 1min, "
     "checkpoint: {storage: {filesystem: 1TB/s}}}", "jobs[0].reliability.failure_rate: run 1 gives an MTTF at one job size, not a rate"),
])
def test_reliability_errors_are_one_line_at_the_key(tmp_path, reliability, message):
    path = _write(tmp_path, reliability)
    with pytest.raises(ScenarioError) as err:
        load(path)
    text = str(err.value)
    assert message in text and "\n" not in text and f"{path}:" in text


@pytest.mark.parametrize("reliability,tokens,message", [
    ("{failure_rate: 1/GPU-hour, restart: 10min, checkpoint: {storage: {filesystem: 1TB/s}, interval: 10h}}", "2G",
     "jobs[0].reliability: a checkpoint period"),
    ("{failure_rate: 1e-6/GPU-hour, restart: 10min, checkpoint: {storage: {filesystem: 1TB/s}, interval: 3s}}", "1P",
     "past the limit of 100,000,000 (--max-events)"),
    ("{failure_rate: 1e-6/GPU-hour, restart: 10min, checkpoint: {storage: {filesystem: 1TB/s}, interval: 1s}}", "2G",
     "jobs[0].reliability.checkpoint.interval: 1 s is shorter than one step (2.7"),   # 2.6xx s before session 39's cuDNN form
    ("{failure_rate: 1e-6/GPU-hour, restart: 10min, checkpoint: {storage: {filesystem: 1GB/s}, interval: 30s, async_copy: 10GB/s}}",
     "2G", "jobs[0].reliability.checkpoint.interval: 30 s is shorter than a checkpoint takes to become durable"),
])
def test_jobs_the_model_refuses_are_one_line_at_the_key(tmp_path, capsys, reliability, tokens, message):
    """Refusals found before the step time is known (a huge failure rate) and after it (the DES bound, an interval
    shorter than a step or than the durable write) name the file, the reliability block's line and the key."""
    path = _write(tmp_path, reliability, tokens)
    assert main(["predict", "training", "--scenario", str(path), "--json"]) == 2
    err = capsys.readouterr().err
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith("reliability:"))
    assert message in err and err.count("\n") == 1 and f"{path}:{line}: jobs[0].reliability" in err


def test_a_huge_failure_rate_is_refused_when_read_naming_the_variant(tmp_path):
    """Read time, before any simulation: the what-if variant's own key and line, and the loss it printed is
    lambda (P + R + the time until durable), the quantity the refusal tests."""
    path = _write(tmp_path)
    doc = yaml.safe_load(path.read_text())
    job = json.loads(json.dumps(doc["jobs"][0]))
    job["reliability"] = yaml.safe_load("{failure_rate: 1/GPU-hour, restart: 10min, checkpoint: {storage: {filesystem: 1GB/s}, "
                                        "interval: 10h, async_copy: 10GB/s}}")
    doc["variants"] = {"base": {}, "flaky": {"jobs": [job]}}
    path.write_text(yaml.safe_dump(doc, default_flow_style=False, sort_keys=False))
    with pytest.raises(ScenarioError) as err:
        load_variants(path)
    text = str(err.value)
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if t.strip() == "reliability:" and i > 30)
    assert f"{path}:{line}: variants.flaky.jobs[0].reliability: a checkpoint period" in text
    m = re.search(r"period \(([\d.e+]+) s\) plus a restart \(([\d.e+]+) s\) plus the time until durable \(([\d.e+]+) s\) is "
                  r"([\d.e+]+) MTBFs \(([\d.e+]+) s\)", text)
    period, restart, durable, loss, mtbf = map(float, m.groups())
    assert loss == pytest.approx((period + restart + durable) / mtbf, rel=2e-3)


def test_nvme_checkpoints_need_a_shared_copy(tmp_path):
    """A node's drives are lost with it: NVMe without a replica is refused; with one, the checkpoint is durable once
    copied on (bytes / the replica's rate after the local write), and the closed forms and the DES count that time."""
    no_copy = "{failure_rate: 1e-3/GPU-hour, restart: 10min, checkpoint: {storage: {nvme: %s/models/nvme/micron-9400-pro-7.68tb.yaml, drives: 2}}}"
    with pytest.raises(ScenarioError, match=r"jobs\[0\].reliability.checkpoint.storage.replica: a checkpoint on local NVMe is lost"):
        load(_write(tmp_path, no_copy))
    rel = load(_write(tmp_path)).jobs[0].reliability
    assert rel.storage.local_write_s(14e9, 1) == pytest.approx(1.0)                  # 14 GB on 2 x 7 GB/s
    assert rel.storage.durable_s(14e9, 1) == pytest.approx(1.0 + 14e9 / 100e9)       # then copied on at 100 GB/s


def _async_rel(write_s: float, model: TransformerSpec) -> Reliability:
    storage = CheckpointStorage(None, checkpoint_bytes(model) / write_s, "a file system")
    return Reliability(1e-5 / HOUR, "test", 600.0, storage, None, 1e15)


def test_async_interval_is_at_least_the_write_after_rounding_to_steps():
    """Young/Daly's interval (tiny: the copy blocks 1e-4 s) rounded to 3 s steps would be 3 x 3 = 9 s if raised to
    the write time less the copy before rounding; the job DES starts the write after the copy, so the interval must
    be >= the write (10 s): 4 steps, 12 s, and the output says it was raised."""
    model = TransformerSpec(2, 256, 512, 4, 4, 1000, 128)
    plan = checkpoint_plan(model, _async_rel(10.0, model), gpus=8, gpus_per_node=8, step_time_s=3.0)
    assert plan.not_durable_s == pytest.approx(10.0) and plan.interval_s == pytest.approx(12.0)
    assert "interval raised from Young/Daly's" in plan.note and "durable 10 s after" in plan.note


def test_an_auto_interval_shorter_than_a_step_is_raised_and_said():
    model = TransformerSpec(2, 256, 512, 4, 4, 1000, 128)
    rel = Reliability(1e-5 / HOUR, "test", 600.0, CheckpointStorage(None, 1e15, "fs"), None, None)
    plan = checkpoint_plan(model, rel, gpus=8, gpus_per_node=8, step_time_s=1e6)
    assert plan.interval_s == 1e6 and plan.note.startswith("interval raised from Young/Daly's") and "one step" in plan.note


def test_train_tokens_without_reliability_is_refused(tmp_path):
    path = _write(tmp_path)
    doc = yaml.safe_load(path.read_text())
    del doc["jobs"][0]["reliability"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ScenarioError, match=r"jobs\[0\].train_tokens: days to train need a reliability: block"):
        load(path)


def test_train_tokens_must_be_a_count(tmp_path):
    with pytest.raises(ScenarioError, match=r"jobs\[0\].train_tokens: 'lots' is not a count"):
        load(_write(tmp_path, tokens="lots"))


def test_plan_time_to_train_divides_by_the_steady_state_goodput():
    """The plan's own target tokens at the closed-form steady-state goodput, never the job's train_tokens goodput."""
    row = {"jobs[0].tokens_per_s": 1e6, "jobs[0].goodput_steady": 0.8, "jobs[0].goodput": 0.5}
    assert time_to_train_s(row, 1e12) == pytest.approx(1e6 / 0.8)
    assert time_to_train_s({"jobs[0].tokens_per_s": 1e6}, 1e12) == pytest.approx(1e6)


def test_published_rows_print_each_count_interval_and_the_one_paper_row():
    v = validate_published_reliability(ROOT / "calibration" / "published")
    details = " ".join(r.detail for r in v.rows)
    for interval in ("419 unexpected interruptions (95% Poisson 380-461)", "90 restarts (approximate) (95% Poisson 72.4-111)",
                     "1 unexpected interruptions (95% Poisson 0.0253-5.57)"):
        assert interval in details
    own = [r for r in v.rows if r.source == "reliability-kokolis2025-rsc-unverified" and "kokolis2025-rsc-unverified run 0" in r.configuration]
    assert len(own) == 1 and "separate measurements from one paper" in own[0].detail
    assert v.target == 0.25


@pytest.mark.parametrize("edit,message", [
    (("gpus", "16k"), "runs[0]: key 'gpus': '16k' is not a valid value"),
    (("gpus", 16384.5), "runs[0]: key 'gpus': 16384.5 is not a valid value"),
    (("gpus", True), "runs[0]: key 'gpus': True is not a valid value"),
    (("duration_days", 0), "runs[0]: key 'duration_days': 0 is not a valid value"),
    (("interruptions", {"total": 3}), "runs[0].interruptions: missing key 'restarts'"),
    (("gpu_count", 3), "runs[0]: unknown key 'gpu_count'"),
    (("checkpoint", {"bytes": "2TB", "parameters": 1e9}), "runs[0].checkpoint: key 'bytes': '2TB' is not a valid value"),
])
def test_bad_published_reliability_files_are_one_line_at_the_key(tmp_path, edit, message):
    doc = yaml.safe_load((ROOT / "calibration/published/reliability-llama3-405b.yaml").read_text())
    doc["runs"][0][edit[0]] = edit[1]
    path = tmp_path / "reliability-bad.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SimclusterError) as err:
        validate_published_reliability(path)
    text = str(err.value)
    assert message in text and str(path) in text and "\n" not in text


def test_a_plan_refuses_a_job_with_train_tokens(tmp_path):
    """The plan trains its target tokens at each point's steady-state goodput: a job's train_tokens (its own DES at
    every point) is refused at its key."""
    text = (ROOT / "scenarios/plans/llama8b.yaml").read_text().replace("../../", f"{ROOT}/")
    text = text.replace("catalogue: catalogue-2026.yaml", f"catalogue: {ROOT}/scenarios/plans/catalogue-2026.yaml")
    path = tmp_path / "plan.yaml"
    path.write_text(text.replace("    micro_batch: 1\n", "    micro_batch: 1\n    train_tokens: 2T\n", 1))
    with pytest.raises(ScenarioError, match=r"plan.yaml:\d+: jobs\[0\].train_tokens: a plan trains plan.target.tokens"):
        read_plan(path)
