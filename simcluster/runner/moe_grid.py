"""The expert-GEMM grid of session 48 (moegemm): every distinct expert-GEMM layer of the published MoE rows
(tests/test_moegemm.py checks it against the rows' own ops) and the groups studies/moe_gemms_device.py's section moe-rows
times for each (plain Python: it runs on the device beside torch; heldout/moegemm.py maps the output to the term)."""

from __future__ import annotations

# (name, m, f, h, local experts, dtype): the published MoE rows' expert layers (llm/ops.layer_forward's expert_gate shape
# (m, f, h, experts) and the row's precision); rows they come from in the comment
GRID = (
    ("grok1-ep2", 2048, 8192, 6144, 4, "bf16"), ("grok1-ep4", 4096, 8192, 6144, 2, "bf16"),        # dgxc Grok-1 (dev)
    ("grok1-ep8", 8192, 8192, 6144, 1, "bf16"), ("grok1-ep2-fp8", 2048, 8192, 6144, 4, "fp8"),
    ("grok1-ep4-fp8", 4096, 8192, 6144, 2, "fp8"), ("grok1-ep8-fp8", 8192, 8192, 6144, 1, "fp8"),
    ("dsv3-m4096", 4096, 2048, 7168, 4, "bf16"), ("dsv3-m8192", 8192, 2048, 7168, 4, "bf16"),    # dgxc 25.05 / 25.08
    ("dsv3-m4096-fp8", 4096, 2048, 7168, 4, "fp8"),                                              # Bridge 25.09 row 0
    ("qwen15-a800", 2048, 5504, 2048, 8, "bf16"),                                                # FlagPerf
    ("qwen3-30b-e16-fp8", 4096, 768, 2048, 16, "fp8"), ("qwen3-30b-e8-fp8", 4096, 768, 2048, 8, "fp8"),
    ("qwen3-30b-e8", 4096, 768, 2048, 8, "bf16"), ("qwen3-30b-m2048-fp8", 2048, 768, 2048, 16, "fp8"),
    ("qwen3-235b-fp8", 4096, 1536, 4096, 4, "fp8"),                                              # Bridge 235B rows
    ("gpt-oss-120b", 1024, 2880, 2880, 16, "bf16"), ("moonlight-16b", 1536, 1408, 2048, 8, "bf16"),
    ("mixtral-b200-fp8", 16384, 14336, 4096, 1, "fp8"),                                         # NeMo 25.02 B200 row 6
)


def grid_gemms(grid=GRID) -> list[dict]:
    """Each GRID layer's nine groups: gate / up (N = f), fused fc1 (2 f), down (h, f); forward, dgrad, wgrad."""
    out = []
    for name, m, f, h, experts, dtype in grid:
        for gemm, n, k in (("up", f, h), ("fc1", 2 * f, h), ("down", h, f)):
            for role, shape in (("fwd", (m, n, k)), ("dgrad", (m, k, n)), ("wgrad", (k, n, m))):
                out.append({"m": shape[0], "n": shape[1], "k": shape[2], "experts": experts, "dtype": dtype,
                            "role": f"moe-{role}-{gemm}", "moe": name, "hidden": h, "tokens": m})
    return out
