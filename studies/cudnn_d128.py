"""Why the adopted cuDNN form reads head size 128's backward +6..+11% slow on the cudnnstep set's SDPA calls (issue 44,
session 40, cudnnd128): the candidates, each quantified per group on every default-backend record there is.

Records (all torch's default backend on one H200, >= 2K tokens; all SEEN: none of them is held out any more):
  dev     the form's 103 fitting shapes (studies/cudnn_wave.dev_records)
  probe   the 57 shapes of its registered probe, calibration/h200x1-attention-cudnn-2026-11-30 (read once; seen now)
  step    the 9 SDPA calls the cudnnstep set timed alone (calibration/h200x2-eager-cudnnstep-2026-11-29/runs/sdpa.json:
          batch 1, causal, GQA; a different harness: 2 warm-ups then the median of 5 single calls, forward with
          autograd on, backward = o.backward(ones) into leaf q / k / v (their gradients accumulate: add kernels), on a
          2 x H200 lease, no control shape)
Groups: pass x head size x (<= 8K, 16K, >= 32K, non-causal) for dev + probe, and the step calls apart.

Candidates (each fitted as studies/cudnn_wave.py fits, by least squares on log time, on dev + probe):
  tiles      the backward's key block (BLOCK_N 64 or 128), query block (64 / 128) and units per SM (1 / 2), forward
             likewise: the kernel names the default backend ran (sdpa.json: "..._bprop_..._64x64x128_1x4x1", fprop
             "..._64x128x128_4x1x1") suggest 64 x 64 backward tiles, which the session-39 fit never tried
  boost      the kept grid fitted on each record's FASTEST sample (its least power-limited clock: the samples of one
             record drift by up to 9-13% at d 128 >= 16K as the board heats; session 25 measured 1,980 MHz up to 16K
             and 1,695-1,710 MHz at the 700 W limit from 32K, calibration/h200x1-attention-clocks-2026-11-27)
    python studies/cudnn_d128.py            (every candidate: ~1 min)
    python studies/cudnn_d128.py --quick    (the kept form and the boost candidate)
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))
import cudnn_wave as cw  # noqa: E402

from simcluster.llm import cudnn_schedule as cs  # noqa: E402
from simcluster.llm import flash_schedule as fs  # noqa: E402

CAL = ROOT / "calibration"
PROBE = CAL / "h200x1-attention-cudnn-2026-11-30" / "cudnn.json"
STEPSET = CAL / "h200x2-eager-cudnnstep-2026-11-29"
SAMPLED = ("h200x1-attention-gqa-2026-11-29/gqa.json", "h200x1-attention-wave-2026-11-29/wave.json",
           "h200x1-attention-noncausal-2026-11-29/noncausal.json", "h200x1-attention-cudnn-2026-11-30/cudnn.json")
# (BLOCK_M, BLOCK_N, units per SM): backward 64 x 64 at 1 / SM is the kernel name's tile; the rest the session-39 set
TILE_CANDIDATES = ((64, 128, 1), (64, 64, 1), (64, 64, 2), (128, 128, 1), (128, 64, 1), (128, 128, 2), (64, 128, 2))


def probe_records(path: Path = PROBE) -> list[dict]:
    """The registered cuDNN probe's default-backend probe shapes (medians), as cudnn_wave's records."""
    if not path.exists():
        return []
    return [cw._rec("probe", r["head_dim"], r["batch"], r["heads"], r["kv_heads"], r["seq_q"], r["seq_kv"], r["causal"],
                    r["fwd_s"], r["bwd_s"])
            for r in json.loads(path.read_text())["records"]
            if r.get("backend") == "default" and r.get("role") == "probe" and "error" not in r]


def step_records(bundle: Path = STEPSET) -> list[dict]:
    """The cudnnstep set's SDPA calls timed alone (runs/sdpa.json), shaped from its device script's `calls` line
    (name:heads:kv_heads:head_dim:seq)."""
    sdpa = bundle / "runs" / "sdpa.json"
    if not sdpa.exists():
        return []
    text = (bundle / "device_run.sh").read_text()
    specs = text.split('calls="', 1)[1].split('"', 1)[0].split()
    shape = {s.split(":")[0]: [int(x) for x in s.split(":")[1:]] for s in specs}
    out = []
    for c in json.loads(sdpa.read_text())["calls"]:
        if "error" in c:
            continue
        h, kv, d, s = shape[c["name"]]
        out.append(cw._rec("step:" + c["name"], d, 1, h, kv, s, s, True, c["fwd_ms"] / 1e3, c["bwd_ms"] / 1e3))
    return out


def sampled_records(stat=min) -> list[dict]:
    """dev + probe records that carry their samples (all but the backends bundle's 12), each pass from `stat` of its
    samples: forward stat(forward samples), backward stat(forward + backward samples) - forward."""
    out = []
    for name in SAMPLED:
        path = CAL / name
        if not path.exists():
            continue
        src = name.split("-")[2].split("/")[0]
        for r in json.loads(path.read_text())["records"]:
            if r.get("backend") != "default" or "error" in r or r.get("role", "probe") != "probe" or "fwd_samples_s" not in r:
                continue
            sq, skv = r.get("seq_q", r.get("seq")), r.get("seq_kv", r.get("seq"))
            f, fb = stat(r["fwd_samples_s"]), stat(r["fwd_bwd_samples_s"])
            out.append(cw._rec(src, r["head_dim"], r.get("batch", 1), r["heads"], r["kv_heads"], sq, skv,
                               r.get("causal", True), f, fb - f))
    return [r for r in out if min(r["seq_q"], r["seq_kv"]) >= cw.MIN_SEQ]


def kept_grid(tiles: dict | None = None) -> fs.Grid:
    """The adopted grid, or the same with other tiles {(pass, d): (bm, bn, per_sm)}."""
    t = dict(cs.GRID.tiles) | (tiles or {})
    return fs.Grid("cudnn", t, order=cs.GRID.order, bwd_bytes=cs.GRID.bwd_bytes, gqa_sum=False, split_kv=False)


def fit_cell(pass_: str, d: int, tiles: tuple, recs: list[dict]) -> tuple[float, float, float]:
    """(rms log error, u_s, a_s) of one (pass, head size) with `tiles` on the records of that head size."""
    gpu = cw.card()
    sub = [r for r in recs if r["head_dim"] == d]
    return cw._fit_one(pass_, d, tuple(tiles) + (cs.GRID.order,), sub, gpu.sm_count, gpu.hbm_bandwidth_Bps)


def boost_consts() -> dict:
    """The 'boost' candidate: the kept grid's (u, a) per pass and head size fitted on each record's fastest sample."""
    recs = sampled_records(min)
    return {k: fit_cell(k[0], k[1], cs.GRID.tiles[k], recs)[1:] for k in sorted(cs.CONSTS)}


def error(grid: fs.Grid, consts: dict, pass_: str, r: dict) -> float:
    gpu = cw.card()
    return cw.form_s(grid, consts, pass_, r, gpu.sm_count, gpu.hbm_bandwidth_Bps) / r[f"{pass_}_s"] - 1


def groups(recs: list[dict], steps: list[dict], d: int) -> list[tuple[str, list[dict]]]:
    mine = [r for r in recs if r["head_dim"] == d]
    return [("all", mine), ("<=8K", [r for r in mine if r["seq_q"] <= 8192 and r["causal"]]),
            ("16K", [r for r in mine if 8192 < r["seq_q"] < 32768 and r["causal"]]),
            (">=32K", [r for r in mine if r["seq_q"] >= 32768 and r["causal"]]), ("nc", [r for r in mine if not r["causal"]]),
            ("step", [r for r in steps if r["head_dim"] == d])]


def line(name: str, grid: fs.Grid, consts: dict, pass_: str, d: int, recs: list[dict], steps: list[dict]) -> str:
    """One candidate's mean |error| / mean error per group (pass_, head size d)."""
    cells = []
    for g, sub in groups(recs, steps, d):
        es = [error(grid, consts, pass_, r) for r in sub]
        cells.append(f"{g} {statistics.mean(map(abs, es)):5.1%}/{statistics.mean(es):+5.1%}" if es else f"{g} n/a")
    return f"  {name:34} " + "  ".join(cells)


def main(argv: list[str]) -> int:
    recs, steps = cw.dev_records() + probe_records(), step_records()
    print(f"records: {len(recs)} shapes (dev + the cuDNN probe, all seen) + {len(steps)} step calls; per group mean "
          "|error| / mean error, error = predicted / measured - 1")
    boost = boost_consts()
    for key in (("bwd", 128), ("bwd", 64), ("fwd", 128), ("fwd", 64)):
        p, d = key
        print(f"\n{p} d {d}")
        print(line("kept (the product)", cs.GRID, cs.CONSTS, p, d, recs, steps))
        print(line(f"boost: u {boost[key][0] * 1e6:.4f} a {boost[key][1] * 1e6:.4f} us", cs.GRID,
                   cs.CONSTS | {key: boost[key]}, p, d, recs, steps))
        if "--quick" in argv:
            continue
        for t in TILE_CANDIDATES:
            rms, u, a = fit_cell(p, d, t, recs)
            print(line(f"tiles {t} rms {rms:.2%}", kept_grid({key: t}), cs.CONSTS | {key: (u, a)}, p, d, recs, steps))
    drift = [(statistics.median(fb) / fb[0] - 1) for r in _raw_default() for fb in [r["fwd_bwd_samples_s"]]
             if r["head_dim"] == 128 and r.get("seq_q", r.get("seq")) >= 16384]
    print(f"\nd 128 >= 16K forward + backward: median sample / first sample - 1 over {len(drift)} records: mean "
          f"{statistics.mean(drift):+.1%}, max {max(drift):+.1%} (the board heating within a record)")
    return 0


def _raw_default() -> list[dict]:
    out = []
    for name in SAMPLED:
        if (CAL / name).exists():
            out += [r for r in json.loads((CAL / name).read_text())["records"] if r.get("backend") == "default"
                    and "error" not in r and "fwd_bwd_samples_s" in r and math.isfinite(r["fwd_bwd_samples_s"][0])]
    return out


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--quick",))
    sys.exit(main(sys.argv[1:]))
