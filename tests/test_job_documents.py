"""Issue 45: every scenario job kind is read through its declaration (simcluster/job_documents.py): a wrong field is one
line FILE:LINE: KEY at the job's own line, whatever the kind; a declared default is what the reader runs with."""

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster import job_documents as jd
from simcluster import schema
from simcluster.errors import ScenarioError
from simcluster.scenario import load, load_variants

ROOT = Path(__file__).resolve().parents[1]
MACHINE = {"card": str(ROOT / "models/collective/h200x4-nvlink.yaml"), "gpus_per_node": 8, "nodes": 4,
           "nic": {"card": str(ROOT / "models/nic/seed000-roce-100g.yaml"), "per_node": 1},
           "fabric": {"kind": "leaf-spine", "down_ports": 4, "spines": 2},
           "gpu": {"card": str(ROOT / "models/gpu/h200-sxm.yaml")}}
RELIABILITY = {"failure_rate": "2e-5/GPU-hour", "restart": "10min", "checkpoint": {"storage": {"filesystem": "1TB/s"}}}
JOBS = {
    "collective_sweep": {"kind": "collective_sweep", "op": "all_reduce", "min_size": "1M", "max_size": "4M"},
    "qperf": {"kind": "qperf", "tests": ["tcp_bw"]},
    "concurrent": {"kind": "concurrent", "op": "all_reduce", "size": "1G", "groups": ["0-1", "2-3"]},
    "training": {"kind": "training", "workload": str(ROOT / "models/training/seed000-resnet18-224-b128.yaml"),
                 "dataset_samples": 1000},
    "llm_training": {"kind": "llm_training", "model": {"layers": 4, "hidden": 1024, "ffn": 4096, "heads": 16,
                                                       "vocab": 32000, "seq": 1024},
                     "parallel": {"tp": 8, "dp": 4}, "global_batch": 32, "micro_batch": 1},
}


def _write(tmp_path, job, machine=MACHINE) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "machine": machine, "jobs": [job]}, sort_keys=False))
    return path


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("kind", sorted(JOBS))
def test_every_job_kind_reads_and_refuses_an_unknown_key_at_its_line(tmp_path, kind):
    assert getattr(load(_write(tmp_path, JOBS[kind])).jobs[0], "kind", "collective_sweep") == kind
    path = _write(tmp_path, {**JOBS[kind], "bogus_key": 1})
    with pytest.raises(ScenarioError) as err:
        load(path)
    text = err.value.one_line()
    assert f"s.yaml:{_line_of(path, 'bogus_key')}: jobs[0].bogus_key: unknown key 'bogus_key'" in text
    assert "\n" not in text and "expected one of:" in text and "kind" in text


@pytest.mark.parametrize("kind,change,key,why", [
    ("collective_sweep", {"min_size": "8M"}, "jobs[0].min_size", "min_size is larger than max_size"),
    ("collective_sweep", {"factor": 1}, "jobs[0].factor", "expected an integer from 2 to 1,048,576, got 1"),
    ("collective_sweep", {"algorithm": "zigzag"}, "jobs[0].algorithm", "expected one of auto, ring"),
    ("collective_sweep", {"max_size": "4 parsecs"}, "jobs[0].max_size", "'4 parsecs'"),
    ("qperf", {"tests": ["tcp_bw", "udp_lat"]}, "jobs[0].tests[1]", "expected one of tcp_bw, tcp_lat, rc_bw, rc_lat"),
    ("qperf", {"streams": 0}, "jobs[0].streams", "expected an integer from 1 to 4,096, got 0"),
    ("concurrent", {"groups": ["0-1", "3-3"]}, "jobs[0].groups[1]", "a job needs >= 2 distinct nodes"),
    ("concurrent", {"groups": ["0-1", "2-7"]}, "jobs[0].groups[1]", "a job needs >= 2 distinct nodes in 0..3"),
    ("training", {"epochs": float("nan")}, "jobs[0].epochs", "not a finite number"),
    ("training", {"storage": {"workload": "w.yaml", "nvme": "n.yaml", "drives": 0}}, "jobs[0].storage.drives",
     "expected an integer from 1 to 4,096, got 0"),
    ("training", {"loader_cpu_per_sample": "-1ms"}, "jobs[0].loader_cpu_per_sample", "'-1ms'"),
    ("llm_training", {"precision": "fp4"}, "jobs[0].precision", "expected one of bf16, fp8, got 'fp4'"),
    ("llm_training", {"train_tokens": "15T"}, "jobs[0].train_tokens", "days to train need a reliability: block"),
    ("llm_training", {"framework": {"name": "torch", "hots": "x"}}, "jobs[0].framework.hots", "unknown key 'hots'"),
    ("llm_training", {"framework": "jax"}, "jobs[0].framework", "expected one of megatron"),
    ("llm_training", {"reliability": {**RELIABILITY, "failure_rate": "3/GPU-week"}}, "jobs[0].reliability.failure_rate",
     "'3/GPU-week' is not a failure rate per GPU"),
    ("llm_training", {"reliability": {**RELIABILITY, "failure_rate": {"published": "x.yaml", "rn": 1}}},
     "jobs[0].reliability.failure_rate.rn", "unknown key 'rn'"),
    ("llm_training", {"reliability": {**RELIABILITY, "checkpoint": {"storage": {"filesystem": "1TB/s"}, "interval": "0s"}}},
     "jobs[0].reliability.checkpoint.interval", "expected auto or a positive time"),
    ("llm_training", {"reliability": {**RELIABILITY, "checkpoint": {"storage": {"nvme": "n.yaml", "drives": 65,
                                                                                "replica": "1TB/s"}}}},
     "jobs[0].reliability.checkpoint.storage.drives", "expected an integer from 1 to 64, got 65"),
])
def test_a_wrong_field_is_one_line_at_its_key(tmp_path, kind, change, key, why):
    job = {**copy.deepcopy(JOBS[kind]), **change}
    with pytest.raises(ScenarioError) as err:
        load(_write(tmp_path, job))
    text = err.value.one_line()
    assert f"{key}: " in text and why in text and "\n" not in text, text


