"""The cp smoke's gate (calibration/h200x2-llm-eager-cp-2026-11-29/device_run.sh; issue 44, session 36): exit 1 unless
the context-parallel smoke really ran context parallelism.

    python3 studies/cp_smoke_check.py SMOKE_CP.json SMOKE_SINGLE.json SMOKE-rank0.json.gz [--tol 1e-2]

1. The loss: the runner seeds the weights (torch.manual_seed(0) before build) and the data (a CPU generator seeded with
   the shape's index) the same way in --mode single and --mode cp, and each cp rank's loss is the mean over its own
   s / cp tokens (the same count on every rank), with DDP averaging the gradients: so the mean of the cp ranks' losses
   of the last timed step equals the single-GPU loss at the same warmup / steps up to bf16 numerics (flash against the
   default SDPA backend). A mismatch is a plumbing error (labels or rotary tables sharded unlike the tokens, a wrong
   reduction). It cannot see CP switched off (every rank on the whole sequence gives the single loss too): the kernels do.
2. The kernels in rank 0's profiled step (Chrome trace, events of category "kernel"): flash attention's (names with
   "flash", not cuDNN's), NCCL's AllGather (the K / V gather) and SendRecv (the dK / dV passes). A run that never entered the ring
   has no AllGather; one that fell back from flash has no flash kernel.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.errors import SimclusterError  # noqa: E402 (the repository on the path first)
from simcluster.heldout.eager import _document  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402
from simcluster.traces.torch_profiler import complete_events  # noqa: E402


def document(path: str) -> dict:
    """llm-step's stdout (log lines may come first: heldout.eager._document reads from the first '{'); ValueError naming
    the file when it holds no llm-step document."""
    doc, why = _document(Path(path).read_text())
    if doc is None:
        raise ValueError(f"{path}: {why or 'no JSON document'}")
    return doc


def kernel_counts(events: list) -> dict[str, int]:
    """Flash-attention, NCCL AllGather and NCCL SendRecv kernels among a Chrome trace's kernel events."""
    names = [str(e.get("name", "")) for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
    nccl = [n for n in names if "nccl" in n.lower()]
    # cuDNN's SDPA kernels carry "flash" in their names too (cudnn_generated_fort_native_sdpa_sm90_flash_fprop_...)
    return {"flash": sum("flash" in n.lower() and "cudnn" not in n.lower() for n in names),
            "nccl_allgather": sum("allgather" in n.lower() for n in nccl),
            "nccl_sendrecv": sum("sendrecv" in n.lower() for n in nccl)}


def trace_events(path: str) -> list:
    """The trace's complete events, plain or gzipped, object or array form (torch_profiler.complete_events); ValueError
    naming the file for anything else."""
    try:
        events = complete_events(path)
    except SimclusterError as exc:
        raise ValueError(str(exc)) from None
    if not events:
        raise ValueError(f"{path}: no complete events with ts and dur: not a Chrome trace of a profiled step")
    return events


def problems(cp_doc: dict, single_doc: dict, counts: dict[str, int], tol: float) -> list[str]:
    """What is wrong with the smoke (empty: it passes)."""
    out = []
    cp_shape, one = cp_doc["shapes"][0], single_doc["shapes"][0]
    ranks = cp_shape.get("ranks") or []
    losses = [r.get("loss") for r in ranks]
    if cp_shape.get("status") != "ok" or one.get("status") != "ok":
        out.append(f"status cp {cp_shape.get('status')} single {one.get('status')}")
    elif not losses or any(x is None for x in losses) or one.get("loss") is None:
        out.append(f"no loss to compare: cp ranks {losses}, single {one.get('loss')}")
    else:
        mean = sum(losses) / len(losses)
        if not abs(mean - one["loss"]) <= tol:
            out.append(f"loss: mean of cp ranks {mean:.5f} {losses} against single {one['loss']:.5f} (tolerance {tol})")
    out += [f"no {k} kernel in rank 0's trace" for k, n in counts.items() if n == 0]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cp_json")
    ap.add_argument("single_json")
    ap.add_argument("trace", help="rank 0's profiled smoke step (llm-step --trace), .json or .json.gz")
    ap.add_argument("--tol", type=float, default=1e-2, help="|mean cp loss - single loss| allowed")
    args = ap.parse_args(argv)
    try:
        cp_doc, single_doc, counts = document(args.cp_json), document(args.single_json), kernel_counts(trace_events(args.trace))
        found = problems(cp_doc, single_doc, counts, args.tol)
        summary = ("cp smoke check:", counts, "cp ranks' losses", [r.get("loss") for r in cp_doc["shapes"][0].get("ranks") or []],
                   "single", single_doc["shapes"][0].get("loss"))
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        print(f"cp smoke check: cannot read the smoke's files ({args.cp_json}, {args.single_json}, {args.trace}): "
              f"{type(exc).__name__}: {exc}"[:600])
        return 1
    print(*summary)
    for p in found:
        print("cp smoke check FAILED:", p)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
