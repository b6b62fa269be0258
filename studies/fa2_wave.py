"""A tile-and-wave form of FlashAttention 2's time on a Hopper GPU (issue 44, session 38): its fit and residuals.

Since the registered check (calibration/h200x1-attention-wave-2026-11-29, ADOPT) the form is the model's 'fa2' kernel
(simcluster/llm/flash_schedule.py, imported here: one implementation); this study keeps the fit of its constants and
the comparison with the ratio price it replaced ('today' below). Before it, the model (simcluster/llm/
attention_kernels.py) priced torch's flash SDPA backend as the card's cuDNN curve over one median ratio per head size
and pass; the session-37 GQA probe found it off by shape (d 64 / 32 heads 7-13% under it at 16-32K, d 128 / 24
heads +15..+24% over at 8K: calibration/h200x1-attention-gqa-2026-11-29). This form prices the flash kernels from how
they run instead:

  grid       forward: one CTA per (query block of BLOCK_M rows, batch, head), launched query block fastest, then batch,
             then head; backward (the dQ/dK/dV kernel): one CTA per (key block of BLOCK_N rows, batch, head), same order
  work       causal: forward CTA i (query block i) computes the score tiles of key blocks 0 .. ceil((i+1) BLOCK_M /
             BLOCK_N) - 1; backward CTA j (key block j) the query blocks floor(j BLOCK_N / BLOCK_M) .. n_m - 1
  CTA time   a + u * tiles                 a: its fixed part (load Q or K/V, the masked diagonal, write the output)
  kernel     greedy list schedule of the CTAs, in launch order, on SMs x CTAs-per-SM slots (the block scheduler hands
             the next CTA to the first slot that frees): the makespan, so a last partial wave and the causal tail (the
             heaviest forward CTAs are launched last) cost what they cost
  backward   + its other kernels, memory-bound at the card's copy rate: dot(dO, O) with the fp32 dQ accumulator
             cleared, the accumulator converted to bf16 (14 bytes a q element), and with grouped K/V torch's sum of
             the per-query-head dK / dV (4 h + 4 g bytes a key row and head size)

Facts, not fitted (torch 2.11's vendored flash-attn 2.x: flash_fwd_launch_template.h, flash_bwd_launch_template.h,
flash_api.cpp, read through the stored pytorch/pytorch source): forward d 64 BLOCK 128 x 128, d 128 128 x 64 on sm90
(not sm8x), 4 warps; backward d 64 128 x 128, d 128 64 x 128, 8 warps (the >= 144 KB shared-memory branch); a forward
with b h ceil(s / 64) < 0.8 x 2 x SMs CTAs takes the split-KV kernel instead (out of this form's range). CTAs per SM:
2 forward (128 threads near 255 registers each: two fill the 64K register file), 1 backward (256 threads) - an
assumption from the register file, not a measured occupancy.
Fitted (u, a per head size and pass; development): every flash record of calibration/h200x1-attention-backends-2026-11-28
(16 heads d 64, 32 heads d 128, MHA) and calibration/h200x1-attention-gqa-2026-11-29 (32 / 8, 32 / 32 d 64; 24 / 8,
24 / 24 d 128) at >= 2K tokens, least squares on log time. Valid: causal, bf16, seq_q = seq_kv, head size 64 / 128.
    python studies/fa2_wave.py          (the fit, its residuals and today's model's on the same records)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CAL = ROOT / "calibration"
BACKENDS = CAL / "h200x1-attention-backends-2026-11-28"
GQA = CAL / "h200x1-attention-gqa-2026-11-29" / "gqa.json"
CARD = ROOT / "models" / "gpu" / "h200-sxm-interleaved.yaml"
MIN_SEQ = 2048
# the form itself is the model's since the registered check adopted it (one implementation, llm/flash_schedule.py);
# its names stay reachable here for device_run.py and the tests
from simcluster.llm import flash_schedule as fs  # noqa: E402

PASSES, TILES, FormError, cta_tiles, makespan = fs.PASSES, fs.TILES, fs.FormError, fs.cta_tiles, fs.makespan
form_time_s, fluid_time_s = fs.form_time_s, fs.fluid_time_s


def dev_records() -> list[dict]:
    """The flash records the form is fitted on: {src, head_dim, batch, heads, kv_heads, seq, fwd_s, bwd_s}."""
    from simcluster.llm.attention_kernels import backend_rows

    times = {(r["mode"], r["head_dim"], r["batch"], r["heads"], r["seq_q"]): r["time_s"]
             for r in backend_rows(BACKENDS) if r.get("backend") == "flash" and r.get("time_s") and not r.get("error")}
    out = [{"src": "backends", "head_dim": d, "batch": b, "heads": h, "kv_heads": h, "seq": s, "fwd_s": t,
            "bwd_s": times[("fwd_bwd", d, b, h, s)] - t}
           for (m, d, b, h, s), t in sorted(times.items()) if m == "fwd" and ("fwd_bwd", d, b, h, s) in times]
    out += [{"src": "gqa", **{k: r[k] for k in ("head_dim", "heads", "kv_heads", "seq", "fwd_s", "bwd_s")}, "batch": 1}
            for r in json.loads(GQA.read_text())["records"] if r.get("backend") == "flash" and "fwd_s" in r]
    return [r for r in out if r["seq"] >= MIN_SEQ]


def card() -> tuple[int, float]:
    """The H200 card's SM count and copy rate (bytes/s)."""
    from simcluster.hardware.gpu import load_gpu

    gpu = load_gpu(CARD)[0]
    return gpu.sm_count, gpu.hbm_bandwidth_Bps


