"""A schedule form of the card's (cuDNN) fused attention time on one H200 (issue 44, session 39): the candidates, their
fit on the development records and the chosen one against the card's smooth curve (in-sample).

The GPU card prices torch's default SDPA backend (cuDNN's fused flash attention on Hopper, torch 2.11 / cuDNN 9.19;
Transformer Engine's fused attention under Megatron / NeMo) as a smooth curve in tokens. The wave probe
(calibration/h200x1-attention-wave-2026-11-29) timed the default backend beside flash at 62 shapes: against that curve it
misses in the flash form's wave pattern (-38% at one partial wave). This study prices cuDNN the way
llm/flash_schedule.py prices flash, with that module's schedule (its Grid parameters, no second scheduler):

  units      forward: one per (query block of BLOCK_M rows, batch, head); backward: one per (key block of BLOCK_N
             rows, batch, head); causal tiles per unit as flash's (forward query block i: key blocks 0 ..
             ceil((i+1) BLOCK_M / BLOCK_N) - 1; backward key block j: query blocks floor(j BLOCK_N / BLOCK_M) ..)
  unit time  a + u * tiles
  kernel     greedy list schedule on 132 SMs x units per SM, in launch order ('launch': block fastest, then batch,
             then head; a grid of one CTA a unit, or a persistent grid taking units from an in-order counter) or
             heaviest first ('lpt': a persistent grid with a longest-processing-time tile scheduler)
  backward   + memory-bound kernels at the card's copy rate, 14 bytes a q element (dot(dO, O), the fp32 dQ
             accumulator cleared and converted: the FlashAttention-2 algorithm's, which cuDNN's SDPA documents
             using); grouped K/V reduced in the kernel (no torch-side sum: the GQA bundle's default backend runs
             32 / 8 heads within 0-4% of 32 / 32)

Sourced facts (no code read: cuDNN is closed): cuDNN's SDPA "uses the FlashAttention-2 algorithm" and supports bf16,
causal masks, GQA and head sizes to 256 on Hopper, forward and backward (docs.nvidia.com/deeplearning/cudnn/frontend/
latest/operations/Attention.html, read 2026-11-29). Not published: the Hopper kernel's tile sizes, units per SM and
whether its grid is persistent (a third-party ncu read of cuDNN's H100 forward reports 64 x 128 units at 2 CTAs an SM
and suggests a persistent grid with an atomic tile counter: gabrieldemarmiesse/torch-mojo-backend PR 391, not
authoritative). So those are CHOSEN here: each (pass, head size) takes the candidate (BLOCK_M, BLOCK_N, units per
SM, order) whose fitted (u, a) has the least rms log error on the development records below. The choice is
development, as are the constants.

Development records (torch's default backend, one H200, every pass >= 2K tokens): calibration/
h200x1-attention-backends-2026-11-28 (MHA 16 heads d 64, 32 heads d 128), h200x1-attention-gqa-2026-11-29 (12),
h200x1-attention-wave-2026-11-29 (its 62 probe shapes: they were held out for flash, not for this), and
h200x1-attention-noncausal-2026-11-29 (17 non-causal shapes). Other leases, printed, not fitted: calibration/
h200x1-attention-clocks-2026-11-27 and h200x4-cp-attention-2026-11-27's single-GPU runs (the default backend, d 128
batch 1, 16 / 16 and 32 / 8 heads; seen before the choice, so not a held-out check either).
    python studies/cudnn_wave.py              (the fit, every candidate's rms, the chosen form vs the card: in-sample)
    python studies/cudnn_wave.py --quick      (the chosen candidates only)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CAL = ROOT / "calibration"
CARD = ROOT / "models" / "gpu" / "h200-sxm-interleaved.yaml"
MIN_SEQ = 2048
PASSES = ("fwd", "bwd")
HEAD_DIMS = (64, 128)
from simcluster.llm import flash_schedule as fs  # noqa: E402

BLOCKS = ((128, 128), (128, 64), (64, 128))   # forward 128 x 128 and 128 x 64 fit alike to rounding (they only rescale u)
CANDIDATES = [(bm, bn, per_sm, order) for bm, bn in BLOCKS for per_sm in (1, 2) for order in fs.ORDERS]
RATIOS = [2.0 ** (k / 2) for k in range(-8, 11)]   # a / u searched (0.06 .. 32 tiles), then refined


def _rec(src, d, b, h, kv, sq, skv, causal, f, bw) -> dict:
    return {"src": src, "head_dim": int(d), "batch": int(b), "heads": int(h), "kv_heads": int(kv), "seq_q": int(sq),
            "seq_kv": int(skv), "causal": bool(causal), "fwd_s": float(f), "bwd_s": float(bw)}


def dev_records(cal: Path = CAL) -> list[dict]:
    """Every default-backend record of the four development bundles at >= MIN_SEQ tokens (missing files skipped)."""
    out = []
    path = cal / "h200x1-attention-backends-2026-11-28"
    if path.exists():
        from simcluster.llm.attention_kernels import backend_rows

        t = {(r["mode"], r["head_dim"], r["batch"], r["heads"], r["seq_q"]): r["time_s"]
             for r in backend_rows(path) if r.get("backend") == "default" and r.get("time_s") and not r.get("error")}
        out += [_rec("backends", d, b, h, h, s, s, True, v, t[("fwd_bwd", d, b, h, s)] - v)
                for (m, d, b, h, s), v in sorted(t.items()) if m == "fwd" and ("fwd_bwd", d, b, h, s) in t]
    for name, src in (("h200x1-attention-gqa-2026-11-29/gqa.json", "gqa"),
                      ("h200x1-attention-wave-2026-11-29/wave.json", "wave"),
                      ("h200x1-attention-noncausal-2026-11-29/noncausal.json", "noncausal")):
        if not (cal / name).exists():
            continue
        for r in json.loads((cal / name).read_text())["records"]:
            if r.get("backend") != "default" or "error" in r or r.get("role", "probe") != "probe":
                continue
            sq, skv = r.get("seq_q", r.get("seq")), r.get("seq_kv", r.get("seq"))
            out.append(_rec(src, r["head_dim"], r.get("batch", 1), r["heads"], r["kv_heads"], sq, skv,
                            r.get("causal", True), r["fwd_s"], r["bwd_s"]))
    return [r for r in out if min(r["seq_q"], r["seq_kv"]) >= MIN_SEQ]


def other_lease_records(cal: Path = CAL) -> list[dict]:
    """The default backend's single-GPU times of the clocks and cp-attention bundles (d 128, batch 1)."""
    out = []
    for path in sorted(cal.glob("h200x1-attention-clocks-2026-11-27/*.json")) + sorted(
            cal.glob("h200x4-cp-attention-2026-11-27/*.json")):
        doc = json.loads(path.read_text())
        att = doc["attention"]
        for r in doc["records"]:
            f, fb = r["single_forward_s"], r["single_forward_backward_s"]
            out.append(_rec(path.parent.name.split("-attention")[0] + ":" + path.stem.split("-h200-")[-1],
                            att["head_dim"], att["batch"], att["heads"], att["kv_heads"], r["seq"], r["seq"],
                            att["causal"], f, fb - f))
    return out


