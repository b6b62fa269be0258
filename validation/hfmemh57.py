"""Issue 44, session 57 (hfmemh57): the Hugging Face frameworks' memory terms (llm/hf_memory.py: transformers' Llama saved
tensors, DeepSpeed ZeRO-3's gradient partition and step copy) on held-out shapes: accelerate's FSDP1 and DeepSpeed ZeRO-3
around a Hugging Face Llama on ONE H200 (calibration/h200x1-hfmemh57-2026-12-02, studies/hfmemh57_device.py: hfmem57's
measurement at hfhook55's sizes and three points, each configuration in a process of its own).

    python validation/hfmemh57.py --register calibration/h200x1-hfmemh57-2026-12-02/registered.yaml   # before the run
    python validation/hfmemh57.py [calibration/h200x1-hfmemh57-2026-12-02]                            # after: the read-out

Registered per (size, point, variant), one GPU on heldout/eager_registered.FLAG_CARD, parallel.zero 3, dp 1:
  ON   the model's peak allocated bytes (memory_per_gpu_GiB 'allocated', GiB) with `hf-fsdp1` / `hf-deepspeed` as they
       are at the registering commit (hf_memory's terms on);
  OFF  the same with FrameworkSpec.hf_llama_saves and deepspeed_zero3_buffers off (the model before session 57).
Measured (runs/<size>-<point>-<variant>.json, one configuration each): the largest of the three phases' peaks
(torch.cuda.max_memory_allocated over the forward, the backward and the optimizer step of the step after the warm-up)
less the bytes allocated when the configuration started (0 in a fresh process; recorded).
Rule (thresholds fixed before the run; one RULE line):
  MEM  over the 18 rows mean |ON / measured - 1| <= 5% AND every row within 10%: HOLDS, else FAILS. Every row must have
       run (else one error line naming the configuration).
Printed, judging nothing: per row ON, OFF, measured and both errors; per row the saved tensors of decoder layer 1 (bytes
a token, parameters left out) against the model's layer_activation_bytes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from hfmemh57_device import POINTS, SIZES, VARIANTS  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-hfmemh57-2026-12-02"
FRAMEWORK = {"fsdp1": "hf-fsdp1", "zero3": "hf-deepspeed"}
MEAN_PCT, MAX_PCT = 5.0, 10.0
RULE = {"MEM": f"over the 18 rows mean |ON / measured - 1| <= {MEAN_PCT}% and every row within {MAX_PCT}%: HOLDS, else FAILS"}
GiB = 2.0**30


def _model(size: str, point: str):
    from simcluster.llm.spec import BatchSpec, TransformerSpec

    layers, hidden, ffn, heads, kv_heads, vocab = SIZES[size]
    mb, seq = POINTS[point]
    return TransformerSpec(layers, hidden, ffn, heads, kv_heads, vocab, seq, tied_embeddings=False), BatchSpec(mb, mb)


def predict(size: str, point: str, variant: str) -> dict:
    """A row's registered figures (module docstring): GiB, and the model's saved bytes a token of one layer."""
    from simcluster.heldout.eager_registered import _flag_hosts
    from simcluster.heldout.registration import switched_off
    from simcluster.llm import hf_memory
    from simcluster.llm.comm import Network
    from simcluster.llm.framework import FRAMEWORKS
    from simcluster.llm.memory import layer_activation_bytes
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import ParallelSpec

    _, gpu = _flag_hosts()
    model, batch = _model(size, point)
    par = ParallelSpec(zero=3)
    on = FRAMEWORKS[FRAMEWORK[variant]]
    off = switched_off(on, hf_memory.SWITCHES)

    def allocated(fw) -> float:
        return float(predict_llm(model, par, batch, gpu, Network(None, 1), 1, trace=False, framework=fw).memory_per_gpu_GiB["allocated"])
    tokens = batch.micro_batch * model.seq
    return {"name": f"{size}-{point}-{variant}", "size": size, "point": point, "variant": variant, "framework": on.name,
            "layers": model.layers, "micro_batch": batch.micro_batch, "seq": model.seq,
            "on_gib": round(allocated(on), 4), "off_gib": round(allocated(off), 4),
            "layer_bytes_per_token": round(layer_activation_bytes(model, par, batch, on) / tokens, 2)}


def register(path: Path) -> None:
    import yaml

    from simcluster.heldout.eager_registered import FLAG_CARD

    doc = {"set": "hfmemh57", "issue": 44, "commit": registering_commit(ROOT), "card": FLAG_CARD, "rule": RULE,
           "thresholds": {"mean_pct": MEAN_PCT, "max_pct": MAX_PCT},
           "rows": [predict(s, p, v) for v in VARIANTS for s in SIZES for p in POINTS]}
    write_registration(path, "# registered before the run (validation/hfmemh57.py --register): the model's peak allocated GiB, "
                       "its memory terms on and off, the rule\n" + yaml.safe_dump(doc, sort_keys=False, width=140))


def measured(bundle: Path, reg: dict) -> dict:
    """A row's measurement from its process's trace; anything missing or not run: one SimclusterError line."""
    path = Path(bundle) / "runs" / f"{reg['name']}.json"
    try:
        doc = json.loads(path.read_text())
        recs = [r for r in doc["records"] if (r.get("size"), r.get("point"), r.get("variant")) == (reg["size"], reg["point"], reg["variant"])]
        env = doc["env"]
    except FileNotFoundError:
        raise SimclusterError(f"{path}: missing (the configuration's process did not run)") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SimclusterError(f"{path}: not an hfmem57 trace ({type(exc).__name__}: {exc})") from None
    if len(recs) != 1 or recs[0].get("status") != "ok":
        raise SimclusterError(f"{path}: expected one record with status 'ok' for {reg['name']}, got {[r.get('status') for r in recs]}")
    r = recs[0]
    try:
        peak = peak_less_start(r)
        same = (int(r["layers"]), int(r["micro_batch"]), int(r["seq"])) == (reg["layers"], reg["micro_batch"], reg["seq"])
        saved = r.get("saved", {}).get("entries", [])
        layer = layer_activation_saved(saved, int(r["micro_batch"]), int(r["seq"]))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise SimclusterError(f"{path}: expected phases' peak_bytes, start_bytes, layers, micro_batch, seq, saved entries "
                              f"({type(exc).__name__}: {exc})") from None
    if not same or env.get("device") == "cpu" or peak <= 0:
        raise SimclusterError(f"{path}: not the registered configuration on the GPU (shape, device or a non-positive peak)")
    return {**reg, "measured_gib": peak / GiB, "start_gib": float(r["start_bytes"]) / GiB,
            "saved_layer_per_token": layer / (r["micro_batch"] * r["seq"]) if saved else None}


def peak_less_start(rec: dict) -> float:
    """A configuration's own peak, bytes: the largest phase peak less what was allocated when it began."""
    return max(float(ph["peak_bytes"]) for ph in rec["phases"].values()) - float(rec["start_bytes"])