def test_a_nested_model_field_is_refused_at_its_own_line(tmp_path):
    job = copy.deepcopy(JOBS["llm_training"])
    job["model"]["mlp"] = "relu"
    path = _write(tmp_path, job)
    with pytest.raises(ScenarioError) as err:
        load(path)
    assert f"s.yaml:{_line_of(path, 'mlp: relu')}: jobs[0].model.mlp: expected one of swiglu, gelu" in err.value.one_line()


def test_the_declared_defaults_are_what_the_reader_runs(tmp_path):
    sweep = load(_write(tmp_path, {"kind": "collective_sweep", "op": "allreduce"})).jobs[0]
    assert (sweep.op, sweep.ranks, sweep.min_bytes, sweep.max_bytes, sweep.factor, sweep.engine) == \
        ("all_reduce", 32, 8, 128 * 2**20, 2, "analytic")
    llm = load(_write(tmp_path, JOBS["llm_training"])).jobs[0]
    assert (llm.model.kv_heads, llm.parallel.zero, llm.parallel.recompute, llm.batch.precision) == (16, 0, "none", "bf16")


def test_a_variant_that_breaks_a_job_field_is_refused_at_the_variant_line(tmp_path):
    path = tmp_path / "v.yaml"
    doc = {"name": "t", "machine": MACHINE, "jobs": [JOBS["qperf"]],
           "variants": {"base": {}, "many": {"set": {"jobs[0].streams": 10**6}}}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ScenarioError) as err:
        load_variants(path)
    assert f"v.yaml:{_line_of(path, 'jobs[0].streams')}: variants.many.set.jobs[0].streams: expected an integer" \
        in err.value.one_line()


values = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(), st.text(max_size=6),
                   st.lists(st.integers(-3, 9), max_size=3))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(JOBS)), changes=st.dictionaries(st.sampled_from(
    ["op", "ranks", "min_size", "size", "factor", "tests", "streams", "groups", "epochs", "storage_stall", "global_batch",
     "micro_batch", "precision", "model", "parallel", "framework", "train_tokens", "algorithm", "engine"]), values,
    max_size=3))
def test_a_declaration_reads_or_refuses_in_one_line(kind, changes):
    declaration = {"collective_sweep": jd.SWEEP, "qperf": jd.QPERF, "concurrent": jd.CONCURRENT,
                   "training": jd.TRAINING, "llm_training": jd.LLM_TRAINING}[kind]
    vocab = {"algorithm": ("auto", "ring"), "recompute": ("none",), "moe_dispatcher": ("alltoall",),
             "pp_schedule": ("1f1b",), "precision": ("bf16",), "framework": ("megatron",)}
    try:
        schema.read(declaration, {**JOBS[kind], **changes}, vocab)
    except schema.Refusal as exc:
        assert exc.why and "\n" not in exc.why


def test_a_checkpoint_without_an_interval_is_young_daly(tmp_path):
    """Found by the branch's long fuzz run (seed 52): an absent interval reached the checkpoint plan as the text 'auto'
    (a TypeError); absent and 'auto' are both Young/Daly's optimum (None)."""
    for checkpoint in ({"storage": {"filesystem": "1TB/s"}}, {"storage": {"filesystem": "1TB/s"}, "interval": "auto"}):
        job = {**JOBS["llm_training"], "reliability": {**RELIABILITY, "checkpoint": checkpoint}}
        assert load(_write(tmp_path, job)).jobs[0].reliability.interval_s is None
