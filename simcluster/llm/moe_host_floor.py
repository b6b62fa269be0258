"""The serial host floor of a MoE layer pass (session 54, moeterm54; issue 44): OFF. Nothing in the product calls enable();
with it off no predicted number moves (docs/models/llm.md "MoE serial host floor"; llm-findings "Session 54: moeterm54").

Where it would apply (applies): a Transformer Engine framework whose MoE host moe_sync prices (FrameworkSpec.
transformer_engine, no MoeHost, moe_sync_kernel_s > 0), without capacity padding on a core that drops the sync
(moe_sync.PAD_NO_SYNC) -- and, unlike moe_sync, under A2A overlap too. Per MoE layer pass (forward + backward, the
recomputed forward inside the backward under full recompute):
    layer = C + E + max(h, N c_s + R - C)          extra = max(0, N c_s + R - C - h)
C the pass's compute price, E its exposed EP time (unchanged), h moe_sync's host excess as priced (0 where moe_sync does
not apply: A2A overlap), N the modelled calls (calls: moe_sync's forward segment with its two EP calls, the backward's
calls and its one EP call), R the ungraphed router / preprocess host of the pass (llm/moe_graphs.with_ungraphed, counted
once: the recomputed forward's router and preprocess are not listed by the model), c_s the serial host seconds a
modelled call. The floor says: with the host issuing the model's own calls one after another at c_s, the pass cannot be
shorter than their sum, whatever the exposed all-to-all or the other micro-batch's overlap would hide in moe_sync's
issue-bound segment. The extra goes into the layer's `host` part, split between forward and backward in proportion
to their serial host (N_f c_s + R : N_b c_s).

c_s = SERIAL_RATIO x c, c = the framework's moe_sync_kernel_s (147.2 us for every Transformer Engine framework): 229.4 us.
SERIAL_RATIO = 1.559 is calibration/h200x1-moe54c-2026-12-01's RULE CS (run once, read once; validation/moe54c.py): the
median over its host-bound micro-batch-1 rows of Megatron-Core 0.14 local-spec layer CUDA events over plain torch's, the
same layer shapes (AWS's Qwen3-30B-A3B per-rank EP 16 / 32 work) on one H200 and one lease. Caveats (named): (a) the ratio
was measured without Transformer Engine on the device VM's host and multiplies c, which was derived from one DGX-H100
Nsight idle figure of a TE layer with router and preprocess CUDA-graphed; whether TE's fused router / permute and p5's
host issue like this is not measured. (b) c vs c': moe54b's c' = 187.8 us is plain torch's own per-modelled-call cost on
the device host ((events - R) / N); cold review B54 item 4 argues the ratio should scale c' (229.4 us x 187.8 / 147.2 =
~293 us). c' x r closes the AWS rows too (DES 13.8% mean |error|, signed -13.8%; moe54c's additive what-if 13.0%): the
AWS rows do not pick the form. The term scales c because moe54c's registered CS rule defined c_s = c x r, not because
the data prefer it (the first text's "c' x r would overshoot" was wrong; final read 54 item 1). (c) The
constant and the form were chosen on the six AWS Qwen3-30B-A3B rows (calibration/published/llm-awsome-megatron-bridge-
qwen3-30b-p5-h100.yaml): they are DEVELOPMENT for this term (moe54c RULE TERM CLOSES there, 8.1% mean |error| in its
additive what-if). Valid range: hidden <= 4096 with >= 8 local experts on H100 / H200 hosts; elsewhere extrapolated.

Its adoption is decided by a rule registered for a later session (validation/moeterm54.py, REGISTERED RULE commit, and
its REGISTERED REVISION 1: the regime excludes CUDA-graphed router / preprocess, c_s fixed at 229.4 us): held-out rows in
its regime (in_regime) recorded after the registration."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from simcluster.llm import moe_graphs, moe_sync, ops

SERIAL_RATIO = 1.559   # calibration/h200x1-moe54c-2026-12-01 RULE CS (readout.txt): Megatron-Core / plain-torch layer events
REGIME_HIDDEN, REGIME_LOCAL_EXPERTS = 4096, 8   # the regime it was made for (in_regime; validation/moeterm54.py's rule)

_RATIO = 0.0   # 0 = off (the product's state); enable() sets it


def enable(ratio: float = SERIAL_RATIO) -> None:
    """Turn the floor on at c_s = ratio x c (a what-if or the registered read-out; never the product while OFF)."""
    if not ratio > 0:
        raise ValueError("the MoE serial host floor needs a positive ratio c_s / c")
    global _RATIO
    _RATIO = float(ratio)


def disable() -> None:
    global _RATIO
    _RATIO = 0.0


def is_on() -> bool:
    return _RATIO > 0


@contextmanager
def switched_on(ratio: float = SERIAL_RATIO) -> Iterator[None]:
    """The floor on at c_s = ratio x c inside the block, and its state before (off, or another ratio) back on leaving it,
    an error included: a what-if's switch-and-restore (validation/moeterm54.floor_on, registered, keeps its own)."""
    global _RATIO
    before = _RATIO
    enable(ratio)
    try:
        yield
    finally:
        _RATIO = before


