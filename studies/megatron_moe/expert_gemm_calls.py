"""The local spec's expert GEMMs at small per-expert M (issue 44, session 41): rank 0's measured GEMM kernels of the experts
(studies/megatron_moe/kernel_kinds.py's expert_gemm kind) against the model's price of the same calls, per call, and the
GPU's idle just before each expert GEMM (the gap from the previous kernel's end). A read of development data, not a test.

    python studies/megatron_moe/expert_gemm_calls.py calibration/*megatron-moe*/trace-*.json.gz
    python studies/megatron_moe/expert_gemm_calls.py $(ls calibration/*megatron-moe*/trace-*.json.gz | grep -v 'rank[1-9]')
                                                        # rank 0's: the print in expert_gemm_calls.txt

Printed per trace: the per-expert M (balanced), the GEMM kernels counted (cuBLAS / nvjet / cutlass; split-K reduce and
the zero fills of an empty expert's gradient summed in the time, not counted as calls) and the model's calls (per local
expert and layer: fc1 and fc2 forward, their data and weight gradients backward: 6), measured and priced seconds, the
price's excess over the kernels per modelled call and per measured call (the two counts differ: e64 EP 1 measures 1218
calls where the model has 1536, the EP 2 rows 78-148 where it has 48-96), the price less the card's gemm.call_time on
every modelled call (the GEMM curve alone) against the kernels, and the gap before each GEMM kernel: its median and the
sum of min(gap, 5 us) (the back-to-back spacing a GEMM the host issued in time still costs the step), with that sum per
measured call and the share of gaps at the 5 us cap. The cap is close to the 5.2 us call time the comparison tests, so
"kernels + bubbles" matches the price by construction where most gaps hit the cap (the host-bound rows): read it only
where the median gap is ~2 us. With EP > 1 rank 0's experts receive the tokens routing sends them, not the balanced
count, so the per-call excess is read on the EP 1 rows (moe4).
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.script_args import check  # noqa: E402
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


def summary(r: dict, priced_s: float, model_calls: int, call_s: float) -> dict:
    """The per-call reading of one trace (r: read()'s) against the model's price of the same expert GEMMs (priced_s, in
    model_calls calls, each carrying the card's call_s): microseconds a call, milliseconds in all, fractions."""
    gaps = r["gaps_us"] or [0.0]
    bubble_us = sum(min(g, BUBBLE_US) for g in gaps)
    calls = max(r["calls"], 1)
    curve_s = priced_s - model_calls * call_s
    return {"excess_model_us": (priced_s - r["measured_s"]) / model_calls * 1e6,
            "excess_measured_us": (priced_s - r["measured_s"]) / calls * 1e6,
            "curve_ms": curve_s * 1e3, "curve_err": curve_s / r["measured_s"] - 1,
            "gap_median_us": statistics.median(gaps), "bubbles_ms": bubble_us * 1e-3, "bubble_a_call_us": bubble_us / calls,
            "capped": sum(g >= BUBBLE_US for g in gaps) / len(gaps)}


def row(path: Path) -> str | None:
    from simcluster.hardware.gpu import load_gpu
    from simcluster.heldout.moe_lab import GPU_CARDS, device_gpu, run_document

    r = read(path)   # first: a missing or corrupt trace is named even without a run document
    if not r["calls"] or r["measured_s"] <= 0:
        raise SimclusterError(f"{path}: no expert GEMM kernel in the trace (not a local-spec MoE step's rank-0 profile?)")
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
    call_s = load_gpu(ROOT / GPU_CARDS[device_gpu(doc.get("device", ""))])[0].gemm_call_s
    s = summary(r, priced, model_calls, call_s)
    return (f"{name[:40]:40s} ep {ep} M {routed:5d} ffn {m['expert_ffn']:5d} calls {r['calls']:4d} / model {model_calls:4d}  "
            f"measured {r['measured_s'] * 1e3:6.2f} ms  model {priced * 1e3:6.2f} ms ({priced / r['measured_s'] - 1:+4.0%})  "
            f"excess {s['excess_model_us']:+6.2f} us a modelled call, {s['excess_measured_us']:+6.2f} a measured  "
            f"less {call_s * 1e6:.1f} us a call {s['curve_ms']:6.2f} ms ({s['curve_err']:+4.0%})  gap before: median "
            f"{s['gap_median_us']:6.1f} us, bubbles {s['bubbles_ms']:5.2f} ms ({s['bubble_a_call_us']:3.1f} us a call, "
            f"{s['capped']:4.0%} capped; measured + bubbles {r['measured_s'] * 1e3 + s['bubbles_ms']:6.2f})")


def _main(argv: list[str]) -> int:
    for p in argv:
        line = row(Path(p))
        print(line if line else f"{Path(p).name}: no run document beside it, skipped")
    return 0


def main(argv: list[str]) -> int:
    """The command line; a missing or corrupt trace is one line on stderr naming it, exit 1."""
    check(words=None, usage="TRACE ...", argv=argv)
    return one_line_errors(_main, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
