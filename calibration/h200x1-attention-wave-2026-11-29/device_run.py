"""Issue 44, session 38 (fa2wave): FlashAttention 2 (torch's flash SDPA backend) and torch's default (cuDNN on Hopper)
at shapes no bundle has measured, against today's 'fa2' price and the tile-and-wave form of studies/fa2_wave.py.
Causal SDPA, bf16, forward and forward + backward (backward = the difference), head sizes 64 / 128, 8-40 heads (some
shapes one partial wave of CTAs), batch 1-2, 4K-64K tokens, two GQA shapes; the two control shapes (measured before,
calibration/h200x1-attention-backends-2026-11-28) first and last, for the lease's drift. One process, one GPU.

    python calibration/h200x1-attention-wave-2026-11-29/device_run.py --predict   (here: writes registered.yaml)
    python calibration/h200x1-attention-wave-2026-11-29/device_run.py > wave.json (on one H200, ~2-3 min)
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HEADS_BATCH = ((8, 1), (12, 1), (20, 1), (40, 1), (12, 2), (20, 2))   # (query heads, batch): (20, 2) vs (40, 1) too
SEQS = (4096, 8192, 16384, 32768, 65536)
GQA = ((64, 1, 40, 8, 16384), (128, 1, 20, 4, 32768))               # (d, batch, heads, kv_heads, seq)
CONTROLS = ((64, 1, 16, 16, 16384), (128, 1, 32, 32, 16384))         # measured in the backends bundle
BACKENDS = ("flash", "default")
WARMUP, STEPS, MIN_SAMPLE_S = 3, 10, 2e-3
RULE = {  # declared before any run; studies/fa2_wave_read.py applies it from registered.yaml
    "adopt": "the form is adopted for the 'fa2' kernel (llm/attention_kernels.py) if, over the probe's flash passes "
             "(role probe: every shape's fwd and bwd; controls excluded), its mean |predicted / measured - 1| is <= "
             "max_ratio x today's and <= max_mean_abs; else nothing changes",
    "max_ratio": 0.5, "max_mean_abs": 0.05,
    "full_waves": "if the rule fails over all probe passes but holds over the shapes whose forward has >= "
                  "full_waves_min waves of CTAs (ctas_fwd >= full_waves_min x slots_fwd), the form may be adopted for "
                  "that range only (today's price below it); else nothing changes",
    "full_waves_min": 2,
    "void": "if a control's flash pass (start or end) is off its backends-bundle time by more than control_tolerance, "
            "the lease is not the one the form was fitted on: the verdict is void and the run is repeated once",
    "control_tolerance": 0.08,
}
HEADER = ("# Registered before any run (issue 44, session 38, fa2wave): written by `python calibration/"
          "h200x1-attention-wave-2026-11-29/device_run.py --predict`.\n# Times in seconds. today_*: the model's 'fa2' "
          "price (card / ratio); form_*: studies/fa2_wave.py's tile-and-wave form (the rule's); fluid_*: the same "
          "constants\n# with no waves or tail (diagnostic only); card_*: the card's cuDNN curve, for torch's default "
          "backend (diagnostic only).\n")


def probe_shapes() -> list[tuple[int, int, int, int, int]]:
    """(head_dim, batch, heads, kv_heads, seq) of the probe, in run order."""
    mha = [(d, b, h, h, s) for d in (64, 128) for s in SEQS for h, b in HEADS_BATCH]
    return mha + list(GQA)


def plan() -> list[tuple[str, tuple]]:
    """(role, shape) in run order: controls, probe, controls again."""
    return ([("control-start", c) for c in CONTROLS] + [("probe", s) for s in probe_shapes()]
            + [("control-end", c) for c in CONTROLS])


def _timed(torch, fn) -> tuple[list[float], int]:
    """Seconds a call: CUDA-event samples of `inner` back-to-back calls / inner, inner sized so a sample is >= 2 ms."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    inner = max(1, math.ceil(MIN_SAMPLE_S / max(start.elapsed_time(end) * 1e-3, 1e-6)))
    out = []
    for _ in range(STEPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e-3 / inner)
    return out, inner


def _one(torch, role: str, shape: tuple, backend: str) -> dict:
    """One shape on one backend: forward and (forward + backward) - forward, seconds; or the error that stopped it."""
    d, b, h, kv, s = shape
    rec = {"role": role, "head_dim": d, "batch": b, "heads": h, "kv_heads": kv, "seq": s, "backend": backend}
    return sdpa_record(torch, rec, d, b, h, kv, s, s, True, backend)


