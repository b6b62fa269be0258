"""fp8layer60 (issue 44, session 60; development only): one GPT-3 175B TP 4 fp8 layer (the MLPerf 512-GPU layout:
micro-batch 2 x 2,048 tokens, sequence parallel), measured op by op back to back and as one sequence by
studies/fp8_layer_device.py, against the GPU card's prices of the same ops (llm/op_price.op_time_s). Prints per op
measured / priced, then the layer: the sum of the back-to-back ops, the sequence, the card's sum, and the SM clock under
the sequence and under its largest GEMM back to back. The attention backward slot was timed forward + backward: its
forward's own time is subtracted.
    python studies/fp8_layer_read.py --ops OUT.json          # write the op list the device script reproduces
    python studies/fp8_layer_read.py DOC.json [--card CARD]  # read a device document (default models/gpu/h200-sxm.yaml)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

SOURCE = ROOT / "calibration" / "published" / "llm-mlperf-training-v4.0-smc-gpt3-h100.yaml"   # its row 0: the layout


def layer_ops():
    """(forward + backward ops of one layer, precision) of SOURCE's row 0 as `validate --published llm` builds it."""
    from simcluster.llm import compiled
    from simcluster.published import read_published
    from simcluster.reference.llm import llm_usage, predict_run

    ref = read_published(SOURCE, "published-llm-run")
    p = predict_run(ref, llm_usage(ref), 0, ref.runs[0])
    fwd, bwd = compiled.layer_ops(p.model, p.par, p.batch, p.framework)
    return fwd + bwd, p.batch.precision


def op_record(op, precision: str) -> dict:
    from simcluster.llm.op_price import gemm_dtype

    rec = {"name": op.name, "kind": op.kind, "count": op.count}
    if op.kind == "gemm":
        m, n, k, batch = op.shape
        return {**rec, "m": m, "n": n, "k": k, "batch": batch, "dtype": gemm_dtype(op.name, precision)}
    if op.kind == "attention":
        return {**rec, "shape": list(op.shape[:6]), "backward": bool(op.shape[7])}
    return {**rec, "bytes": op.bytes}


def read(doc: dict, card: Path) -> str:
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.ops import op_time_s

    if not isinstance(doc, dict) or not isinstance(doc.get("ops"), list) or "sequence_s" not in doc:
        raise SimclusterError("expected fp8_layer_device.py's document (an 'ops' list and 'sequence_s')")
    gpu, _ = load_gpu(card)
    ops, precision = layer_ops()
    if [o.name for o in ops] != [r["name"] for r in doc["ops"]]:
        raise SimclusterError("the document's ops are not this commit's layer ops (regenerate with --ops)")
    priced = [op_time_s(gpu, o, precision) for o in ops]
    measured = [r["measured_s"] for r in doc["ops"]]
    fwd_attention = next((m for r, m in zip(doc["ops"], measured, strict=True) if r["kind"] == "attention" and not r["backward"]), 0.0)
    lines = [f"{doc['device'].get('name', '?')}, torch {doc.get('torch')}, card {card.name}" + (" (QUICK: shapes / 16)" if doc.get("quick") else ""),
             f"{'op':28s} {'measured us':>12s} {'card us':>10s} {'card/meas':>10s}"]
    for r, m, p in zip(doc["ops"], measured, priced, strict=True):
        m = m - fwd_attention if r["kind"] == "attention" and r["backward"] else m
        lines.append(f"{r['name']:28s} {m * 1e6:12.1f} {p * 1e6:10.1f} {p / m - 1:+10.1%}")
    ops_sum, card_sum, seq = sum(measured) - fwd_attention, sum(priced), doc["sequence_s"] - fwd_attention
    gemm = [(m, p) for r, m, p in zip(doc["ops"], measured, priced, strict=True) if r["kind"] == "gemm"]
    lines += [f"GEMMs: measured {sum(m for m, _ in gemm) * 1e6:.0f} us, card {sum(p for _, p in gemm) * 1e6:.0f} us "
              f"({sum(p for _, p in gemm) / sum(m for m, _ in gemm) - 1:+.1%})",
              f"layer: ops back to back {ops_sum * 1e6:.0f} us, sequence {seq * 1e6:.0f} us ({seq / ops_sum - 1:+.1%}), "
              f"card {card_sum * 1e6:.0f} us (card vs sequence {card_sum / seq - 1:+.1%})",
              f"SM clock: sequence {doc.get('sequence_clock') or 'not sampled'}; {doc.get('largest_gemm')} back to back "
              f"{doc.get('largest_gemm_clock') or 'not sampled'}"]
    return "\n".join(lines)


def main() -> None:
    ap = ArgumentParser(prog="fp8_layer_read.py", description=__doc__.splitlines()[0])
    ap.add_argument("doc", nargs="?", help="fp8_layer_device.py's JSON document")
    ap.add_argument("--ops", metavar="OUT", help="write the op list for the device script to OUT and stop")
    ap.add_argument("--card", default=str(ROOT / "models" / "gpu" / "h200-sxm.yaml"))
    args = ap.parse_args()
    try:
        if args.ops:
            ops, precision = layer_ops()
            Path(args.ops).write_text(json.dumps({"source": SOURCE.name, "row": 0,
                                                  "ops": [op_record(o, precision) for o in ops]}, indent=1) + "\n")
            return
        if not args.doc:
            ap.error("give the device document, or --ops OUT")
        print(read(json.loads(Path(args.doc).read_text()), Path(args.card)))
    except (OSError, ValueError, KeyError, TypeError, SimclusterError) as e:   # JSONDecodeError is a ValueError; a
        # record without the field read (KeyError) or of the wrong type (TypeError): one line, never a traceback
        print(f"fp8_layer_read.py: {args.doc or args.ops}: {str(e).splitlines()[0]}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
