"""The MoE router / dispatcher grid of session 49 (moerouter): every distinct MoE layer of the held-out published MoE rows
as the router and the dispatcher's permutations see it (tests/test_moerouter.py checks it against the rows' own ops), timed
by studies/moe_router_device.py (plain Python: it runs on the device beside torch; heldout/moerouter.py maps the output to
llm/moe_router_term's table)."""

from __future__ import annotations

# (name, T' = the tokens the router runs on (b s / c, over t under sequence parallelism), E experts, h hidden, k top-k,
#  score function, local experts, ep, rows dispatched per GPU (T k / (t / etp)), expert groups, group top-k);
#  PRODUCT_M: the product's router GEMM M for each before session 51's moedev51 (b s / c, not divided by t), the key the
#  table's rows had until then (heldout/registration.before_moedev51); since moedev51 the product's M is T' itself
GRID = (
    ("dsv3-ep64", 2048, 256, 7168, 8, "sigmoid", 4, 64, 16384, 8, 4),      # dgxc 25.05 DeepSeek-V3, Bridge 25.09 row 0
    ("qwen15-a800", 8192, 8, 2048, 2, "softmax", 8, 1, 16384, 0, 0),       # FlagPerf Qwen1.5-MoE (A800)
    ("qwen3-235b-ep32", 2048, 128, 4096, 8, "softmax", 4, 32, 16384, 0, 0),  # Bridge 25.09 row 2, 26.02.01 rows 1, 3
    ("qwen3-30b-ep8", 8192, 128, 2048, 8, "softmax", 16, 8, 65536, 0, 0),   # Bridge 25.11 row 4
    ("moonlight-ep8", 2048, 64, 2048, 6, "sigmoid", 8, 8, 12288, 0, 0),     # skills Moonlight 16B rows 0-5
    ("qwen3-30b-ep16", 4096, 128, 2048, 8, "softmax", 8, 16, 32768, 0, 0),  # skills Qwen3 30B rows 3, 4
    ("mixtral-ep8", 8192, 8, 4096, 2, "softmax", 1, 8, 16384, 0, 0),        # NeMo 25.02 B200 row 6
)

PRODUCT_M = {"dsv3-ep64": 4096, "qwen15-a800": 8192, "qwen3-235b-ep32": 4096, "qwen3-30b-ep8": 8192, "moonlight-ep8": 4096,
             "qwen3-30b-ep16": 4096, "mixtral-ep8": 8192}

SIGMOID_MODELS = ("deepseek", "moonlight", "kimi")   # DeepSeek-V3's architecture scores experts by a sigmoid


def score_function(model_name: str) -> str:
    """'sigmoid' for the DeepSeek-V3 architecture (DeepSeek-V3 and Moonlight's configs: scoring_func sigmoid), else
    'softmax' (Mixtral, Qwen-MoE, Qwen3, GPT-OSS, Grok-1)."""
    return "sigmoid" if any(s in model_name.lower() for s in SIGMOID_MODELS) else "softmax"
