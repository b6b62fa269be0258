"""The Hugging Face Trainer frameworks (llm/framework.HF_DEEPSPEED, HF_DEEPSPEED_OVERLAP, HF_FSDP1; session 55 hfds55):
DeepSpeed's overlap_comm false puts the data-parallel reductions on the compute stream while ZeRO-3's gathers stay beside
it, prefetched (llm/dp_beside.py; mendC55), ZeRO-3 under DeepSpeed gathers and reduces module by module (one call per
weight matrix), the refusals at their keys (fp8 too), the caveat, the family."""

from __future__ import annotations

import pathlib
from dataclasses import replace
from types import SimpleNamespace

import pytest

from simcluster.build import llm_network
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import comm, dp_beside, hsdp
from simcluster.llm.framework import FMS_FSDP, FRAMEWORKS, HF_DEEPSPEED, HF_DEEPSPEED_OVERLAP, HF_FSDP1
from simcluster.llm.param_counts import stage_params
from simcluster.llm.predict import predict_llm
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec
from simcluster.llm.spec_check import check_framework
from simcluster.scenario import load
from simcluster.trust.regime import framework_family, llm_regime, published_family

ROOT = pathlib.Path(__file__).resolve().parent.parent
LLAMA2_7B = TransformerSpec(32, 4096, 11008, 32, 32, 32000, 4096)
LLAMA3_8B = TransformerSpec(32, 4096, 14336, 32, 8, 128256, 4096)
BATCH = BatchSpec(256, 2)


@pytest.fixture(scope="module")
def h100():
    machine = load(ROOT / "scenarios/llm/fsdp-hsdp-7b.yaml").machine   # 16 nodes x 8 H100
    return load_gpu(machine.gpu_card)[0], llm_network(machine)


def _step(fw, par, batch=BATCH, model=LLAMA2_7B, machine=None):
    gpu, net = machine
    return predict_llm(model, par, batch, gpu, net, par.gpus, trace=False, framework=fw)


def test_the_specs_say_what_their_sources_say():
    """bf16 weights, gathers and reductions under DeepSpeed (2 / 2 bytes), 12 bytes of fp32 master and moments, separate
    q / k / v, eager Llama; FSDP1 takes fms-fsdp's FSDP1 values (the same mechanism and dtypes); only DeepSpeed's
    overlap_comm false puts its reductions on the compute stream, only DeepSpeed's ZeRO-3 fetches per module; both
    DeepSpeed variants run their ZeRO-3 gathers beside compute (async, prefetched), so both carry the interference."""
    assert (HF_DEEPSPEED.param_bytes, HF_DEEPSPEED.grad_bytes, HF_DEEPSPEED.state_bytes) == (2.0, 2.0, 12.0)
    assert not HF_DEEPSPEED.fused_qkv and HF_DEEPSPEED.eager and HF_DEEPSPEED.attention_kernel == "fa2"
    assert HF_DEEPSPEED.bucket_params == 500_000_000 and HF_DEEPSPEED.adam_bytes == 44.0
    assert replace(HF_FSDP1, name=FMS_FSDP.name, hf_llama_saves=False) == FMS_FSDP   # but the HF Llama's saved tensors (hf_memory)
    assert {n for n, f in FRAMEWORKS.items() if f.dp_on_compute_stream} == {"hf-deepspeed"}
    assert {n for n, f in FRAMEWORKS.items() if f.zero3_module_calls} == {"hf-deepspeed", "hf-deepspeed-overlap"}
    assert HF_DEEPSPEED_OVERLAP.comm_interference and HF_DEEPSPEED.comm_interference


def test_deepspeed_zero3_calls_one_collective_per_weight_matrix():
    """q, k, v, o, gate, up, down: 7 calls a layer under DeepSpeed (per-submodule fetch), 1 per FSDP unit otherwise."""
    assert dp_beside.calls_per_layer(LLAMA2_7B, HF_DEEPSPEED) == 7
    assert dp_beside.calls_per_layer(LLAMA2_7B, HF_FSDP1) == dp_beside.calls_per_layer(LLAMA2_7B, FMS_FSDP) == 1


