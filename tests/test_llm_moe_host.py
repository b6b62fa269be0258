"""Megatron-Core's local-spec MoE layer issued from the host (framework.MoeHost, layer_work._moe_host)."""

from pathlib import Path

import numpy as np
import pytest

from simcluster.cards import load_collective
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import host
from simcluster.llm.comm import Network
from simcluster.llm.framework import MEGATRON_LOCAL, MEGATRON_UNFUSED
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.llm.work import build_work

ROOT = Path(__file__).resolve().parents[1]


def _step(experts: int, ep: int, fw) -> tuple[float, float]:
    model = TransformerSpec(layers=4, hidden=2048, ffn=768, heads=32, kv_heads=4, vocab=32768, seq=4096, experts=experts, top_k=8,
                            expert_ffn=768, attn_head_dim=128, qk_norm=True)
    gpu, _ = load_gpu(ROOT / "models/gpu/h200-sxm-interleaved.yaml")
    net = Network(load_collective(ROOT / "models/collective/h200x4-primitives.yaml")[0], 4)
    work = build_work(model, ParallelSpec(dp=4, ep=ep), BatchSpec(4, 1, "bf16"), gpu, net, fw=fw)
    f, b = work.stages[0].forward[0], work.stages[0].backward[0]
    return f.duration_s + b.duration_s, f.parts["host"] + b.parts["host"]


def test_local_spec_moe_layer_is_host_bound_by_its_local_experts():
    t_te, host_te = _step(128, 4, MEGATRON_UNFUSED)
    t4, host4 = _step(128, 4, MEGATRON_LOCAL)
    t1, host1 = _step(128, 1, MEGATRON_LOCAL)
    assert host_te == 0.0 and t4 > t_te
    h = MEGATRON_LOCAL.moe_host
    # 32 local experts: the host's issue of the layers' kernels bounds the step from below
    issue4 = 4 * ((h.post_kernels + h.pre_kernels) * h.kernel_s + 32 * h.expert_kernels * h.expert_kernel_s
                  + (h.bwd_kernels + 32 * h.bwd_expert_kernels) * h.bwd_kernel_s)
    assert t4 >= issue4 / h.profiled_over_plain
    # four times the local experts: the 96 more experts' host time, less the GPU time the host now hides
    more = 4 * 96 * (h.expert_kernels * h.expert_kernel_s + h.bwd_expert_kernels * h.bwd_kernel_s) / h.profiled_over_plain
    assert 0.8 * more < host1 - host4 <= more


def test_issue_bound_with_each_kernels_own_host_time():
    times = np.array([1.0, 1.0, 1.0])
    assert host.issue_bound_s(times, 0.5) == host.issue_bound_s(times, np.full(3, 0.5)) == 3.5
    assert host.issue_bound_s(times, np.array([0.5, 5.0, 0.5])) == pytest.approx(7.5)


@pytest.mark.parametrize("par, key", [(ParallelSpec(dp=4, ep=4, moe_dispatcher="deepep"), "parallel.moe_dispatcher"),
                                      (ParallelSpec(dp=4, ep=4, moe_a2a_overlap=True), "parallel.moe_a2a_overlap")])
def test_local_spec_refuses_the_dispatchers_its_host_model_does_not_price(par, key):
    from simcluster.llm.spec import LlmConfigError
    from simcluster.llm.spec_check import check_framework

    with pytest.raises(LlmConfigError) as err:
        check_framework(par, MEGATRON_LOCAL)
    assert err.value.key == key
    check_framework(ParallelSpec(dp=4, ep=4), MEGATRON_LOCAL)   # the alltoall dispatcher without overlap is accepted


def test_a_scenario_asking_local_spec_for_deepep_is_a_one_line_error_at_its_key(tmp_path):
    """The refusal reaches a user through the scenario reader: one line naming the file, the line and the key."""
    import re

    from simcluster.errors import ScenarioError
    from simcluster.scenario import load

    path = tmp_path / "moe.yaml"
    path.write_text(f"""\
name: t
machine:
  card: {ROOT}/models/collective/h200x4-primitives.yaml
  gpus_per_node: 4
  gpu: {{card: {ROOT}/models/gpu/h200-sxm-interleaved.yaml}}
jobs:
  - kind: llm_training
    model: {{layers: 4, hidden: 2048, ffn: 768, heads: 32, kv_heads: 4, vocab: 32768, seq: 4096, experts: 64, top_k: 8,
             expert_ffn: 768, attn_head_dim: 128}}
    parallel: {{dp: 4, ep: 4,
                moe_dispatcher: deepep}}
    global_batch: 4
    micro_batch: 1
    framework: megatron-local-spec
""")
    with pytest.raises(ScenarioError) as err:
        load(path)
    text = str(err.value)
    assert "\n" not in text and re.search(r"moe\.yaml:11: jobs\[0\]\.parallel\.moe_dispatcher: framework megatron-local-spec", text), text