def card():
    from simcluster.hardware.gpu import load_gpu

    return load_gpu(CARD)[0]


def grid_of(choice: dict, name: str = "cudnn") -> fs.Grid:
    """The Grid of a choice {(pass, d): (bm, bn, per_sm, order)} (one order for all: the fit chose one)."""
    orders = {c[3] for c in choice.values()}
    if len(orders) != 1:
        raise ValueError(f"choice mixes orders {sorted(orders)}: one Grid has one order")
    return fs.Grid(name, {k: c[:3] for k, c in choice.items()}, order=orders.pop(), gqa_sum=False, split_kv=False)


def form_s(grid: fs.Grid, consts: dict, pass_: str, r: dict, sms: int, hbm: float) -> float:
    return fs.form_time_s(consts, pass_, r["batch"], r["heads"], r["kv_heads"], r["seq_q"], r["head_dim"], sms, hbm,
                          r["seq_kv"], r["causal"], grid)


def _fit_one(pass_: str, d: int, cand: tuple, recs: list[dict], sms: int, hbm: float) -> tuple[float, float, float]:
    """(rms log error, u, a) of one candidate: the makespan is u x M(a / u) (a greedy schedule scales), so for each
    ratio the scale u solves a 1-D least squares on log time (Newton steps); the ratio is searched on a grid then
    refined by golden section."""
    grid = fs.Grid("c", {(pass_, d): cand[:3]}, order=cand[3], gqa_sum=False, split_kv=False)
    ys = [math.log(r[f"{pass_}_s"]) for r in recs]
    sides = [fs.side_bytes(pass_, r["batch"], r["heads"], r["kv_heads"], r["seq_q"], d, r["seq_kv"], grid) / hbm
             for r in recs]

    def at(ratio: float) -> tuple[float, float]:
        m = [fs.kernel_s(pass_, r["batch"], r["heads"], r["seq_q"], r["seq_kv"], d, r["causal"], sms,
                         {(pass_, d): (1.0, ratio)}, grid) for r in recs]
        lu = sum(y - math.log(mi) for y, mi in zip(ys, m, strict=True)) / len(ys)
        for _ in range(6):   # Newton on g(lu) = sum(log(e^lu m + s) - y) = 0
            v = [math.exp(lu) * mi for mi in m]
            g = sum(math.log(vi + si) - y for vi, si, y in zip(v, sides, ys, strict=True))
            dg = sum(vi / (vi + si) for vi, si in zip(v, sides, strict=True))
            lu -= g / dg
        u = math.exp(lu)
        res = [math.log(u * mi + si) - y for mi, si, y in zip(m, sides, ys, strict=True)]
        return math.sqrt(sum(e * e for e in res) / len(res)), u

    scores = [(at(q)[0], q) for q in RATIOS]
    k = min(range(len(scores)), key=lambda i: scores[i][0])
    lo, hi = RATIOS[max(k - 1, 0)], RATIOS[min(k + 1, len(RATIOS) - 1)]
    phi = (math.sqrt(5) - 1) / 2
    for _ in range(10):
        m1, m2 = hi - phi * (hi - lo), lo + phi * (hi - lo)
        if at(m1)[0] < at(m2)[0]:
            hi = m2
        else:
            lo = m1
    q = (lo + hi) / 2
    rms, u = at(q)
    return rms, u, u * q