def test_on_the_compute_stream_the_reductions_are_exposed_in_full_and_the_gathers_are_not():
    """dp_on_compute_stream (DeepSpeed overlap_comm false): the forward's gathers are still prefetched beside the compute
    (hidden but the first call: DeepSpeed's async gathers, cold review C55 item 1); the backward's reduce_scatters add
    their whole time and none runs after it; the buckets' reductions all inside the backward, none left."""
    serial = replace(HF_DEEPSPEED_OVERLAP, comm_interference=False, dp_on_compute_stream=True)
    beside = replace(serial, dp_on_compute_stream=False)
    z, gpu = hsdp.Zero3Calls(0.4, 0.6, 0.0, 10, True), SimpleNamespace(overlap_compute_slowdown=0.0, overlap_comm_rate=1.0)
    assert dp_beside.forward_gather_s(1.0, 0.4, 10, gpu, serial) == pytest.approx(0.04)   # hidden but the first call
    assert dp_beside.forward_gather_s(1.0, 0.4, 10, gpu, beside) == pytest.approx(0.04)
    assert z.backward_dp_s(1.0, gpu, serial) == pytest.approx(0.04 + 0.6) and z.tail_s == 0.0
    assert z.backward_dp_s(0.2, gpu, serial) == pytest.approx(0.2 + 0.04 + 0.6)   # gathers past the compute: their excess
    assert replace(z, serial=False).backward_dp_s(1.0, gpu, beside) == pytest.approx(0.04)
    assert dp_beside.buckets_beside(1.0, [0.2, 0.3], gpu, serial) == (0.5, [0.0, 0.0])
    assert dp_beside.buckets_beside(1.0, [0.2, 0.3], gpu, beside) == (0.0, [0.2, 0.3])


def test_the_serial_zero3_step_exposes_every_reduce_scatter_and_hides_the_gathers(h100):
    """hf-deepspeed ZeRO-3 over 128 GPUs (interference off, so the arithmetic is exact): the exposed data-parallel time
    is, per micro-batch, every reduce_scatter (7 calls per layer priced on the DP group) and the forward's and backward's
    first gather call, the rest of the gathers hidden behind compute; with overlap_comm true (hf-deepspeed-overlap) the
    reduce_scatters hide too, so less is exposed."""
    gpu, net = h100
    par, batch = ParallelSpec(dp=128, zero=3), BatchSpec(512, 4)
    serial = replace(HF_DEEPSPEED, comm_interference=False)
    r = _step(serial, par, batch, machine=h100)
    params = stage_params(LLAMA2_7B, par, 0)
    z = hsdp.zero3_calls(net, comm.groups(par, net), par, serial, params.dense, params.expert, 32 * 7)
    m = batch.micro_batches(par.dp)
    assert z.gather_s < r.breakdown["compute"] / (3 * m)    # the gathers fit under a forward's compute: hidden
    assert r.breakdown["exposed_dp_comm"] == pytest.approx(m * (2 * z.gather_s / z.layers + z.scatter_s), rel=1e-6)
    assert r.breakdown["exposed_dp_comm"] < m * (2 * z.gather_s + z.scatter_s)   # less than serial gathers would expose
    overlap = _step(replace(HF_DEEPSPEED_OVERLAP, comm_interference=False), par, batch, machine=h100)
    assert overlap.breakdown["exposed_dp_comm"] < r.breakdown["exposed_dp_comm"]


def test_the_serial_zero2_step_is_slower_than_the_overlapped_one(h100):
    """ZeRO-2: with overlap_comm false the buckets' reductions are inside every backward; overlapped, they run beside it."""
    par = ParallelSpec(dp=128, zero=2)
    serial, beside = (_step(fw, par, machine=h100) for fw in (replace(HF_DEEPSPEED, comm_interference=False),
                                                               replace(HF_DEEPSPEED_OVERLAP, comm_interference=False)))
    assert serial.step_time_s > beside.step_time_s and serial.breakdown["compute"] == beside.breakdown["compute"]


