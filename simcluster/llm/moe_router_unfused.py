"""Megatron-Core's unfused MoE router priced from its measurement (issue 44, session 52, moonprice52): a recipe's
`moe_router_fusion: false` (framework.moe_router_fusion False; a published file's `simcluster.recipe`).

Source: calibration/h200x1-moonrouter52-2026-12-01 (run once, read once): Megatron-Core's TopKRouter at NVIDIA/Megatron-LM
24bad8e6 (megatron.core 0.20.0) in Moonlight 16B's recipe configuration (moe_router_fusion False, sigmoid with the expert
bias, pre-softmax, seq_aux_loss, moe_router_dtype fp32, groups 1 / 1) on one H200 at 2,048 tokens, 64 experts, hidden
2,048: its `mcore-recipe` records, torch.profiler kernels 183.3 us / 95 kernels forward + backward 307.4 us (rule R OVER
2.57 x the adopted column's 119.5 us) and the host's issue time of a forward 1,444 us (rule H HOST-BOUND). FILE holds
them as heldout/moonprice52.document writes them from the bundle's runs (tests/test_moonprice52.py: the file is that
output).

GPU (R): the router op's seconds beyond the card's GEMM price are the bundle's, netted as heldout/moerouter.rows_of nets
session 49's: forward = kernels(fwd) - the H200 card's bf16 GEMM price (T, E, h); backward = kernels(fwdbwd) -
kernels(fwd) - the card's dgrad + wgrad prices; scaled to an op of shape (m, e) by (m e) / (T E) and to another card by
the H200's HBM rate over the card's, the law llm/moe_router_term applies to its table (ASSUMED here: the bundle has one
shape; a line through the origin, while the chain's fixed per-kernel cost does not scale: small shapes are under-, large
shapes (256 experts) and slower-HBM cards over-, faster cards under-charged). It REPLACES the adopted table's router row
for that op (the table measured the plain-torch chain); the permutation is unchanged. The backward's kernels carry the
read-out's synthetic loss (mul and sum over T x E and their backward, a few us of the 94.8; not netted, as the torch-chain
comparator carries the same loss): slightly over-charged.
Host (H): where the recipe also leaves the router out of CUDA graphs (framework.moe_graphs False, llm/moe_graphs.py), the
router's ROUTER_CALLS x HOST_CALL_S (7 x 40 us) after its GEMM become the bundle's forward kernels less the GEMM
(n_fwd - 1 = 54 calls), each at the bundle's host seconds a forward kernel (host_fwd / n_fwd = 26.3 us): 1,418 us a
forward MoE layer pass. Issue time does not scale with tokens or experts (ASSUMED: the launch count is the
configuration's); the device's host CPU (a 16-vCPU KVM Xeon, runs/lscpu.txt) is not the rows' DGX-H100 host (an
extrapolation, either way: that host is slow in general, its plain-torch chain issues 27.5 us a kernel). The backward's
host is not priced (no sync there, as moe_graphs). Graphed (moe_graphs True), the router is one graph launch: no change.
On Moonlight's rows (H100, ungraphed) the host part carries about 99% of the term's move (+29.6 of +29.8 ms a step; the
GPU part +0.2 ms, hidden: review B52), so their change rests on this host figure, not on rule R's GPU verdict.
Not re-expressed relative to the same host's torch-chain figure (40 us x 26.3 / 27.5): HOST_CALL_S's 40 us is itself
from the project's device (calibration/h200x4-megatron-moe-2026-11-27, Megatron's in-layer kernels), so the ratio would not
cancel the host kind, and it would replace this code's direct measurement by a microbenchmark ratio (mendB52).

ON: the switch heldout/registration.moonprice52_facts turns off for the sets registered before this session's change
(their read-outs print as registered); default on, but nothing moves unless a file's recipe says moe_router_fusion false.
"""

from __future__ import annotations

import json
from pathlib import Path

from simcluster.errors import ModelCardError

FILE = Path(__file__).with_name("moe_router_unfused.json")
KEYS = ("tokens", "experts", "hidden", "router_f_s", "router_b_s", "host_fwd_s", "kernels_fwd", "h200_hbm_Bps")
ON = True                 # off inside heldout/registration.moonprice52_facts(False)
_DOC: dict | None = None


def read(path: Path | None = None) -> dict:
    """The measured figures of `path` (default FILE, read when called; heldout/moonprice52.document writes it); a one-line
    ModelCardError naming the file if it is not one (the CLI prints it as one line)."""
    path = Path(path or FILE)
    try:
        doc = json.loads(path.read_text())
        out = {k: float(doc[k]) for k in KEYS}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelCardError(f"not the unfused router's figures ({type(exc).__name__}: {exc})", where=str(path),
                             hint="heldout/moonprice52.write_file writes it") from None
    if min(out["tokens"], out["experts"], out["kernels_fwd"], out["h200_hbm_Bps"]) <= 0 or out["kernels_fwd"] < 2:
        raise ModelCardError("expected tokens, experts, kernels_fwd >= 2 and h200_hbm_Bps > 0", where=str(path))
    return out


def figures() -> dict:
    global _DOC
    if _DOC is None:
        _DOC = read()
    return _DOC


def set_on(on: bool) -> bool:
    """Set ON; returns the previous value (heldout/registration.moonprice52_facts restores it)."""
    global ON
    before, ON = ON, bool(on)
    return before


def marks(fw) -> bool:
    """Whether a framework's router is priced as the unfused one (ops.layer_forward marks its router op)."""
    return ON and not getattr(fw, "moe_router_fusion", True)


def router_extra_s(gpu, m: int, e: int, backward: bool) -> float:
    """Seconds beyond the card's GEMM price of a router op of m tokens and e experts (module docstring, GPU)."""
    d = figures()
    net = d["router_b_s"] if backward else d["router_f_s"]
    return net * (m * e) / (d["tokens"] * d["experts"]) * d["h200_hbm_Bps"] / gpu.hbm_bandwidth_Bps


def measured_router_calls() -> tuple[int, float]:
    """(calls, host seconds each) of the ungraphed unfused router after its GEMM, as measured: the bundle's forward
    kernels less the GEMM, each at its host seconds a forward kernel (module docstring, Host; llm/moe_graphs.router_host
    holds the one condition: moe_router_term.unfused)."""
    d = figures()
    return int(d["kernels_fwd"]) - 1, d["host_fwd_s"] / d["kernels_fwd"]
