"""Context-parallel causal attention: the LLM model's price of a CP rank's attention core against torch's context
parallelism measured on one node (studies/cp_attention/device.py; a comparison, not a test).

    python studies/cp_attention/compare.py [BUNDLE_OR_JSON ...]        # without arguments: the predictions alone

The model (simcluster/llm/ops.py _attention_core, session 25): a rank of a load-balanced CP group of size c runs c
unmasked blocks of s/c queries x s/2c keys (forward; the backward 2.5x its FLOPs), timed on the GPU card's attention
curves; the whole sequence on one GPU is one causal s x s kernel. The K/V exchange is priced separately by the LLM
model (exposed only beyond the attention core: llm/comm.py) and is not in these numbers; torch's all-gather rotation
and its per-step merges of partial outputs (in fp32) are in the measurement. Error = predicted / measured - 1 on the
per-rank median of the slowest rank.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm import ops  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

CARDS = {"H100": "models/gpu/h100-sxm-interleaved.yaml", "H200": "models/gpu/h200-sxm-interleaved.yaml"}


def predicted(gpu, seq: int, heads: int, kv_heads: int, head_dim: int, cp: int) -> tuple[float, float]:
    """(forward, forward + backward) seconds of one rank's attention core, as the LLM model prices it."""
    model = TransformerSpec(1, heads * head_dim, 4 * heads * head_dim, heads, kv_heads, 1024, seq)
    par, batch = ParallelSpec(cp=cp), BatchSpec(cp, 1)
    f = next(o for o in ops.layer_forward(model, par, batch) if o.kind == "attention")
    b = next(o for o in ops.layer_backward(model, par, batch) if o.kind == "attention")
    tf, tb = ops.op_time_s(gpu, f, "bf16"), ops.op_time_s(gpu, b, "bf16")
    return tf, tf + tb


def documents(paths: list[str]) -> list[dict]:
    out = []
    for p in paths:
        path = Path(p)
        found = [path] if path.is_file() else sorted(path.glob("*.json"))
        docs = []
        for f in found:
            text = f.read_text()
            doc = json.loads(text[text.find("{"):]) if "{" in text else {}
            if doc.get("tool") == "cp-attention":
                docs.append(doc)
        if not docs:
            raise SystemExit(f"{p}: no cp-attention document there")
        out += docs
    return out


def main(argv: list[str]) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="*", help="cp-attention JSON documents or folders of them")
    ap.add_argument("--gpu", choices=sorted(CARDS), default="H200", help="the card for the predictions alone")
    ap.add_argument("--seqs", default="16384,32768,65536")
    ap.add_argument("--heads", default="32/8,16/16", help="HEADS/KV_HEADS,... for the predictions alone")
    ap.add_argument("--ranks", default="2,4")
    args = ap.parse_args(argv)
    docs = documents(args.inputs)
    if not docs:   # the registered predictions: every shape, no measurement
        gpu, _ = load_gpu(ROOT / CARDS[args.gpu])
        print(f"{'heads':>6} {'seq':>6} {'ranks':>5} {'fwd ms':>8} {'fwd+bwd ms':>11}   (model, {args.gpu} card, per rank)")
        for hk in args.heads.split(","):
            h, kv = map(int, hk.split("/"))
            for seq in map(int, args.seqs.split(",")):
                for cp in [1] + [int(r) for r in args.ranks.split(",")]:
                    f, fb = predicted(gpu, seq, h, kv, 128, cp)
                    print(f"{h:>3}/{kv:<2} {seq:>6} {cp:>5} {f * 1e3:8.2f} {fb * 1e3:11.2f}")
        return 0
    errors = []
    for doc in docs:
        name = "H100" if "H100" in doc["device"] else "H200"
        gpu, _ = load_gpu(ROOT / CARDS[name])
        a = doc["attention"]
        print(f"== {doc['device']} x {doc['world_size']}, heads {a['heads']}/{a['kv_heads']}, head dim {a['head_dim']}, "
              f"torch {doc['torch']}; card {CARDS[name]}")
        print(f"{'seq':>6} {'ranks':>5} {'pass':>8} {'meas ms':>9} {'pred ms':>9} {'err %':>7}")
        for r in doc["records"]:
            for cp, key, label in ((1, "single", "1 GPU"), (doc["world_size"], "cp", "CP")):
                pf, pfb = predicted(gpu, r["seq"], a["heads"], a["kv_heads"], a["head_dim"], cp)
                for suffix, pred in (("forward_s", pf), ("forward_backward_s", pfb)):
                    meas = r.get(f"{key}_{suffix}")
                    if meas is None:
                        why = r.get(f"{key}_error") or r.get("cp_error") or r.get("error")
                        if why:
                            print(f"{r['seq']:>6} {cp:>5} {suffix[:-2]:>8} not measured: {why[:100]}")
                        continue
                    meas = max(meas) if isinstance(meas, list) else meas
                    err = (pred / meas - 1) * 100
                    errors.append((label, suffix, err))
                    print(f"{r['seq']:>6} {cp:>5} {suffix[:-2]:>8} {meas * 1e3:9.2f} {pred * 1e3:9.2f} {err:+7.1f}")
    for label in ("1 GPU", "CP"):
        sel = [abs(e) for lab, _, e in errors if lab == label]
        if sel:
            print(f"{label}: mean |error| {sum(sel) / len(sel):.1f}% over {len(sel)} (shape, pass) rows, max {max(sel):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
