"""Session 53 moe53 (issue 44): what-if predictions of published MoE rows with one setting changed, the model itself
unchanged; findings only (docs/models/llm-findings.md, Session 53: moe53). Each line: the row as the validation predicts it
(studies/moe_rows.predict_row's reader), then the same row with one parallel / batch / framework field replaced, and the
error either way: measured step / predicted step - 1 (+ = predicted faster; the tokens/s rows' convention, which
`validate` also prints for step-time rows as 1 - predicted / measured: -5.9% there for the DeepSeek-V3 row's -5.6% here).
Not a fit: nothing is chosen from these lines.
    python studies/moe53_whatif.py
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from moe_rows import predict_row  # noqa: E402

from simcluster.llm.predict import predict_llm  # noqa: E402

ZOO = "llm-megatron-moe-modelzoo-qwen3-235b-h100"
AWS = "llm-awsome-megatron-bridge-qwen3-30b-p5-h100"
# (file stem, row, label, what changes: ("par" | "batch" | "framework", {field: value}))
CASES = (
    (ZOO, 6, "16K: recompute none (the 4K row 4's)", ("par", {"recompute": "none", "recompute_modules": ()})),
    (ZOO, 6, "16K: recompute layernorm only", ("par", {"recompute_modules": ("layernorm",)})),
    (ZOO, 6, "16K: tp_comm_overlap on", ("par", {"tp_comm_overlap": True})),
    (ZOO, 4, "4K row 4: recompute layernorm + moe (the 16K rows')", ("par", {"recompute": "selective", "recompute_modules": ("layernorm", "moe")})),
    (ZOO, 4, "4K row 4: GBS 256 (the 16K rows')", ("batch", {"global_batch": 256})),
    (AWS, 0, "EP16 mb4 off: recompute none", ("par", {"recompute": "none"})),
    (AWS, 3, "EP32 mb4 off: recompute none", ("par", {"recompute": "none"})),   # the 1.96 s llm-findings cites (mendA53)
    (AWS, 0, "EP16 mb4 off: router fused", ("framework", {"moe_router_fusion": True})),
    (AWS, 2, "EP16 mb4 on: A2A overlap off", ("par", {"moe_a2a_overlap": False})),
    (AWS, 5, "EP32 mb4 on: A2A overlap off", ("par", {"moe_a2a_overlap": False})),
    ("llm-dgxc-benchmarking-v25.08-deepseek-v3-h100", 0, "development row with module moe recomputed: moe dropped",
     ("par", {"recompute_modules": ("mla_up_proj", "mlp")})),
)
# AWS's own NCCL alltoall_perf reference on p5.48xlarge beside its EP kernel benchmark (awslabs/awsome-distributed-ai
# 95b939cd micro-benchmarks/expert-parallelism/ep-backend-comparison/RESULTS-p5.md, 2026-06-22): busbw GB/s at the EP
# payload (~64 MiB) and asymptotic peak, 4 nodes (32 ranks) and 8 nodes (64 ranks); read after the prediction (a diagnostic)
A2A_PRINTED = ((32, 45.1, 53.9), (64, 40.4, 51.1))


def error(row, result) -> float:
    return row.measured_step_s / result.step_time_s - 1    # + = predicted faster (step time)


def parts(result) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in result.breakdown.items() if isinstance(v, (int, float)) and v > 0)


HEADER = ("# PYTHONPATH=. python studies/moe53_whatif.py   (session 53 moe53: the model unchanged; row 3's recompute case "
          "added at mendA53, cold review A53 item 7)")


def main() -> None:
    print(HEADER)
    for stem, i, label, (what, fields) in CASES:
        row = predict_row(stem, i)
        model, par, batch, framework = row.model, row.par, row.batch, row.framework
        if what == "par":
            par = replace(par, **fields)
        elif what == "batch":
            batch = replace(batch, **fields)
        else:
            framework = replace(framework, **fields)
        result = predict_llm(model, par, batch, row.gpu, row.net, row.gpus, "megatron", trace=False, framework=framework)
        measured = row.measured_step_s * (batch.global_batch / row.batch.global_batch)
        print(f"{stem[4:]} row {i}: {label}")
        print(f"  as recorded  step {row.result.step_time_s:8.3f} s  measured {row.measured_step_s:8.3f} s  "
              f"error {100 * error(row, row.result):+6.1f}%   [{parts(row.result)}] s")
        print(f"  what-if      step {result.step_time_s:8.3f} s  (measured scaled by the batch: {measured:8.3f} s)  "
              f"error {100 * (measured / result.step_time_s - 1):+6.1f}%   [{parts(result)}] s")


def alltoall_check() -> None:
    """The model's NCCL alltoall on the AWS rows' machine (p5: efa-multirail-400g x 8 a node) against AWS's printed
    alltoall_perf busbw; busbw = bytes per rank / time x (n - 1) / n (nccl-tests' alltoall factor)."""
    from simcluster.llm import comm
    from simcluster.llm.spec import ParallelSpec

    row = predict_row(AWS, 3)
    for ranks, matched, peak in A2A_PRINTED:
        par = ParallelSpec(tp=8, pp=1, dp=ranks // 8, ep=ranks, expert_tp=1, sequence_parallel=True)
        group = comm.groups(par, row.net).ep if ranks <= row.gpus else None
        if group is None:
            print(f"alltoall over {ranks} ranks: more ranks than the rows' 64-GPU machine holds, skipped")
            continue
        line = []
        for mib in (16, 64, 256):
            n = mib * 2**20
            t = comm.collective_s(row.net, group, "alltoall", n)
            line.append(f"{mib} MiB {n / t * (ranks - 1) / ranks / 1e9:5.1f}")
        print(f"alltoall over {ranks} ranks ({ranks // 8} p5 nodes): model busbw GB/s {', '.join(line)}; "
              f"AWS printed {matched} at ~64 MiB, peak {peak}: model / printed at 64 MiB "
              f"{float(line[1].split()[-1]) / matched:.2f}")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
    alltoall_check()