def prices(fw, par) -> bool:
    """Whether the floor would price this framework's MoE layers (on or off): moe_sync's frameworks, A2A overlap included."""
    padded = par.moe_pad_to_capacity and moe_sync.PAD_NO_SYNC
    return fw.transformer_engine and fw.moe_host is None and fw.moe_sync_kernel_s > 0 and not padded


def applies(fw, par) -> bool:
    """Whether layer_work.build_layer adds the floor: on, and a framework it prices."""
    return is_on() and prices(fw, par)


def serial_s(fw, ratio: float | None = None) -> float:
    """c_s: the serial host seconds a modelled call (ratio x the framework's c; the switch's ratio when None)."""
    return (_RATIO if ratio is None else ratio) * fw.moe_sync_kernel_s


def calls(gpu, fwd_ops: list, bwd_ops: list, dtype: str, fw) -> tuple[int, int, float]:
    """(N_f, N_b, R) of one layer pass: the forward segment's modelled calls with its two EP calls, the backward's with its
    one EP call, and the host seconds of the ungraphed router / preprocess calls (moe54b's N = N_f + N_b and R)."""
    seg = moe_sync.forward_segment(gpu, fwd_ops, dtype, 0.0)
    _, issue = moe_graphs.with_ungraphed(seg, fw.moe_sync_kernel_s, fw)
    return len(seg), len(moe_sync.kernel_list(gpu, bwd_ops, dtype)) + 1, float(issue[len(seg):].sum())


def host_count_s(gpu, fwd_ops: list, bwd_ops: list, dtype: str, fw, cost_s: float) -> tuple[float, float]:
    """(forward, backward) serial host seconds of one pass at cost_s a modelled call: N_f cost_s + R, N_b cost_s."""
    n_f, n_b, r = calls(gpu, fwd_ops, bwd_ops, dtype, fw)
    return n_f * cost_s + r, n_b * cost_s


def extra_s(gpu, fwd_ops: list, bwd_ops: list, dtype: str, fw, compute_s: float, host_s: float,
            ratio: float | None = None) -> tuple[float, float]:
    """(forward, backward) seconds the floor adds to one layer pass of compute compute_s (C) and priced host excess host_s
    (h): max(0, N c_s + R - C - h), split in proportion to the two directions' serial host."""
    f, b = host_count_s(gpu, fwd_ops, bwd_ops, dtype, fw, serial_s(fw, ratio))
    extra = max(0.0, f + b - compute_s - host_s)
    return (extra * f / (f + b), extra * b / (f + b)) if extra > 0 else (0.0, 0.0)


def in_regime(model, par, gpu, fwd_ops: list, bwd_ops: list, dtype: str, fw) -> bool:
    """The regime the adoption rule holds rows out in: a framework the floor prices, router / preprocess not CUDA-graphed
    (fw.moe_graphs false: the valid range; REGISTERED REVISION 1, final read 54 item 2), hidden <= 4096, >= 8 local
    experts, and the model's own serial host count at c (N c + R) above the pass's compute price C (host-bound by its own
    count; moe54b's H / C > 1). Graphed rows fall to the rule's guard, which sees the floor's move there."""
    if not (model.moe and prices(fw, par) and not fw.moe_graphs and model.hidden <= REGIME_HIDDEN
            and model.experts // par.ep >= REGIME_LOCAL_EXPERTS):
        return False
    f, b = host_count_s(gpu, fwd_ops, bwd_ops, dtype, fw, fw.moe_sync_kernel_s)
    return f + b > ops.ops_time_s(gpu, fwd_ops, dtype) + ops.ops_time_s(gpu, bwd_ops, dtype)
