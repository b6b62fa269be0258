"""Megatron's main_grad accumulation in the gradient buffer's own element (session 60, FrameworkSpec.accumulate_bytes):
a bf16 buffer (grad_reduce_in_fp32 off) reads and writes 2 bytes where the fp32 one does 4, so the pass is 6 bytes a
weight element, not 10; the other frameworks' stated bytes are untouched; a scenario sets it with
framework.grad_reduce_in_fp32, refused in one line where the framework keeps no main_grad."""

from dataclasses import replace

import pytest
import yaml
from conftest import ROOT

from simcluster.errors import SimclusterError
from simcluster.llm import ops
from simcluster.llm.framework import FRAMEWORKS, MAIN_GRAD_FP32_BYTES, MEGATRON, WGRAD_BYTES
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

SPLITS = ROOT / "scenarios" / "llm" / "llama70b-splits.yaml"


def test_the_pass_reads_and_writes_the_buffers_element():
    assert MEGATRON.accumulate_bytes == MAIN_GRAD_FP32_BYTES == WGRAD_BYTES + 2 * 4
    assert replace(MEGATRON, grad_buffer_bytes=2.0).accumulate_bytes == 6.0
    # frameworks stating their own bytes (torchtitan's up-cast 6, DeepSpeed's 4, eager 0) keep them whatever the buffer
    for fw in FRAMEWORKS.values():
        if fw.grad_accumulate_bytes != MAIN_GRAD_FP32_BYTES:
            assert replace(fw, grad_buffer_bytes=2.0).accumulate_bytes == fw.grad_accumulate_bytes, fw.name


def test_the_layer_op_carries_six_bytes_a_weight_element_on_a_bf16_buffer():
    model = TransformerSpec(layers=4, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=32000, seq=4096)
    par, batch = ParallelSpec(tp=2), BatchSpec(16, 1, "fp8")
    fp32, bf16 = ([o for o in ops.layer_backward(model, par, batch, fw) if o.name == "main_grad_accumulate"]
                  for fw in (MEGATRON, replace(MEGATRON, grad_buffer_bytes=2.0)))
    (a,), (b,) = fp32, bf16
    assert b.bytes == pytest.approx(a.bytes * 6 / 10) and b.count == a.count
    weights = sum(o.shape[1] * o.shape[2] * o.shape[3] for o in ops.layer_forward(model, par, batch)
                  if o.kind == "gemm" and not o.name.startswith("core."))   # N K per weight GEMM: the layer's local weights
    assert a.bytes * a.count == pytest.approx(10 * weights)
    h, kv = 4096, 8 * 128
    assert weights == (h * (h + 2 * kv) + h * h + 3 * h * 14336) // par.tp   # QKV, out, SwiGLU's three, over TP


def _scenario(tmp_path, framework):
    doc = yaml.safe_load(SPLITS.read_text())
    doc.pop("variants")
    doc["machine"]["card"] = str(SPLITS.parent / doc["machine"]["card"])
    for part in ("gpu", "nic"):
        doc["machine"][part]["card"] = str(SPLITS.parent / doc["machine"][part]["card"])
    doc["jobs"][0]["framework"] = framework
    path = tmp_path / f"s{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_scenario_sets_the_buffer_and_the_step_shortens(tmp_path):
    from simcluster import scenario
    from simcluster.build import run_file

    paths = [_scenario(tmp_path, fw) for fw in ("megatron", {"name": "megatron", "grad_reduce_in_fp32": False},
                                                  {"name": "megatron", "grad_reduce_in_fp32": True})]
    jobs = [scenario.load(p).jobs[0] for p in paths]
    assert [j.framework_spec().grad_buffer_bytes for j in jobs] == [4.0, 2.0, 4.0]
    steps = [next(iter(run_file(p))).jobs[0].prediction.step_time_s for p in paths]
    assert steps[1] < steps[0] == steps[2]
    with pytest.raises(SimclusterError, match=r"framework\.grad_reduce_in_fp32: sets Megatron's main_grad buffer") as info:
        scenario.load(_scenario(tmp_path, {"name": "torchtitan-fsdp2", "grad_reduce_in_fp32": False}))
    assert "\n" not in str(info.value)
