"""What Transformer Engine's p2p context parallelism adds beyond the ring's attention kernels, per published CP row
(issue 44, session 53 lseq53; read-only, no model change, not a test; docs/models/llm-findings.md "Session 53: lseq53").

Megatron-Core (Megatron-LM cbc89b32, NeMo v2.3.0rc2's pin: megatron/core/extensions/transformer_engine.py L679-680)
passes cp_comm_type "p2p" to TE when the recipe leaves it None (NeMo's Llama 3 config does). TE's AttnFuncWithCPAndKVP2P
(NVIDIA/TransformerEngine v2.2, transformer_engine/pytorch/attention.py L551-2300; NeMo v2.3.0's pin bee4649c differs
only in fp8 details; v2.3.0rc2's TE 1.14 also zero-fills the output and merges the first step: ~4 Q B more) runs,
besides one fused-attention call per ring step (priced by llm/ops._attention_core), memory-bound merges the model
does not price. Per layer and micro-batch on one rank, with Q = b (s/c) (a/t) d query elements and K = b (s/c) 2 (g/t) d
key + value elements (bf16, 2 B each; the byte counts below in elements x bytes per element), averaged over ranks (a
rank runs c - 1 off-diagonal steps, about half on the full q against half the kv, half on half the q):
  forward: the first step's output scaled (read + write, 4 Q B); each later step's output merged into it (read both,
    write one: 6 Q B full, 3 Q B on a half-q step: 4.5 Q on average) and the half kv / half q made contiguous (2 K B or
    2 Q B: K + Q on average); the K/V concatenated into the ring buffer once (4 K B)
  backward: per step dq added (4.5 Q), dk / dv concatenated (4 B on the step's kv: 3 K), dkv added into the received
    buffer (4.5 K), half kv (2 K on half the steps: K) or q / out / dout halves (3 x 2 Q on the other half: 3 Q) made
    contiguous; the kv copied into the first buffer once (4 K)
  bytes = 4 Q + (c - 1)(5.5 Q + K) + 4 K  +  c (7.5 Q + 8.5 K) + 4 K
priced at the card's memory rate (GpuParams.memory_time_s, one call per step), L / pp layers x micro-batches, as a
share of the predicted step. An upper estimate: the forward's lse corrections run on TE's side streams beside the next
step's kernel, and nothing here is assumed to overlap. The counts are read from TE's source by hand (not measured).

First, every row of NeMo 25.04's B200 table as `validate --published llm` predicts it (the one path, predict_run):
measured and predicted TFLOP/s, the step each implies, the predicted breakdown (compute, exposed TP / CP / DP
communication, stragglers), the compute's op classes (studies/llm_heldout_breakdown.compute_split), the memory
the model allocates, and where the CP group sits.
    python studies/lseq53_te_cp_merges.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from llm_heldout_breakdown import compute_split  # noqa: E402

from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import llm_usage, predict_run  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

PUBLISHED = ROOT / "calibration" / "published"
FILES = ("llm-nemo-25.04-long-sequence-b200.yaml", "llm-nemo-24.03-long-sequence-h100.yaml")
BF16 = 2


def merge_bytes(b: int, s: int, c: int, q_heads: int, kv_heads: int, d: int) -> tuple[float, float, int]:
    """(forward bytes, backward bytes, calls) of TE's p2p merges per layer and micro-batch on one rank (docstring)."""
    q = b * (s // c) * q_heads * d * BF16
    k = b * (s // c) * 2 * kv_heads * d * BF16
    fwd = 2 * q + (c - 1) * (2.75 * q + 0.5 * k) + 2 * k
    bwd = c * (3.75 * q + 4.25 * k) + 2 * k
    return fwd, bwd, 2 * c + 2


def rows_table() -> None:
    """The B200 table's rows, each predicted once more by validate's own path (module docstring)."""
    ref = read_published(PUBLISHED / FILES[0], "published-llm-run")
    usage = llm_usage(ref)
    print("# NeMo 25.04 B200 rows: TFLOP/s measured / predicted (+ = predicted fast); the step each implies (s); the predicted "
          "breakdown (s); compute by op class (%); allocated GiB of the card's; the CP group's placement")
    print(f"{'run':>3} {'seq':>8} {'layout':<14} {'meas':>5} {'pred':>5} {'error':>7} {'step m':>7} {'step p':>7} {'compute':>8} "
          f"{'tp':>6} {'cp':>5} {'dp':>5} {'strag':>6} {'gemm':>5} {'attn':>5} {'memb':>5} {'GiB':>6} cp group")
    for i, run in enumerate(ref.runs):
        p = predict_run(ref, usage, i, run)
        if isinstance(p, str):
            continue
        r, par, bd = p.result, p.par, p.result.breakdown
        classes, _, compute = compute_split(p.model, par, p.batch, p.gpu, p.framework, r.critical_stage, r.micro_batches)
        share = {k: v / compute * 100 for k, v in classes.items()}
        g = r.groups.get("cp") if par.cp > 1 else None
        where = f"{g['size']} ranks, {g['nodes']} node(s), {g['placement']}" if g else "-"
        print(f"{i:>3} {p.model.seq:>8} {f't{par.tp} p{par.pp} c{par.cp} d{par.dp}':<14} {p.measured / 1e12:>5.0f} "
              f"{p.predicted / 1e12:>5.0f} {p.error * 100:>+6.1f}% {r.step_time_s * (1 + p.error):>7.2f} {r.step_time_s:>7.2f} "
              f"{bd['compute']:>8.2f} {bd['exposed_tp_comm']:>6.2f} {bd['exposed_cp_comm']:>5.2f} {bd['exposed_dp_comm']:>5.2f} "
              f"{bd['stragglers']:>6.2f} {share['gemm']:>5.1f} {share['attn']:>5.1f} {share['membound'] + share['fp8cast']:>5.1f} "
              f"{r.memory_per_gpu_GiB['allocated']:>6.1f} {where}")
    print()


def main(argv: list[str]) -> int:
    ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)   # no arguments: an unknown one is refused in one line
    rows_table()
    print("# TE p2p CP merges (studies/lseq53_te_cp_merges.py docstring): per layer and micro-batch, and their share of "
          "the predicted step; error: validate --published llm's (+ = predicted fast)")
    print(f"{'file':<42} {'run':>3} {'seq':>8} {'layout':<14} {'error':>7} {'GB/layer':>9} {'ms/layer':>9} {'step s':>8} "
          f"{'merges s':>9} {'share':>6}")
    for name in FILES:
        ref = read_published(PUBLISHED / name, "published-llm-run")
        usage = llm_usage(ref)
        for i, run in enumerate(ref.runs):
            p = predict_run(ref, usage, i, run)
            if isinstance(p, str) or p.par.cp == 1:
                continue
            m, par, r = p.model, p.par, p.result
            fwd, bwd, calls = merge_bytes(p.batch.micro_batch, m.seq, par.cp, m.heads // par.tp,
                                          max(1, m.kv_heads // par.tp), m.head_dim)
            per_layer = p.gpu.memory_time_s(fwd / calls * 2) * calls / 2 + p.gpu.memory_time_s(bwd / calls * 2) * calls / 2
            total = per_layer * m.layers / par.pp * r.micro_batches
            print(f"{name.removeprefix('llm-').removesuffix('.yaml'):<42} {i:>3} {m.seq:>8} "
                  f"{f't{par.tp} p{par.pp} c{par.cp} d{par.dp}':<14} {p.error * 100:>+6.1f}% {(fwd + bwd) / 1e9:>9.2f} "
                  f"{per_layer * 1e3:>9.2f} {r.step_time_s:>8.3f} {total:>9.3f} {total / r.step_time_s * 100:>5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