def sdpa_record(torch, rec: dict, d: int, b: int, h: int, kv: int, sq: int, skv: int, causal: bool, backend: str) -> dict:
    """`rec` with the SDPA call's forward and (forward + backward) - forward times, seconds, on `backend` ('flash' or
    torch's default); or the error that stopped it. (Session 38 fa2adopt moved this body out of _one, unchanged for
    this probe's causal seq_q = seq_kv calls, so the non-causal probe runs the same code.)"""
    import contextlib
    import functools

    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    pick = functools.partial(sdpa_kernel, SDPBackend.FLASH_ATTENTION) if backend == "flash" else contextlib.nullcontext
    try:
        q, k, v = (torch.randn(b, n, t, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for n, t in ((h, sq), (kv, skv), (kv, skv)))
        dout = torch.randn_like(q)
        attend = functools.partial(F.scaled_dot_product_attention, q, k, v, is_causal=causal, enable_gqa=kv != h)

        def forward_only():
            with torch.no_grad(), pick():
                return attend()

        def forward_backward():
            with pick():
                out = attend()
            return torch.autograd.grad(out, (q, k, v), dout)

        f, rec["inner_fwd"] = _timed(torch, forward_only)
        fb, rec["inner_fwd_bwd"] = _timed(torch, forward_backward)
        rec.update(fwd_s=statistics.median(f), bwd_s=statistics.median(fb) - statistics.median(f),
                   fwd_samples_s=f, fwd_bwd_samples_s=fb)
    except Exception as exc:  # noqa: BLE001 - a shape a backend cannot run is recorded; the next one runs
        rec["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    torch.cuda.empty_cache()
    return rec


def measure() -> dict:
    import time

    import torch

    t0 = time.time()
    recs = []
    for role, shape in plan():
        for be in BACKENDS:
            recs.append(_one(torch, role, shape, be))   # a progress line each (a run cut short keeps them in stderr)
            print(json.dumps({k: v for k, v in recs[-1].items() if not k.endswith("samples_s")}), file=sys.stderr, flush=True)
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "device": torch.cuda.get_device_name(0), "warmup": WARMUP, "steps": STEPS, "wall_s": round(time.time() - t0, 1),
            "records": recs}


def predict() -> dict:
    """The registration: the form's constants (fitted on the development records) and every shape's predictions."""
    sys.path.insert(0, str(ROOT / "studies"))
    import fa2_wave as fw

    consts = fw.fit(fw.dev_records())
    sms, hbm = fw.card()
    out = []
    for role, (d, b, h, kv, s) in plan():
        if role == "control-end":
            continue
        row = {"role": "control" if role.startswith("control") else role, "head_dim": d, "batch": b, "heads": h,
               "kv_heads": kv, "seq": s, "ctas_fwd": len(fw.cta_tiles("fwd", d, b, h, s)),
               "slots_fwd": sms * fw.TILES[("fwd", d)][2]}
        if row["role"] == "control":   # its flash times in the backends bundle (the lease the form was fitted on)
            before = next(r for r in fw.dev_records() if r["src"] == "backends" and
                          (r["head_dim"], r["batch"], r["heads"], r["seq"]) == (d, b, h, s))
            row.update(before_fwd_s=before["fwd_s"], before_bwd_s=before["bwd_s"])
        for p in fw.PASSES:
            row[f"today_{p}_s"] = fw.today_s(p, b, h, kv, s, d)
            row[f"form_{p}_s"] = fw.form_time_s(consts, p, b, h, kv, s, d, sms, hbm)
            row[f"fluid_{p}_s"] = fw.fluid_time_s(consts, p, b, h, kv, s, d, sms, hbm)
            row[f"card_{p}_s"] = fw.card_s(p, b, h, kv, s, d)
        out.append({k: (float(f"{v:.6g}") if isinstance(v, float) else v) for k, v in row.items()})
    return {"rule": RULE, "consts": {f"{p}_{d}": {"u_s": float(f"{u:.6g}"), "a_s": float(f"{a:.6g}")} for (p, d), (u, a) in consts.items()},
            "fit_records": [f"{r['src']} d {r['head_dim']} b {r['batch']} h {r['heads']}/{r['kv_heads']} s {r['seq']}"
                            for r in fw.dev_records()],
            "shapes": out}


def cli(here: Path, header: str, predict, measure) -> None:
    """--predict: write here/registered.yaml (header + predict()); else print measure()'s document (the non-causal
    probe's device_run.py runs this too)."""
    if "--predict" in sys.argv:
        import yaml

        (here / "registered.yaml").write_text(header + yaml.safe_dump(predict(), sort_keys=False, width=120))
        print(f"wrote {here / 'registered.yaml'}")
    else:
        print(json.dumps(measure(), indent=1))


if __name__ == "__main__":
    cli(HERE, HEADER, predict, measure)
