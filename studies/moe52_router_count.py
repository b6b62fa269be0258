"""Megatron-Core's unfused TopKRouter on Moonlight 16B's layer: its op count at a Megatron-Core version, in mcrouter50's
configuration and in the Moonlight recipe's (issue 44, session 52 moe52). A proxy for the GPU's kernel count:
torch.profiler's leaf aten ops per call on the CPU (studies/mcore_router_ops.leaf_ops; on this layer at 0.14.0 it read
44 / 83 where calibration/h200x1-mcrouter50-2026-12-01 counted 44 / 82 GPU kernels, forward / forward + backward).

Configurations (Moonlight's layer: 64 experts, top-6, sigmoid scores with the expert bias; quick shapes T / 64, h / 16):
  mcrouter50: as calibration/h200x1-mcrouter50-2026-12-01 ran it (aux_loss 1e-2, moe_router_dtype None, no groups,
              pre_softmax False, no top-k scaling)
  recipe:     Megatron-Bridge 600d069b's Moonlight pre-training recipe (recipes/moonlight/h100/moonlight_16b.py L225
              moe_router_fusion False) on its DeepSeek-V3 bridge (models/deepseek/deepseek_v3_bridge.py L66-75:
              pre_softmax True, seq_aux_loss, sigmoid, expert bias, moe_router_dtype fp32; the recipe's aux coefficient
              1e-3, L73), n_group / topk_group 1 / 1 (mapped from the HF config, conversion/model_bridge.py L487-488)
  recipe, groups unset: the same without group-limited routing (Moonlight's HF n_group is not read here)
Needs torch and a megatron/core tree (not in the project's venv), e.g. from the fetched NVIDIA/Megatron-LM:
    git -C <mirror> archive 24bad8e677d22625d86ef2a54c9506b6e4992c93 megatron/core | tar -x -C /tmp/mc24
    PYTHONPATH=/tmp/mc24:. python studies/moe52_router_count.py 24bad8e6 >> studies/moe52_router_count.txt
Megatron-Core after 0.14 imports triton (paged_stash) and asks torch.cuda for the router's buffers' device: on a CPU
machine the study stands a stub triton in for its import (after torch has probed for the real one) and answers 'cpu'.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.script_args import check  # noqa: E402

T, E, H, K = 2048 // 64, 64, 2048 // 16, 6
CONFIGS = (("mcrouter50", "aux_loss", 1e-2, None, None, None, False, None),
           ("recipe", "seq_aux_loss", 1e-3, "fp32", 1, 1, True, 2.446),
           ("recipe, groups unset", "seq_aux_loss", 1e-3, "fp32", None, None, True, 2.446))
STUB = '''__version__ = "3.0.0"
class _Any:
    def __init__(self, *a, **k): pass
    def __call__(self, *a, **k): return a[0] if len(a) == 1 and callable(a[0]) and not k else _Any()
    def __getattr__(self, n): return _Any()
    def __getitem__(self, k): return _Any()
def jit(*a, **k): return a[0] if len(a) == 1 and callable(a[0]) else (lambda f: f)
def __getattr__(n): return _Any()
'''


def stub_triton(torch) -> None:
    """A stand-in triton for Megatron-Core's module-level imports, placed after torch's own probes have run."""
    import torch._dynamo.testing  # noqa: F401  (torch probes for triton on these imports: done before the stub)
    import torch._inductor.codecache  # noqa: F401
    root = Path(tempfile.mkdtemp(prefix="moe52-triton-"))
    (root / "triton" / "language").mkdir(parents=True)
    (root / "triton" / "__init__.py").write_text(STUB)
    (root / "triton" / "language" / "__init__.py").write_text("from triton import _Any\nconstexpr = _Any\n"
                                                             "def __getattr__(n): return _Any()\n")
    sys.path.append(str(root))
    torch.cuda.current_device = lambda: "cpu"


def make_router(torch, mods, shape, bal, coeff, dtype, groups, gtop, pre, scale, act=None, dev="cpu"):
    """Megatron's TopKRouter of `shape` (tokens, experts, hidden, top-k; sigmoid scores with the expert bias) in one
    configuration, parameters in `act` (float32 unless told) on `dev`; on the CPU its gating called as its own
    router_gating_linear (as studies/mcore_router_device.mcore_router does): Megatron's would move the weight to CUDA.
    studies/moonrouter52_device.py builds the device's routers with it."""
    from megatron.core.transformer.moe import moe_utils

    _t, e, h, k = shape
    act = act or torch.float32
    cfg = mods["TransformerConfig"](
        num_layers=1, hidden_size=h, num_attention_heads=8, num_moe_experts=e, moe_router_topk=k,
        moe_router_score_function="sigmoid", moe_router_num_groups=groups, moe_router_group_topk=gtop,
        moe_router_enable_expert_bias=True, moe_router_load_balancing_type=bal, moe_aux_loss_coeff=coeff,
        moe_router_pre_softmax=pre, moe_router_fusion=False, moe_router_dtype=dtype, moe_router_topk_scaling_factor=scale,
        add_bias_linear=False, bf16=act == torch.bfloat16, params_dtype=act, use_cpu_initialization=True)
    if "model_comm_pgs" in mods["TopKRouter"].__init__.__code__.co_varnames:   # 0.14's keyword; later pg_collection
        r = mods["TopKRouter"](cfg, model_comm_pgs=moe_utils.get_default_model_comm_pgs())
    else:
        r = mods["TopKRouter"](cfg, pg_collection=moe_utils.get_default_pg_collection())
    r = r.to(dev)
    r.set_layer_number(1)
    r.train()
    if dev == "cpu":
        gate = mods["gating_linear"]
        r.gating = (lambda inp: gate(inp, r.weight, None, inp.dtype)) if gate.__code__.co_argcount == 4 else \
            (lambda inp: gate(inp, r.weight, inp.dtype))
    return r


def router(torch, mods, *cfg):
    """fn(backward) of make_router's router at the quick shapes in one configuration (CONFIGS' fields after the name)."""
    r = make_router(torch, mods, (T, E, H, K), *cfg)
    gen = torch.Generator(device="cpu").manual_seed(52)
    x, g = torch.randn(T, 1, H, generator=gen), torch.randn(T, E, generator=gen)

    def fn(backward: bool) -> None:
        probs, _ = r(x)
        if backward:
            (probs.float() * g).sum().backward()
    return fn


def main() -> int:
    label = (check(words=1) or ["?"])[0]
    try:
        import torch
    except ImportError:
        print("moe52_router_count.py: needs torch (and a megatron/core tree beside it): not installed here", file=sys.stderr)
        return 2
    stub_triton(torch)
    from megatron.core.transformer.moe import moe_utils
    if not hasattr(moe_utils, "get_default_model_comm_pgs"):   # mcore_router_device.megatron reads 0.14's name
        moe_utils.get_default_model_comm_pgs = moe_utils.get_default_pg_collection
    from mcore_router_device import megatron
    from mcore_router_ops import leaf_ops

    mods, note = megatron(torch, "cpu")
    if mods is None:
        print(f"moe52_router_count: megatron-core {note}", file=sys.stderr)
        return 2
    print(f"# Megatron-Core {label} (version {note}), torch {torch.__version__}: leaf aten ops per call, Moonlight's router")
    for name, *args in CONFIGS:
        fn = router(torch, mods, *args)
        print(f"{name}: fwd {leaf_ops(torch, lambda fn=fn: fn(False))} fwdbwd {leaf_ops(torch, lambda fn=fn: fn(True))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
