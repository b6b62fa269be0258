"""Gradient accumulation in the llm-step runner (issue 44, session 45): `--grad-accum N` runs each step as N
micro-batches of SEQ x MICRO_BATCH sequences, each micro-batch's loss divided by N and its backward run, then one
optimizer step; `--no-sync` (modes ddp and fsdp) reduces the gradients once per step, on the last micro-batch:
FSDP2's `set_requires_gradient_sync(False)` before every micro-batch but the last (no reduce-scatter there: each
rank accumulates its unsharded gradients in the reduce dtype, fp32 here, FSDPParam.to_accumulated_grad_if_needed /
accumulate_unsharded_grad_if_needed; parameters still resharded after each backward, so all-gathered again per
micro-batch), DDP's `no_sync()` context around those backwards. Without --no-sync every micro-batch's backward reduces
(both wrappers' default). The document records {"micro_batches": N, "grad_sync": "micro_batch" | "step"} under
"grad_accum" and each shape's tokens_per_step counts the N micro-batches. `--reshard-after-forward false` (mode fsdp,
session 46) wraps every layer with FSDP2's reshard_after_forward=False (llm_mesh.fully_sharded), recorded as
"fsdp_reshard_after_forward": false. `--reshard-after-backward false` (mode fsdp, session 47) calls FSDP2's
`set_reshard_after_backward(k == N - 1)` before each micro-batch k (every FSDP module: the call recurses): the gathered
parameters are kept from one micro-batch's backward to the next one's forward (no re-gather) and resharded after the
step's last backward, so the next step gathers the updated ones (FSDPModule.set_reshard_after_backward, recurse=True by
default: torch/distributed/fsdp/_fully_shard/_fully_shard.py, pytorch/pytorch 0257dd1c; FSDPParamGroup.post_backward
reshards only where reshard_after_backward: _fsdp_param_group.py, pytorch/pytorch 002a76fb). Mode fsdp records
"fsdp_reshard_after_backward" (true by default). torch is passed in.
"""

from __future__ import annotations

import contextlib

SYNC_MODES = ("ddp", "fsdp")   # the wrappers with a no-sync switch


def add_argument(ap) -> None:
    ap.add_argument("--grad-accum", type=int, default=1, metavar="N", help="micro-batches per optimizer step (modes "
                    "single, ddp, fsdp; llm_accum.py)")
    ap.add_argument("--reshard-after-forward", choices=("true", "false"), default="true", help="mode fsdp: FSDP2's "
                    "reshard_after_forward (false: ZeRO-2's layout, the gathered parameters kept from forward to backward)")
    ap.add_argument("--reshard-after-backward", choices=("true", "false"), default="true", help="mode fsdp: FSDP2's "
                    "reshard_after_backward between micro-batches (false: set_reshard_after_backward(False) on every "
                    "micro-batch but the step's last: the parameters stay gathered, no re-gather per forward)")
    ap.add_argument("--no-sync", action="store_true", help="with --grad-accum > 1, modes ddp / fsdp: reduce the "
                    "gradients on the last micro-batch only (FSDP2 set_requires_gradient_sync, DDP no_sync)")


def check(args) -> int:
    """The accumulation count; SystemExit with one line where the flags do not fit the mode."""
    n = args.grad_accum
    if n < 1:
        raise SystemExit(f"--grad-accum {n}: expected micro-batches per step >= 1")
    if n > 1 and args.mode not in ("single", *SYNC_MODES):
        raise SystemExit(f"--grad-accum {n}: modes single, ddp and fsdp only (--mode pp has --microbatches)")
    if args.no_sync and (args.mode not in SYNC_MODES or n < 2):
        raise SystemExit(f"--no-sync: needs --mode ddp or fsdp and --grad-accum >= 2 (got --mode {args.mode}, "
                         f"--grad-accum {n})")
    if args.reshard_after_forward == "false" and args.mode != "fsdp":
        raise SystemExit(f"--reshard-after-forward false: needs --mode fsdp (got --mode {args.mode})")
    if args.reshard_after_backward == "false" and (args.mode != "fsdp" or n < 2):   # one micro-batch: nothing to keep
        raise SystemExit(f"--reshard-after-backward false: needs --mode fsdp and --grad-accum >= 2 (got --mode {args.mode}, "
                         f"--grad-accum {n})")
    return n


def record(args, n: int) -> dict:
    """The run document's keys for these flags: grad_accum where n > 1, fsdp_reshard_after_forward where it is false,
    fsdp_reshard_after_backward under mode fsdp."""
    out = {"grad_accum": describe(n, args.no_sync)} if n > 1 else {}
    out |= {"fsdp_reshard_after_forward": False} if args.reshard_after_forward == "false" else {}
    return out | ({"fsdp_reshard_after_backward": args.reshard_after_backward == "true"} if args.mode == "fsdp" else {})


def describe(n: int, no_sync: bool) -> dict:
    return {"micro_batches": n, "grad_sync": "step" if no_sync else "micro_batch"}


def step_maker(torch, model, opt, device, amp: bool, n: int, no_sync: bool, mode: str, keep_gathered: bool = False):
    """make_step(inputs, labels) for llm_step.run_shape: inputs hold n micro-batches' rows, split in order;
    keep_gathered (mode fsdp, --reshard-after-backward false): no reshard after any backward but the last."""
    fsdp = no_sync and mode == "fsdp"
    keep = keep_gathered and mode == "fsdp"

    def skip(k: int):   # DDP: the reduction left out of every backward but the last
        return model.no_sync() if no_sync and mode == "ddp" and k < n - 1 else contextlib.nullcontext()

    def make_step(inputs, labels):
        xs, ys = inputs.chunk(n), labels.chunk(n)

        def step():
            loss = None
            for k in range(n):
                if fsdp:
                    model.set_requires_gradient_sync(k == n - 1)
                if keep:
                    model.set_reshard_after_backward(k == n - 1)
                with skip(k):
                    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                        loss = model(xs[k], ys[k]) / n
                    loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        return step

    return make_step