def layer_activation_saved(entries: list, micro_batch: int, seq: int) -> int:
    """Decoder layer 1's saved activations, bytes: entries [where, dtype, shape, bytes, is_parameter] whose shape is
    per token ((micro-batch, ..., seq, ...) or (micro-batch x seq, ...)), so no weight or flat-parameter view counts
    (mended after the read: a byte-count filter let FSDP1's 125.8 MB flat-parameter view in at s1.9b-mb8-fsdp1)."""
    def per_token(shape: list) -> bool:
        return bool(shape) and (shape[0] == micro_batch * seq or (shape[0] == micro_batch and seq in shape[1:]))
    return sum(int(e[3]) for e in entries if e[0].startswith("layer1") and not e[4] and per_token(list(e[2])))


def verdict(rows: list[dict]) -> str:
    errs = [r["on_gib"] / r["measured_gib"] - 1 for r in rows]
    mean, worst = 100 * sum(map(abs, errs)) / len(errs), 100 * max(map(abs, errs))
    off = 100 * sum(abs(r["off_gib"] / r["measured_gib"] - 1) for r in rows) / len(rows)
    ok = mean <= MEAN_PCT and worst <= MAX_PCT
    return (f"{'HOLDS' if ok else 'FAILS'} (ON mean |error| {mean:.1f}%, signed {100 * sum(errs) / len(errs):+.1f}%, max {worst:.1f}%; "
            f"OFF {off:.1f}%; rule mean <= {MEAN_PCT}% and max <= {MAX_PCT}%; {len(rows)} rows)")


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"set": "hfmemh57"})
    want = {(s, p, v) for v in VARIANTS for s in SIZES for p in POINTS}
    try:
        have = [(r["size"], r["point"], r["variant"]) for r in reg["rows"]]
    except (KeyError, TypeError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: a row without {exc}") from None
    if set(have) != want or len(have) != len(want):
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows {sorted(have)}, expected the {len(want)} of SIZES x POINTS x VARIANTS")
    rows = [measured(bundle, r) for r in reg["rows"]]
    return {"rows": rows, "verdicts": {"MEM": verdict(rows)}}


def show(res: dict) -> None:
    print("row                  framework      measured     ON  ON err    OFF OFF err  start | layer 1 saved B/token: measured  model")
    for r in res["rows"]:
        m = r["measured_gib"]
        saved = "-" if r["saved_layer_per_token"] is None else f"{r['saved_layer_per_token']:8.0f}"
        print(f"{r['name']:<20} {r['framework']:<12} {m:8.2f} {r['on_gib']:7.2f} {100 * (r['on_gib'] / m - 1):+6.1f}% {r['off_gib']:6.2f} "
              f"{100 * (r['off_gib'] / m - 1):+6.1f}% {r['start_gib']:5.2f} |                        {saved} {r['layer_bytes_per_token']:6.0f}")
    print(f"RULE MEM: {res['verdicts']['MEM']}")


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
