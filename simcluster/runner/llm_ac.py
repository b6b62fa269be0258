"""llm-step's activation checkpointing modes (issue 44): `--ac-mode none | full | every:N | op`, as torchtitan runs them
(docs/models/llm.md; the model's side is simcluster/llm/eager_ac.py):

  full     every decoder block under torch.utils.checkpoint (non-reentrant; what --activation-checkpointing runs)
  every:N  blocks N, 2N, ... (counted from 1) under it, the others plain (torchtitan's layer policy)
  op       every block under it with a selective-checkpoint context: the outputs of SDPA and of the block's 1st, 3rd,
           5th, ... aten.mm are saved (MUST_SAVE), everything else is recomputed (PREFER_RECOMPUTE); the mm counter
           runs per block and per pass (forward, recompute), as torchtitan's op policy
torch is imported by the caller and passed in; nothing here imports it at module level.
"""

from __future__ import annotations

import argparse

SIMPLE = ("none", "full", "op")
# torch.utils.checkpoint's preserve_rng_state: False as torchtitan passes it (its blocks have no dropout, so no RNG state
# to replay); the registered runs up to h200x1-llm-sac-2026-11-29 ran torch's default True (the CPU and CUDA RNG states
# saved and restored around each block's recompute: host work per block; their documents have no preserve_rng_state key)
PRESERVE_RNG_STATE = False
SAVED_OPS = ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
             "_scaled_dot_product_cudnn_attention")   # aten ops whose outputs op keeps, beside every other aten.mm


def parse_mode(text: str) -> str:
    """An --ac-mode value: none, full, op or every:N (N >= 1); argparse.ArgumentTypeError otherwise."""
    if text in SIMPLE:
        return text
    head, _, count = text.partition(":")
    if head == "every" and count.isdigit() and int(count) >= 1:
        return f"every:{int(count)}"
    raise argparse.ArgumentTypeError(f"expected none, full, op or every:N (N >= 1), got {text!r}")


def add_argument(ap: argparse.ArgumentParser) -> None:
    """llm-step's checkpointing flags: --activation-checkpointing (the older spelling of full) and --ac-mode."""
    ap.add_argument("--activation-checkpointing", action="store_true", help="run each decoder layer under "
                    "torch.utils.checkpoint (non-reentrant): its forward again in the backward, only its input kept")
    ap.add_argument("--ac-mode", type=parse_mode, metavar="MODE", help="activation checkpointing: none, full (each "
                    "block), every:N (blocks N, 2N, ...), op (torchtitan's op-level selective policy); default: full "
                    "with --activation-checkpointing, else none")


def resolve(args: argparse.Namespace) -> str:
    """The run's mode from --ac-mode and the older --activation-checkpointing (full); SystemExit on a contradiction or on
    a mode the pipeline modes do not run."""
    mode = args.ac_mode or ("full" if args.activation_checkpointing else "none")
    if args.activation_checkpointing and mode != "full":
        raise SystemExit(f"--activation-checkpointing is --ac-mode full; got --ac-mode {mode} beside it")
    if mode not in ("none", "full") and args.mode.startswith("pp"):
        raise SystemExit(f"--ac-mode {mode}: the pipeline modes checkpoint whole blocks only (none or full)")
    return mode


def checkpointed(index: int, mode: str) -> bool:
    """Whether block `index` (0-based, model order) runs under torch.utils.checkpoint."""
    if mode in ("full", "op"):
        return True
    if mode.startswith("every:"):
        return (index + 1) % int(mode.split(":")[1]) == 0
    return False


def op_policy(torch):
    """torchtitan's op policy for one block's checkpoint: a fresh mm counter per pass (forward, recompute)."""
    CheckpointPolicy = torch.utils.checkpoint.CheckpointPolicy   # noqa: N806 (torch's enum)
    mm = torch.ops.aten.mm.default
    saved = {getattr(torch.ops.aten, name).default for name in SAVED_OPS if hasattr(torch.ops.aten, name)}
    counts = {"forward": 0, "recompute": 0}

    def policy(ctx, func, *args, **kwargs):
        if func == mm:
            key = "recompute" if ctx.is_recompute else "forward"
            counts[key] += 1
            return CheckpointPolicy.MUST_SAVE if counts[key] % 2 == 1 else CheckpointPolicy.PREFER_RECOMPUTE
        return CheckpointPolicy.MUST_SAVE if func in saved else CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def run_block(torch, layer, index: int, mode: str, x, cos, sin):
    """One decoder block's forward in the run's mode."""
    if not checkpointed(index, mode):
        return layer(x, cos, sin)
    import torch.utils.checkpoint  # noqa: F401 (the submodule, for op_policy's torch.utils.checkpoint)
    from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    if mode == "op":
        return checkpoint(layer, x, cos, sin, use_reentrant=False, preserve_rng_state=PRESERVE_RNG_STATE,
                          context_fn=lambda: create_selective_checkpoint_contexts(op_policy(torch)))
    return checkpoint(layer, x, cos, sin, use_reentrant=False, preserve_rng_state=PRESERVE_RNG_STATE)


def record(mode: str, layers: int) -> dict:
    """The document's keys for the mode (none: nothing; activation_checkpointing kept for the full runs' readers)."""
    if mode == "none":
        return {}
    blocks = [i for i in range(layers) if checkpointed(i, mode)]
    what = {"full": "full: torch.utils.checkpoint per decoder layer (use_reentrant=False)",
            "op": "op: torch.utils.checkpoint per decoder layer with torchtitan's op policy (SDPA and every other mm saved)"}
    text = what.get(mode, f"{mode}: torch.utils.checkpoint on decoder layers {blocks} (use_reentrant=False)")
    return {"activation_checkpointing": text, "ac_mode": mode, "ac_blocks": blocks, "preserve_rng_state": PRESERVE_RNG_STATE}
