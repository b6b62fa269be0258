"""The expert-GEMM measurement of session 48 (moegemm) and its mapping to llm/moe_gemm_term's table.

GRID (runner/moe_grid.py): every distinct expert-GEMM layer shape of the published MoE rows (tests/test_moegemm.py checks it against the rows'
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
from simcluster.runner.moe_grid import GRID as GRID
from simcluster.runner.moe_grid import grid_gemms as grid_gemms
from simcluster.traces.gpu_micro import parse

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "calibration" / "h200x4-moegemm-2026-11-30"
H200_CARD = ROOT / "models" / "gpu" / "h200-sxm.yaml"   # the back-to-back card (published H100 rows use h100-sxm.yaml)
TRACE = "gpu-micro-moe-rows.json"                        # under the bundle's runs/
MODE = "streams"                                         # registered: TE GroupedLinear's issue (module docstring)


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