def fit(recs: list[dict], candidates=None, sms: int | None = None, hbm: float | None = None) -> dict:
    """{(pass, d): [(rms, candidate, u_s, a_s), ...] best first} over the candidates (default CANDIDATES)."""
    gpu = card()
    sms, hbm = sms or gpu.sm_count, hbm or gpu.hbm_bandwidth_Bps
    out = {}
    for pass_ in PASSES:
        for d in HEAD_DIMS:
            sub = [r for r in recs if r["head_dim"] == d]
            cands = candidates[(pass_, d)] if isinstance(candidates, dict) else (candidates or CANDIDATES)
            rows = [(rms, c, u, a) for c in cands for rms, u, a in [_fit_one(pass_, d, c, sub, sms, hbm)]]
            out[(pass_, d)] = sorted(rows, key=lambda x: x[0])
    return out


def choose(fits: dict) -> tuple[dict, dict]:
    """(choice {(pass, d): candidate}, consts {(pass, d): (u_s, a_s)}): the best candidate per pass and head size
    among those of the order that wins most (pass, head size) cells (one Grid, one order)."""
    from collections import Counter

    order = Counter(rows[0][1][3] for rows in fits.values()).most_common(1)[0][0]
    best = {k: next(x for x in rows if x[1][3] == order) for k, rows in fits.items()}
    return {k: b[1] for k, b in best.items()}, {k: (b[2], b[3]) for k, b in best.items()}


