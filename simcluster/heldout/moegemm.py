"""The expert-GEMM measurement of session 48 (moegemm) and its mapping to llm/moe_gemm_term's table.

GRID: every distinct expert-GEMM layer shape of the published MoE rows (tests/test_moegemm.py checks it against the rows'
own ops), as (name, m = tokens per local expert per micro-batch, f = expert ffn per GPU, h = hidden, local experts,
dtype). studies/moe_gemms_device.py's section `moe-rows` times, for each, the gate / up GEMM (N = f), the fused fc1
(N = 2 f) and the down GEMM (N = h, K = f), each forward (m, N, K), data gradient (m, K, N) and weight gradient
(K, N, m) (llm/op_price.gemm_backward's shapes), as a group over the local experts, modes loop / streams / grouped_mm (gpu-micro's `moe_grouped` records,
parsed by traces/gpu_micro.py).

table_of(trace, card): for each `streams` group (the REGISTERED mode: Transformer Engine's GroupedLinear issues one
cuBLAS GEMM per local expert over 4 streams) the ratio time_s / (experts x the H200 card's one-GEMM price):
rows (m, n, k, dtype, ratio) for llm/moe_gemm_term.enable."""

from __future__ import annotations

from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.hardware.gpu import load_gpu
from simcluster.traces.gpu_micro import parse

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "calibration" / "h200x4-moegemm-2026-11-30"
H200_CARD = ROOT / "models" / "gpu" / "h200-sxm.yaml"   # the back-to-back card (published H100 rows use h100-sxm.yaml)
TRACE = "gpu-micro-moe-rows.json"                        # under the bundle's runs/
MODE = "streams"                                         # registered: TE GroupedLinear's issue (module docstring)

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


def table_of(trace_path: Path, card_path: Path = H200_CARD, mode: str = MODE) -> list[tuple]:
    """(m, n, k, dtype, ratio) per measured `mode` group of the trace (module docstring); one line if it holds none."""
    trace, gpu = parse(trace_path), load_gpu(card_path)[0]
    if "H200" not in str(trace.device.get("name", "")) and not trace.quick:
        raise SimclusterError(f"{trace_path}: device {trace.device.get('name')!r}, expected an H200 (the term's card)")
    rows = [(g.m, g.n, g.k, g.dtype, g.time_s / (g.experts * gpu.gemm_time_s(g.m, g.n, g.k, dtype=g.dtype)))
            for g in trace.groups if g.mode == mode]
    if not rows:
        raise SimclusterError(f"{trace_path}: no moe_grouped record of mode {mode!r} (section moe-rows of studies/moe_gemms_device.py)")
    return rows