def fit(records: list[dict]) -> dict:
    """{(pass, d): (u_s, a_s)}: least squares on log time over the records of that head size and pass."""
    import numpy as np
    from scipy.optimize import least_squares

    sms, hbm = card()
    consts = {}
    for pass_, d in sorted(TILES):
        sub = [r for r in records if r["head_dim"] == d]
        y = np.log([r[f"{pass_}_s"] for r in sub])

        def resid(x, pass_=pass_, d=d, sub=sub, y=y):
            c = {(pass_, d): (x[0] * 1e-6, x[1] * 1e-6)}
            return np.log([form_time_s(c, pass_, r["batch"], r["heads"], r["kv_heads"], r["seq"], d, sms, hbm)
                           for r in sub]) - y
        x = least_squares(resid, [3.0, 10.0], bounds=([1e-3, 0.0], [100.0, 1000.0])).x
        consts[(pass_, d)] = (float(x[0]) * 1e-6, float(x[1]) * 1e-6)
    return consts


def today_s(pass_: str, batch: int, heads: int, kv_heads: int, seq: int, head_dim: int) -> float:
    """The 'fa2' price before the form was adopted (registered as 'today'): the H200 card / the measured ratio
    (attention_kernels.ratio_card), seconds."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm import attention_kernels, ops

    gpu = _fa2_card(load_gpu, attention_kernels)
    op = ops.attention("a", batch, heads, kv_heads, seq, seq, head_dim, True, pass_ == "bwd")
    return ops.op_time_s(gpu, op, "bf16")


def card_s(pass_: str, batch: int, heads: int, kv_heads: int, seq: int, head_dim: int) -> float:
    """The card's own (cuDNN, torch's default backend) time of the pass, seconds."""
    from simcluster.hardware.gpu import load_gpu

    return load_gpu(CARD)[0].attention_time_s(batch, heads, kv_heads, seq, seq, head_dim, True, pass_ == "bwd")


_CACHE: dict = {}


def _fa2_card(load_gpu, attention_kernels):
    if "fa2" not in _CACHE:
        _CACHE["fa2"] = attention_kernels.ratio_card(load_gpu(CARD)[0])
    return _CACHE["fa2"]


def main() -> int:
    recs = dev_records()
    consts = fit(recs)
    sms, hbm = card()
    print("fitted (development; every flash record >= 2K of the backends and GQA bundles):")
    for (p, d), (u, a) in sorted(consts.items()):
        print(f"  {p} d {d:3d}: u {u * 1e6:.3f} us a tile, a {a * 1e6:.3f} us a CTA")
    print(f"\n{'src':8} {'d':>4} {'b':>2} {'h/kv':>6} {'seq':>6} | {'fwd ms':>8} {'form':>6} {'today':>6} | "
          f"{'bwd ms':>8} {'form':>6} {'today':>6}   (error = model / measured - 1)")
    errs: dict = {"form": [], "today": []}
    for r in recs:
        shape = (r["batch"], r["heads"], r["kv_heads"], r["seq"], r["head_dim"])
        cells = []
        for p in PASSES:
            f = form_time_s(consts, p, *shape, sms, hbm) / r[f"{p}_s"] - 1
            t = today_s(p, *shape) / r[f"{p}_s"] - 1
            errs["form"].append(abs(f))
            errs["today"].append(abs(t))
            cells.append(f"{r[f'{p}_s'] * 1e3:8.3f} {f:+6.1%} {t:+6.1%}")
        print(f"{r['src']:8} {r['head_dim']:4d} {r['batch']:2d} {r['heads']:>3}/{r['kv_heads']:<2} {r['seq']:6d} | "
              + " | ".join(cells))
    print(f"\nmean |error| over these {len(errs['form'])} passes: form {sum(errs['form']) / len(errs['form']):.1%}, "
          f"today {sum(errs['today']) / len(errs['today']):.1%} (the form's is in-sample)")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
