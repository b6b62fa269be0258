"""Issue 44, session 38 (fa2adopt): FlashAttention 2 (torch's flash SDPA backend) on NON-causal calls, which the adopted
schedule form (simcluster/llm/flash_schedule.py) prices with the causal fit's constants and full tiles (fa2-full's
llm-foundry MPT calls at 2K tokens; torch's cp ring steps, including half-q / half-kv ones): never measured before.
bf16, forward and forward + backward (backward = the difference), head sizes 64 / 128; torch's default backend beside
it (diagnostic); the two causal control shapes of the wave probe first and last. One process, one GPU.

    python calibration/h200x1-attention-noncausal-2026-11-29/device_run.py --predict   (here: writes registered.yaml)
    python calibration/h200x1-attention-noncausal-2026-11-29/device_run.py > noncausal.json   (one H200, ~1-2 min)
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WAVE = HERE.parent / "h200x1-attention-wave-2026-11-29" / "device_run.py"
# (head_dim, batch, heads, kv_heads, seq_q, seq_kv), all non-causal
MPT_2K = ((128, 8, 32, 32, 2048, 2048), (128, 4, 40, 40, 2048, 2048), (128, 2, 64, 64, 2048, 2048),
          (128, 16, 16, 16, 2048, 2048), (64, 8, 32, 32, 2048, 2048), (64, 16, 12, 12, 2048, 2048))
LONG = ((128, 2, 32, 32, 8192, 8192), (128, 1, 32, 32, 32768, 32768), (64, 1, 16, 16, 16384, 16384),
        (128, 1, 32, 8, 16384, 16384))
CP_RING = ((128, 1, 16, 16, 16384, 8192), (128, 1, 16, 16, 8192, 16384), (128, 1, 24, 24, 16384, 16384),
           (128, 1, 24, 8, 32768, 16384), (128, 1, 24, 8, 16384, 32768), (64, 1, 32, 32, 16384, 8192),
           (64, 1, 32, 32, 8192, 16384))
CONTROLS = ((64, 1, 16, 16, 16384, 16384), (128, 1, 32, 32, 16384, 16384))   # causal: the wave probe's controls
BACKENDS = ("flash", "default")
RULE = {  # declared before any run; studies/fa2_noncausal_read.py applies it from registered.yaml
    "keep": "over the probe's non-causal flash passes (every shape's fwd and bwd; controls excluded) the error is "
            "predicted / measured - 1; if the form's mean |error| <= the ratio card's, non-causal flash calls stay on "
            "the form (llm/attention_kernels.py as committed); else they go back to the ratio card (the form refuses "
            "non-causal calls); the groups (mpt_2k, long, cp_ring) are reported, not judged",
    "void": "if a control's flash pass (start or end) is off the wave probe's measured time (the mean of its start "
            "and end runs, which were up to 10% apart) by more than control_tolerance, the lease differs from the one the form was checked on: the run is repeated once",
    "control_tolerance": 0.08,
}
HEADER = ("# Registered before any run (issue 44, session 38, fa2adopt): written by `python calibration/"
          "h200x1-attention-noncausal-2026-11-29/device_run.py --predict`.\n# Times in seconds. form_*: the model's 'fa2' "
          "time on the H200 card (llm/flash_schedule.py, non-causal: full tiles); ratio_*: the ratio card (the 'fa2'\n"
          "# price before session 38, non-causal); card_*: the card's cuDNN curve, for torch's default backend "
          "(diagnostic only).\n")


def _wave():
    spec = importlib.util.spec_from_file_location("wave_device_run", WAVE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def plan() -> list[tuple[str, str, tuple, bool]]:
    """(role, group, shape, causal) in run order: controls, probe, controls again."""
    probe = [("probe", g, s, False) for g, shapes in (("mpt_2k", MPT_2K), ("long", LONG), ("cp_ring", CP_RING))
             for s in shapes]
    return ([("control-start", "control", c, True) for c in CONTROLS] + probe
            + [("control-end", "control", c, True) for c in CONTROLS])


def _one(torch, role: str, group: str, shape: tuple, causal: bool, backend: str) -> dict:
    """One shape on one backend: forward and (forward + backward) - forward, seconds; or the error that stopped it."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    d, b, h, kv, sq, skv = shape
    rec = {"role": role, "group": group, "head_dim": d, "batch": b, "heads": h, "kv_heads": kv, "seq_q": sq,
           "seq_kv": skv, "causal": causal, "backend": backend}
    pick = functools.partial(sdpa_kernel, SDPBackend.FLASH_ATTENTION) if backend == "flash" else contextlib.nullcontext
    timed = _wave()._timed
    try:
        q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k, v = (torch.randn(b, kv, skv, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
        dout = torch.randn_like(q)
        attend = functools.partial(F.scaled_dot_product_attention, q, k, v, is_causal=causal, enable_gqa=kv != h)

        def forward_only():
            with torch.no_grad(), pick():
                return attend()

        def forward_backward():
            with pick():
                out = attend()
            return torch.autograd.grad(out, (q, k, v), dout)

        f, rec["inner_fwd"] = timed(torch, forward_only)
        fb, rec["inner_fwd_bwd"] = timed(torch, forward_backward)
        rec.update(fwd_s=statistics.median(f), bwd_s=statistics.median(fb) - statistics.median(f),
                   fwd_samples_s=f, fwd_bwd_samples_s=fb)
    except Exception as exc:  # noqa: BLE001 - a shape a backend cannot run is recorded; the next one runs
        rec["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    torch.cuda.empty_cache()
    return rec


def measure() -> dict:
    import time

    import torch

    t0, recs = time.time(), []
    for role, group, shape, causal in plan():
        for be in BACKENDS:
            recs.append(_one(torch, role, group, shape, causal, be))
            print(json.dumps({k: v for k, v in recs[-1].items() if not k.endswith("samples_s")}), file=sys.stderr, flush=True)
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "device": torch.cuda.get_device_name(0), "wall_s": round(time.time() - t0, 1), "records": recs}


def predict() -> dict:
    """The registration: every shape's predictions from the model as committed (and the ratio card it replaced)."""
    import yaml

    sys.path.insert(0, str(ROOT))
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm import attention_kernels as ak

    card = load_gpu(ak.FORM_REFERENCE)[0]
    form, ratio = ak.for_kernel(card, "fa2"), ak.ratio_card(card)
    wave = yaml.safe_load((WAVE.parent / "wave.json").read_text())["records"]
    out = []
    for role, group, (d, b, h, kv, sq, skv), causal in plan():
        if role == "control-end":
            continue
        row = {"role": "control" if role.startswith("control") else role, "group": group, "head_dim": d, "batch": b,
               "heads": h, "kv_heads": kv, "seq_q": sq, "seq_kv": skv, "causal": causal}
        if row["role"] == "control":   # its flash times in the wave probe's run: the mean of its start and end
            before = [r for r in wave if r["role"].startswith("control") and r["backend"] == "flash" and
                      (r["head_dim"], r["batch"], r["heads"], r["kv_heads"], r["seq"]) == (d, b, h, kv, sq)]
            row.update({f"before_{p}_s": statistics.mean(r[f"{p}_s"] for r in before) for p in ("fwd", "bwd")})
        for p in ("fwd", "bwd"):
            for name, c in (("form", form), ("ratio", ratio), ("card", card)):
                row[f"{name}_{p}_s"] = c.attention_time_s(b, h, kv, sq, skv, d, causal, p == "bwd")
        out.append({k: (float(f"{v:.6g}") if isinstance(v, float) else v) for k, v in row.items()})
    return {"rule": RULE, "shapes": out}


if __name__ == "__main__":
    if "--predict" in sys.argv:
        import yaml

        (HERE / "registered.yaml").write_text(HEADER + yaml.safe_dump(predict(), sort_keys=False, width=120))
        print(f"wrote {HERE / 'registered.yaml'}")
    else:
        print(json.dumps(measure(), indent=1))
