"""The measured MoE router / permutation term (session 49, moerouter; issue 44): ON in the product since adopt49 for the
frameworks its registered rule judged (ADOPTED), with the table of calibration/h200x1-moerouter-2026-12-01's runs, its
router columns rebuilt in session 50 (adopt50) from calibration/h200x1-moeker50-2026-12-01's kernel clock.

What it adds (llm/op_price._op_time_s calls `adjust` on the ops ops.layer_forward marks `term`, those of an ADOPTED
framework, and their backward and recomputed copies):
- router: the measured router of a layer (its GEMM, score function, group-limited top-k, normalisation, routing map,
  tokens per expert, aux loss), its GPU kernel time since adopt50 (studies/moe_kernel_device.py's torch.profiler device
  durations; session 49's CUDA events held the host's launch gaps, host time left to llm/moe_sync and the host terms),
  less the H200 card's price of its GEMM at the measured
  tokens, at least 0: added to the `router` op (forward) and to `router.dgrad` (the backward: fwd+bwd less fwd, less the
  card's dgrad + wgrad price). Scaled to an op by the router's elements, (M E) / (M0 E0) of the nearest measured layer
  (sum of |log| differences of M, E, h; M the product's router GEMM M), and to another card by the H200's HBM rate over
  the card's (named law, unmeasured across cards: since adopt50 the table holds the kernels' GPU time alone, no launch
  share, and small memory-bound kernels are assumed to scale with the HBM rate; their fixed per-kernel cost does not,
  so a faster card is somewhat undercharged).
- permutation: the `permute` op (forward) and `permute.bwd` times measured / priced of the nearest measured layer's
  permute op (by bytes), the H200 card's price of the product's own op's bytes as the denominator; at least 1 (the term
  never makes the product faster; the brief: where the product omits or underprices).
The token-count sync is NOT in the term (decided before the run): llm/moe_sync.py's per-call cost c is derived from a
profile's GPU idle, which holds the sync's drain; A2A-overlap rows show no idle (moe_sync.applies). It is measured and
printed (validation/moerouter.py), judging nothing.

Scope (ADOPTED): megatron and megatron-te-fa2, the frameworks of every published MoE row the rule priced (70 rows: the
alltoall and DeepEP dispatchers, with and without A2A overlap, on H100, B200 and A800 cards). Off elsewhere: the local
spec (megatron-local-spec: its MoE lab steps are held out against their own registered sets, the term was not judged
on them), and the Megatron variants no MoE row runs (megatron-unfused-attention, megatron-unfused-loss,
megatron-2023-sync). The permutations were measured in plain torch (Transformer Engine was not on the device): an upper
bound where Transformer Engine's fused permute kernels run.

Labels: every published MoE row of an ADOPTED framework in the files the rule priced (JUDGED_FILES) is development for
the term (their errors chose to look at the router and permutations): `development_why` says so for
reference/llm_frameworks.row_label while the adoption's labels hold; a MoE file recorded after the adoption is held out
as its file says (session 50, publ50). heldout/registration.before_adopt49 turns the term and these labels off for the
sets registered before it; heldout/registration.before_adopt50 prices with session 49's table for those registered
between the two adoptions.

Table rows: (m, e, h, router_f_s, router_b_s, permute_f_ratio, permute_b_ratio, permute_bytes), one per measured layer,
the router seconds already net of the H200 card's GEMM price: TABLE_FILE, written from the two sets' runs by
heldout/moeker50.write_table (llm/ cannot import the reader: docs/architecture.md's layers), read once on first use."""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path

from simcluster.errors import ModelCardError
from simcluster.llm import moe_router_unfused


class RouterTerm(enum.Enum):
    """Which measured term an op marked by ops.layer_forward is priced with (llm/op_price.Op.term; None: neither)."""

    TABLE = "table"          # the router / permutation table (TABLE_FILE) of an ADOPTED framework's router and permute
    UNFUSED = "unfused"      # Megatron-Core's unfused router, measured on its own (llm/moe_router_unfused; `unfused`)