def card_s(gpu, pass_: str, r: dict) -> float:
    return gpu.attention_time_s(r["batch"], r["heads"], r["kv_heads"], r["seq_q"], r["seq_kv"], r["head_dim"],
                                r["causal"], pass_ == "bwd")


def label(r: dict) -> str:
    s = f"{r['seq_q']}" if r["seq_q"] == r["seq_kv"] else f"{r['seq_q']}/{r['seq_kv']}"
    return f"d {r['head_dim']} b {r['batch']} h {r['heads']}/{r['kv_heads']} s {s}{'' if r['causal'] else ' nc'}"


def report(grid: fs.Grid, consts: dict, recs: list[dict], title: str) -> dict:
    """Print each record's passes against the form and the card; return {group: (form mean |e|, card mean |e|, n)}."""
    gpu = card()
    print(f"\n{title}\n{'src':16} {'shape':30} | {'fwd ms':>8} {'form':>7} {'card':>7} | {'bwd ms':>8} {'form':>7} {'card':>7}")
    errs = []
    for r in recs:
        cells = []
        for p in PASSES:
            f = form_s(grid, consts, p, r, gpu.sm_count, gpu.hbm_bandwidth_Bps) / r[f"{p}_s"] - 1
            c = card_s(gpu, p, r) / r[f"{p}_s"] - 1
            errs.append((r, p, f, c))
            cells.append(f"{r[f'{p}_s'] * 1e3:8.3f} {f:+7.1%} {c:+7.1%}")
        print(f"{r['src']:16} {label(r):30} | " + " | ".join(cells))
    groups = {"all": errs, "fwd": [e for e in errs if e[1] == "fwd"], "bwd": [e for e in errs if e[1] == "bwd"],
              "d 64": [e for e in errs if e[0]["head_dim"] == 64], "d 128": [e for e in errs if e[0]["head_dim"] == 128],
              "non-causal": [e for e in errs if not e[0]["causal"]], "gqa": [e for e in errs if e[0]["heads"] != e[0]["kv_heads"]]}
    out = {}
    for name, sub in groups.items():
        if sub:
            out[name] = (sum(abs(e[2]) for e in sub) / len(sub), sum(abs(e[3]) for e in sub) / len(sub), len(sub))
            print(f"  mean |error| {name:11} form {out[name][0]:6.1%}  card {out[name][1]:6.1%}  ({len(sub)} passes)")
    return out


FITTED: dict = {}


def fitted() -> tuple[fs.Grid, dict]:
    """The chosen grid and constants on the development records (computed once a process)."""
    if not FITTED:
        choice, consts = choose(fit(dev_records()))
        FITTED.update(grid=grid_of(choice), consts=consts)
    return FITTED["grid"], FITTED["consts"]


def main(argv: list[str]) -> int:
    recs = dev_records()
    print(f"development records: {len(recs)} shapes (x fwd, bwd) of torch's default backend")
    fits = fit(recs)
    if "--quick" not in argv:
        for k, rows in fits.items():
            print(f"\n{k[0]} d {k[1]}: candidates (BLOCK_M, BLOCK_N, units/SM, order), rms log error, u us, a us")
            for rms, c, u, a in rows:
                print(f"  {str(c):28} {rms:6.2%}  u {u * 1e6:7.3f}  a {a * 1e6:8.3f}")
    choice, consts = choose(fits)
    grid = grid_of(choice)
    print("\nchosen (development):")
    for k in sorted(choice):
        print(f"  {k[0]} d {k[1]}: {choice[k]}  u {consts[k][0] * 1e6:.4f} us a tile, a {consts[k][1] * 1e6:.4f} us a unit")
    report(grid, consts, recs, "development records (IN-SAMPLE: the form was chosen and fitted on them)")
    report(grid, consts, other_lease_records(), "other leases (not fitted; seen before the choice, not held out)")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--quick",))
    sys.exit(main(sys.argv[1:]))
