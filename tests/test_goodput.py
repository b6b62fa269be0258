"""Goodput: interruptions, checkpoints and restarts (llm/goodput.py, llm/goodput_des.py, llm/reliability.py,
reference/reliability.py): hand-computed closed forms, the job DES against them, error paths, determinism."""

from __future__ import annotations

import json
import math
import pathlib

import pytest
import yaml

from simcluster.cli import main
from simcluster.errors import ScenarioError
from simcluster.llm.goodput import checkpoint_bytes, expected_job_s, expected_segment_s, first_order_goodput, young_daly_s
from simcluster.llm.goodput_des import simulate_job
from simcluster.llm.reliability import parse_failure_rate
from simcluster.llm.spec import TransformerSpec
from simcluster.plan.cost import time_to_train_s
from simcluster.reference.reliability import validate_published_reliability
from simcluster.scenario import load

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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_des_agrees_with_the_exponential_form(seed):
    """Synchronous checkpoints: the wall time is a sum of i.i.d. segment times, so the DES's own standard error (from
    its cycles) bounds its distance to the exact expectation; 4 standard errors: a correct model fails this for a
    given seed with probability 6e-5. The parameters make failures frequent (about 4,000 in the job) so the test is
    sharp: the expected wall time is 6.7x the work."""
    work, tau, delta, restart, rate = 2000 * HOUR, 1800.0, 300.0, 600.0, 1 / HOUR
    run = simulate_job(work, tau, delta, 0.0, restart, rate, seed)
    expected = expected_job_s(work, tau, delta, restart, rate)
    assert abs(run.wall_s - expected) < 4 * run.wall_se_s
    assert run.wall_se_s / expected < 0.02   # the bound is tight enough to mean something
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


def test_des_asynchronous_against_first_order():
    """Asynchronous checkpoints have no exact form here: the first-order expression is checked within 4 standard
    errors plus 1% (its neglected terms are of order (P / M)^2 = (1810 s / 10 h)^2 = 0.25%)."""
    work, tau, copy, write, restart, mtbf = 20_000 * HOUR, 1800.0, 10.0, 120.0, 300.0, 10 * HOUR
    run = simulate_job(work, tau, copy, write, restart, 1 / mtbf, seed=3)
    expected = work / first_order_goodput(tau, copy, restart, mtbf, write)
    assert abs(run.wall_s - expected) < 4 * run.wall_se_s + 0.01 * expected


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
        "%s/models/nvme/micron-9400-pro-7.68tb.yaml, drives: 2}, interval: auto}}")


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
    # 8B x 14 bytes over one node's two drives at 7 GB/s each
    assert out["checkpoint_s"] == pytest.approx(out["checkpoint_bytes"] / 14e9)
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
     "jobs[0].reliability.checkpoint.storage: expected {nvme: CARD, drives: N}"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 1min, checkpoint: {storage: {filesystem: 1TB/s}, interval: soon}}",
     "jobs[0].reliability.checkpoint.interval:"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 1min, checkpoint: {storage: {filesystem: 1TB/s}, async_copy: 0GB/s}}",
     "jobs[0].reliability.checkpoint.async_copy: expected a positive rate"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 1min, checkpoint: {storage: {nvme: %s/models/nvme/local-vda-2026-11-22.yaml, drives: 1}}}",
     "jobs[0].reliability.checkpoint.storage.nvme: the card local-vda-2026-11-22 states no write_bandwidth"),
    ("{failure_rate: 1e-3/GPU-hour, restart: 1min, checkpoint: {storage: {nvme: %s/models/nvme/micron-9400-pro-7.68tb.yaml, drives: 0}}}",
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
     "the job would almost never reach its next checkpoint"),
    ("{failure_rate: 1e-6/GPU-hour, restart: 10min, checkpoint: {storage: {filesystem: 1TB/s}, interval: 1s}}", "1P",
     "more than the job DES simulates"),
])
def test_jobs_the_model_refuses_are_one_line(tmp_path, capsys, reliability, tokens, message):
    path = _write(tmp_path, reliability, tokens)
    assert main(["predict", "training", "--scenario", str(path), "--json"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and str(path) in err


def test_train_tokens_must_be_a_count(tmp_path):
    with pytest.raises(ScenarioError, match=r"jobs\[0\].train_tokens: 'lots' is not a count"):
        load(_write(tmp_path, tokens="lots"))


def test_plan_time_to_train_divides_by_goodput():
    row = {"jobs[0].tokens_per_s": 1e6, "jobs[0].goodput": 0.8}
    assert time_to_train_s(row, 1e12) == pytest.approx(1e6 / 0.8)
    assert time_to_train_s({"jobs[0].tokens_per_s": 1e6}, 1e12) == pytest.approx(1e6)