ADOPTED = ("megatron", "megatron-te-fa2")    # the frameworks the registered rule judged (module docstring, Scope)
TABLE_FILE = Path(__file__).with_name("moe_router_table.json")
# the published files whose MoE rows the registered rule priced (adopt49: their errors chose to look): development for the
# term; a MoE file recorded after the adoption (session 50, publ50: the Megatron MoE Model Zoo) was not seen, so held out
JUDGED_FILES = frozenset(f"llm-{name}.yaml" for name in (
    "dgxc-benchmarking-v24.11.1-grok1-h100", "dgxc-benchmarking-v25.02-grok1-h100", "dgxc-benchmarking-v25.05-deepseek-v3-h100",
    "dgxc-benchmarking-v25.08-deepseek-v3-h100", "flagperf-qwen15-moe-a800-megatron", "megatron-bridge-25.09-dgx-h100-moe",
    "megatron-bridge-25.11-dgx-h100-b200", "megatron-bridge-26.02-26.04.01-dgx-h100-gpt-oss",
    "megatron-bridge-26.02.01-26.04-dgx-h100-moe", "megatron-bridge-26.04-26.06-dgx-h100-moe",
    "megatron-bridge-skills-moonlight16b-h100-bf16", "megatron-bridge-skills-qwen3-30b-h100-bf16", "nemo-25.02-dgx-b200-fp8"))
WHY = ("development for the MoE router / permutation term (llm/moe_router_term, adopted in session 49 on the rule of "
       "calibration/h200x1-moerouter-2026-12-01: its MoE rows' errors chose to look)")

_TABLE: tuple | None = None   # None: the adopted table (TABLE_FILE), read on first use; (): off; else enable()'s
H200_HBM_BPS = 0.0            # the H200 card's hbm_bandwidth_Bps, set with the table
_LABELS = True                # the adoption's labels (development_why); off under heldout/registration.before_adopt49
_SCOPE = ADOPTED              # the frameworks `applies` marks: ADOPTED, widened only inside a lab read-out (set_scope)
_SP_SHARD = True              # the router on the rank's sequence shard under SP (router_tokens); off inside the handles of
                              # the sets registered before session 51's moedev51 (heldout/registration._router_term_as)


def enable(table, h200_hbm_Bps: float) -> None:
    """Turn the term on with `table`; the caller clears op_price's memo (op_price.forget) after enable / disable."""
    global _TABLE, H200_HBM_BPS
    if not table or h200_hbm_Bps <= 0:
        raise ValueError("moe_router_term.enable: expected a non-empty table and the H200's HBM rate > 0")
    _TABLE, H200_HBM_BPS = tuple(table), float(h200_hbm_Bps)


def disable() -> None:
    global _TABLE
    _TABLE = ()


def state() -> tuple:
    """(table, H200 rate, labels, scope) as they are now: heldout/registration.before_adopt49 and validation/moelab49.
    term_as save it and restore it (set_state) in a finally."""
    return _TABLE, H200_HBM_BPS, _LABELS, _SCOPE


def set_state(saved: tuple) -> None:
    global _TABLE, H200_HBM_BPS, _LABELS, _SCOPE
    _TABLE, H200_HBM_BPS, _LABELS, _SCOPE = saved


def router_tokens(tokens: int, seq_tokens: int) -> int:
    """The tokens a MoE router runs on (session 51, moedev51): the rank's own hidden states as the MoE layer gets them,
    its sequence shard seq_tokens = b s / (c t) under sequence parallelism (Megatron-Core moe_layer.py MoELayer.forward
    passes hidden_states to route() ungathered and refuses TP > 1 without SP in training; router.py's comment on the
    aux loss: the router's num_local_tokens "is sequence-parallel sharded"; NVIDIA/Megatron-LM d98e8a64); before
    moedev51 the product priced it on all b s / c tokens (`tokens`), as the sets registered then reproduce."""
    return seq_tokens if _SP_SHARD else tokens


def set_sp_shard(on: bool) -> bool:
    """Set router_tokens' switch; returns the previous value (heldout/registration's handles restore it)."""
    global _SP_SHARD
    before, _SP_SHARD = _SP_SHARD, bool(on)
    return before


def set_scope(frameworks: tuple[str, ...]) -> None:
    """The frameworks `applies` marks (a lab read-out adds its own to ADOPTED; the labels keep ADOPTED's); the caller
    saved state() first and restores it, and clears op_price's memo."""
    global _SCOPE
    _SCOPE = tuple(frameworks)


