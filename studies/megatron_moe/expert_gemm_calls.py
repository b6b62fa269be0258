"""The local spec's expert GEMMs at small per-expert M (issue 44, session 41): rank 0's measured GEMM kernels of the experts
(studies/megatron_moe/kernel_kinds.py's expert_gemm kind) against the model's price of the same calls, per call, and the
GPU's idle just before each expert GEMM (the gap from the previous kernel's end). A read of development data, not a test.

    python studies/megatron_moe/expert_gemm_calls.py calibration/*megatron-moe*/trace-*.json.gz

Printed per trace: the per-expert M (balanced), the GEMM kernels counted (cuBLAS / nvjet / cutlass; split-K reduce and
the zero fills of an empty expert's gradient summed in the time, not counted as calls) and the model's calls (per local
expert and layer: fc1 and fc2 forward, their data and weight gradients backward: 6), measured and priced seconds, the
price's excess per modelled call, and the gap before each GEMM kernel: its median and the sum of min(gap, 5 us) (the
back-to-back spacing a GEMM the host issued in time still costs the step). With EP > 1 rank 0's experts receive the
tokens routing sends them, not the balanced count, so the per-call excess is read on the EP 1 rows (moe4).
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from studies.megatron_moe.kernel_kinds import kind_of, load, model_kinds, one_line_errors, windows  # noqa: E402

BUBBLE_US = 5.0     # gaps under this are the GPU's spacing between kernels issued in time (fsdp_noise_trace's rule)
NOT_A_CALL = ("void cublasLt::splitKreduce", "void at::native")


def read(path: Path) -> dict:
    """{calls, measured_s, gaps_us: [gap before each GEMM kernel]} of rank 0's expert GEMMs in the trace."""
    gpu, ops = load(path)
    win = windows(ops)
    end, gaps, calls, measured = 0.0, [], 0, 0.0
    for k in sorted(gpu, key=lambda k: k["ts"]):
        if kind_of(k, win) == "expert_gemm":
            measured += k["dur"] * 1e-6
            if not k["name"].startswith(NOT_A_CALL):
                calls += 1
                gaps.append(max(0.0, k["ts"] - end))
        end = max(end, k["ts"] + k["dur"])
    return {"calls": calls, "measured_s": measured, "gaps_us": gaps}


def row(path: Path) -> str | None:
    from simcluster.heldout.moe_lab import run_document

    r = read(path)   # first: a missing or corrupt trace is named even without a run document
    name = re.sub(r"^trace-", "", path.name)
    name = re.sub(r"-rank\d", "", name).replace(".json.gz", "")
    doc_path = next(iter(sorted(path.parent.glob(f"megatron-moe-{name}.json"))), None)
    if doc_path is None:
        return None
    doc = run_document(doc_path)[0]
    m, ep = doc["model"], doc["parallel"]["ep"]
    local = m["experts"] // ep
    routed = m["seq"] * m["micro_batch"] * m["top_k"] * ep // m["experts"]
    model_calls = 6 * local * m["layers"]
    priced = model_kinds(doc)["expert_gemm"]
    gaps = r["gaps_us"] or [0.0]
    bubble_ms = sum(min(g, BUBBLE_US) for g in gaps) * 1e-3
    return (f"{name[:40]:40s} ep {ep} M {routed:5d} ffn {m['expert_ffn']:5d} calls {r['calls']:4d} / model {model_calls:4d}  "
            f"measured {r['measured_s'] * 1e3:6.2f} ms  model {priced * 1e3:6.2f} ms ({priced / r['measured_s'] - 1:+4.0%})  "
            f"excess {(priced - r['measured_s']) / model_calls * 1e6:+5.2f} us a call  gap before: median "
            f"{statistics.median(gaps):6.1f} us, bubbles {bubble_ms:5.2f} ms (measured + bubbles {r['measured_s'] * 1e3 + bubble_ms:6.2f})")


def _main(argv: list[str]) -> int:
    for p in argv:
        line = row(Path(p))
        print(line if line else f"{Path(p).name}: no run document beside it, skipped")
    return 0


def main(argv: list[str]) -> int:
    """The command line; a missing or corrupt trace is one line on stderr naming it, exit 1."""
    return one_line_errors(_main, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