@pytest.mark.parametrize("fw, par, key", [
    ("hf-deepspeed", ParallelSpec(dp=4, tp=2, zero=3), "parallel.tp"),
    ("hf-fsdp1", ParallelSpec(dp=4, pp=2, zero=2), "parallel.pp"),
    ("hf-deepspeed", ParallelSpec(dp=8, zero=0), "parallel.zero"),
    ("hf-fsdp1", ParallelSpec(dp=8, zero=1), "parallel.zero"),
    ("hf-deepspeed-overlap", ParallelSpec(dp=8, zero=3, grad_sync="step"), "parallel.grad_sync"),
    ("hf-deepspeed", ParallelSpec(dp=16, zero=3, dp_shard=8), "parallel.dp_shard"),
])
def test_what_the_trainers_do_not_run_is_refused_at_its_key(fw, par, key):
    with pytest.raises(LlmConfigError) as e:
        check_framework(par, FRAMEWORKS[fw])
    assert e.value.key == key and "\n" not in str(e.value)


def test_hsdp_and_deepspeed_zero1_are_accepted():
    check_framework(ParallelSpec(dp=16, zero=3, dp_shard=8), HF_FSDP1)
    check_framework(ParallelSpec(dp=16, zero=1), HF_DEEPSPEED)


def test_their_rows_are_the_fsdp_zero_family_and_their_answers_a_regime_of_their_own():
    assert {framework_family(n) for n in ("hf-deepspeed", "hf-deepspeed-overlap", "hf-fsdp1")} == {"Hugging Face Trainer"}
    assert published_family("hf-deepspeed", False, 4096, 1, "bf16") == "FSDP/ZeRO"
    assert llm_regime("hf-fsdp1", 1, 1, 1, 3, False, "bf16", 64).key == "llm | Hugging Face Trainer | ZeRO-3/FSDP | bf16"


def test_an_answer_under_them_says_what_is_not_priced(h100):
    r = _step(HF_DEEPSPEED, ParallelSpec(dp=128, zero=3), model=LLAMA3_8B, machine=h100)
    assert any("not priced: the host time of their hooks" in c for c in r.caveats)
    assert not any("Hugging Face" in c for c in _step(FMS_FSDP, ParallelSpec(dp=128, zero=3), machine=h100).caveats)


@pytest.mark.parametrize("name", ["hf-deepspeed", "hf-deepspeed-overlap", "hf-fsdp1"])
def test_fp8_is_refused_at_the_precision_key(name, h100):
    """The Trainer frameworks are bf16 only (no fp8 GEMM path priced: cold review C55 item 6): fp8 is refused in one
    line at `precision`, through check_framework and through predict_llm; bf16 passes."""
    par = ParallelSpec(dp=8, zero=3)
    check_framework(par, FRAMEWORKS[name], "bf16")
    with pytest.raises(LlmConfigError) as e:
        _step(FRAMEWORKS[name], par, BatchSpec(64, 1, "fp8"), machine=h100)
    assert e.value.key == "precision" and "fp8" in str(e.value) and "\n" not in str(e.value)


def test_the_caveat_names_each_frameworks_hooks_and_its_evidence():
    """Cold review C55 item 7: FSDP1's answer names FSDP1's hooks (not DeepSpeed's), every answer quotes the two held-out
    errors, and only the overlap_comm-false variant says it has no held-out row."""
    from simcluster.llm.caveats import hf_trainer
    fsdp1, ds, dso = (hf_trainer(n) for n in ("hf-fsdp1", "hf-deepspeed", "hf-deepspeed-overlap"))
    assert "FSDP1's" in fsdp1 and "DeepSpeed ZeRO-3 fetches" not in fsdp1
    assert all("+8.2%" in t and "+10.1%" in t for t in (fsdp1, ds, dso))
    assert "no held-out row" in ds and "no held-out row" not in dso + fsdp1
    # final read 55: the hooks' measured size (hfdev55 / hfhook55 ranges of h a layer a step), ZeRO-3's with its caveat
    assert "2.3-4.6 ms" in fsdp1 and "11-18 ms" in ds and "11-18 ms" in dso and "11-18 ms" not in fsdp1