def read_table(path: Path | None = None) -> tuple[tuple, float]:
    """(rows, the H200 card's HBM rate) of a table file (default TABLE_FILE, read when called; heldout/moeker50.write_table);
    a one-line ModelCardError naming it if bad."""
    path = Path(path or TABLE_FILE)
    try:
        doc = json.loads(path.read_text())
        rows = tuple(tuple(float(x) for x in row) for row in doc["rows"])
        rate = float(doc["h200_hbm_Bps"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelCardError(f"not the MoE router term's table ({type(exc).__name__}: {exc})", where=str(path),
                             hint="heldout/moeker50.write_table writes it") from None
    if not rows or any(len(r) != 8 for r in rows) or rate <= 0:
        raise ModelCardError("expected rows of 8 numbers and h200_hbm_Bps > 0 (heldout/moeker50.write_table)", where=str(path))
    return rows, rate


def table() -> tuple:
    """The term's table now: the adopted one (read once), enable()'s, or () while off."""
    global _TABLE, H200_HBM_BPS
    if _TABLE is None:
        _TABLE, H200_HBM_BPS = read_table()
    return _TABLE


def on() -> bool:
    return bool(table())


def applies(fw) -> bool:
    """Whether ops.layer_forward marks a framework's router and permute ops for the term (its adopted scope)."""
    return fw.name in _SCOPE


def unfused(fw) -> bool:
    """Whether a framework's router is priced as Megatron-Core's unfused one (llm/moe_router_unfused): the one condition
    of its GPU price (ops.layer_forward's mark), its host calls (llm/moe_graphs) and its caveat (llm/caveats)."""
    return moe_router_unfused.marks(fw) and applies(fw) and on()


def judged(source: str) -> bool:
    """Whether a published file is one of JUDGED_FILES: `source` its file name or, as a ReferenceRow names it, its stem."""
    return (source if source.endswith(".yaml") else f"{source}.yaml") in JUDGED_FILES


def development_why(framework: str, family: str, source: str) -> str:
    """Why a held-out published row is development for the term (WHY), or "": a MoE row of an ADOPTED framework in one
    of the JUDGED_FILES (judged(source)) while the adoption's labels hold (off inside heldout/registration.before_adopt49)."""
    return WHY if _LABELS and family == "MoE" and framework in ADOPTED and judged(source) else ""


def _nearest(m: float, e: float, h: float) -> tuple:
    return min(_TABLE, key=lambda r: abs(math.log(m / r[0])) + abs(math.log(e / r[1])) + abs(math.log(h / r[2])))


def router_extra_s(gpu, m: int, e: int, h: int, backward: bool) -> float:
    """Seconds the term adds to a router GEMM op of shape (m, e, h) (0 while off)."""
    if not table():
        return 0.0
    r = _nearest(m, e, h)
    return (r[4] if backward else r[3]) * (m * e) / (r[0] * r[1]) * H200_HBM_BPS / gpu.hbm_bandwidth_Bps


def permute_factor(bytes_moved: float, backward: bool) -> float:
    """The factor on a permute op of `bytes_moved` (1.0 while off): the nearest measured layer's by bytes."""
    if not table():
        return 1.0
    r = min(_TABLE, key=lambda r: abs(math.log(bytes_moved / r[7])))
    return r[6] if backward else r[5]


def adjust(gpu, op, t: float) -> float:
    """An op's priced seconds t (one op, before its count) with the term: router, router.dgrad, permute, permute.bwd
    (op_price calls it for the ops marked `term` alone, RouterTerm.TABLE or RouterTerm.UNFUSED)."""
    if not table():
        return t
    name, unfused = op.name.removeprefix("recompute."), op.term is RouterTerm.UNFUSED   # llm/moe_router_unfused's router
    if name == "router":
        m, e, h, _ = op.shape
        return t + (moe_router_unfused.router_extra_s(gpu, m, e, False) if unfused else router_extra_s(gpu, m, e, h, False))
    if name == "router.dgrad":
        m, h, e, _ = op.shape
        return t + (moe_router_unfused.router_extra_s(gpu, m, e, True) if unfused else router_extra_s(gpu, m, e, h, True))
    if name in ("permute", "permute.bwd"):
        return t * permute_factor(op.bytes, name.endswith(".bwd"))
    return t
