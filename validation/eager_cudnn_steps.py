"""Issue 44, session 39: the adopted cuDNN attention form (llm/cudnn_schedule.py, attention_kernels.CudnnCard) checked in
whole eager PyTorch steps where attention is a large share of the step, by a registered 1-2 x H200 set
(calibration/h200x2-eager-cudnnstep-2026-11-29).

    python validation/eager_cudnn_steps.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/eager_cudnn_steps.py [calibration/BUNDLE]                            # after: read-out and verdicts

ROWS: `simcluster.runner.llm_step` at micro-batch 1 and 20K-64K tokens a sequence (torch's default SDPA backend: what
the model prices as 'card'), one GPU (--mode single) and 2-rank DDP / FSDP2, three rows a mode; presets whose head
counts make full forward waves of work units (heads x seq / 128 a multiple of the H200's 132 SMs) and partial ones,
head sizes 64 and 128; every (preset, tokens) new to calibration/. Each row PROCESSES separate processes (round-robin,
device_run.sh; a budget guard may leave a row's second process out). Registered per row: today's model's step, peak
memory (the range [steady, job peak] per rank, heldout/eager_regimes.regime_predict), host share and flag
(llm/host_bound.py), the card's attention time (forward + backward, every layer) and its share of the step; and the
"old" model: the same with the card's curve for attention (the model before the adoption, bf03707e^2: old_model()).
Also registered, reported only: one layer's attention call alone (forward; forward + backward) as the device call's
SDPA check times it (runs/sdpa.json, which also names the kernels the default backend ran).

Measured per row: the mean over its processes of rank 0's median step (ms); spread = max / min - 1 of those medians (a
one-process row has none: it shows its timed steps' max / min - 1 within the process, in parentheses).
RULES (fixed at registration, in registered.yaml):
  S  per mode (single, ddp, fsdp): today's model's mean |step error| over the mode's rows <= 8% (issue 44's target).
  M  per mode: rank 0's peak memory, per process, within 10% of the registered range [steady, job peak] (0 inside it);
     registered.yaml says "every rank's", but the runner's document holds rank 0's peak only for DDP / FSDP2.
  Reported, not judged: the old curve's per-mode mean |error| beside today's; the attention calls alone.
A mode missing a row has no verdict (INCOMPLETE).
"""

from __future__ import annotations

import json
import statistics
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.eager_regimes import process_runs  # noqa: E402  (the error-band rows read the same processes)
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-eager-cudnnstep-2026-11-29"
# (name, mode, preset, seq, processes): names are device_run.sh's file stems (NAME-rK.json); micro-batch 1 throughout
ROWS = (
    ("single-0.5b", "single", "0.5b", 22528, 2),    # 12 heads, d 128: 2112 forward units = 16 full waves
    ("single-1.1b", "single", "1.1b", 20480, 2),    # 32 heads, d 64: 5120 units = 38.8 waves (partial)
    ("single-0.3b", "single", "0.3b", 65536, 2),    # 16 heads, d 64, 64K: 8192 units = 62.1 waves (partial)
    ("ddp-2b", "ddp", "2b", 16896, 2),              # 20 heads, d 128: 2640 units = 20 full waves
    ("ddp-0.8b", "ddp", "0.8b", 25344, 2),          # 14 heads, d 128: 2772 units = 21 full waves
    ("ddp-1.1b", "ddp", "1.1b", 25344, 2),          # 32 heads, d 64: 6336 units = 48 full waves
    ("fsdp-1b", "fsdp", "1b", 25344, 2),            # 32 heads, d 64: 48 full waves
    ("fsdp-0.8b", "fsdp", "0.8b", 20480, 2),        # 14 heads, d 128: 2240 units = 17.0 waves (partial)
    ("fsdp-2b", "fsdp", "2b", 24576, 2),            # 20 heads, d 128: 3840 units = 29.1 waves (partial)
)
MODES = ("single", "ddp", "fsdp")
TARGET_STEP_PCT = 8.0     # S
TARGET_MEM_PCT = 10.0     # M
SMS = 132                 # the H200's SMs (the waves in ROWS' comments)


@contextmanager
def old_model():
    """The model before the adoption inside the block: every attention call refused by the cuDNN form
    (cudnn_schedule.MIN_SEQ out of reach), so CudnnCard prices it with the card's curve -- what for_kernel(gpu, 'card')
    returned before bf03707e (the bare card; tests/test_eager_cudnn_steps.py checks the two agree)."""
    from simcluster.llm import cudnn_schedule

    kept = cudnn_schedule.MIN_SEQ
    cudnn_schedule.MIN_SEQ = 1 << 60
    try:
        yield
    finally:
        cudnn_schedule.MIN_SEQ = kept


def attention_calls(preset: str, seq: int) -> dict:
    """One layer's attention call (micro-batch 1, causal, bf16) as the framework's card prices it: forward and backward
    (ms), and the head layout."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.heldout.eager import H200
    from simcluster.llm import attention_kernels
    from simcluster.runner.llm_step import PRESETS

    p = PRESETS[preset]
    d = p["hidden"] // p["heads"]
    card = attention_kernels.for_kernel(load_gpu(ROOT / H200)[0], "card")
    f, b = (card.attention_time_s(1, p["heads"], p["kv_heads"], seq, seq, d, True, bwd) for bwd in (False, True))
    return {"heads": p["heads"], "kv_heads": p["kv_heads"], "head_dim": d, "layers": p["layers"],
            "fwd_ms": round(f * 1e3, 3), "bwd_ms": round(b * 1e3, 3)}


def predict(row: tuple, old: bool = False) -> dict:
    """One row's prediction on H200 with the product host fits: step, memory, host share / flag, attention and its share."""
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm.host_bound import is_host_bound

    _, mode, preset, seq, _ = row
    with old_model() if old else nullcontext():
        r = regime_predict(preset, 1, mode, "h200", seq=seq)
        call = attention_calls(preset, seq)
    attn_ms = call["layers"] * (call["fwd_ms"] + call["bwd_ms"])
    return {"step_ms": r["step_ms"], "stage_mem_GiB": r["stage_mem_GiB"], "steady_mem_GiB": r["steady_mem_GiB"],
            "host_share": r["host_share"], "host_bound": is_host_bound(r["host_share"]),
            "attention_ms": round(attn_ms, 2), "attention_share": round(attn_ms / r["step_ms"], 4),
            "attention_call_ms": {"fwd": call["fwd_ms"], "bwd": call["bwd_ms"]}, "breakdown_ms": r["breakdown_ms"]}


def register(path: Path) -> None:
    from simcluster.runner.llm_step import PRESETS

    commit = registering_commit(ROOT)
    rows = []
    for row in ROWS:
        name, mode, preset, seq, procs = row
        p = PRESETS[preset]
        units = p["heads"] * -(-seq // 128)
        rows.append({"name": name, "mode": mode, "preset": preset, "seq": seq, "micro_batch": 1, "processes": procs,
                     "heads": p["heads"], "kv_heads": p["kv_heads"], "head_dim": p["hidden"] // p["heads"],
                     "forward_waves": round(units / SMS, 3),
                     "predicted": {"today": predict(row), "old": predict(row, old=True)}})
    doc = {"registered_at_commit": commit, "script": "validation/eager_cudnn_steps.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml (for_kernel 'card': CudnnCard)",
                           "collective_card": "models/collective/h200x2-primitives.yaml",
                           "host": "calibration/h200x2-llm-host-2026-11-23 (product fits)",
                           "old": "the card's curve for every attention call (cudnn_schedule.MIN_SEQ out of reach): the model before bf03707e"},
           "rules": {"S": f"per mode: today's model's mean |step error| over the mode's rows <= {TARGET_STEP_PCT}%",
                     "M": f"per mode: rank 0's peak memory, per process, within {TARGET_MEM_PCT}% of the range [steady_mem_GiB, stage_mem_GiB] (0 inside)",
                     "reported": "the old curve's per-mode mean |step error| beside today's; runs/sdpa.json's attention calls alone "
                                 "(kernel names, fwd / fwd+bwd) against attention_call_ms",
                     "measured": "mean over a row's processes of rank 0's median step; spread = max / min - 1 of those medians",
                     "flag": "host share >= 0.5 with the product fits (host_bound): every row is registered GPU-bound"},
           "rows": rows}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 39); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False))
    print(f"registered {len(rows)} rows in {path} (model at {commit[:10]})")


def mem_error(pred: dict, measured_GiB: float) -> float:
    """A rank's peak against the registered range [steady, job peak] (fraction; 0 inside it)."""
    lo, hi = float(pred["steady_mem_GiB"][0]), float(pred["stage_mem_GiB"][0])
    if lo <= measured_GiB <= hi:
        return 0.0
    return (hi if measured_GiB > hi else lo) / measured_GiB - 1


def read_out(bundle: Path, old_name: str = "old curve") -> dict:
    """Every row that ran: its processes' medians, mean and spread, today's and the old model's step error, rank 0's
    memory error per process; the rules' verdicts per mode (old_name: what the `old` prediction is called there); the SDPA check
    against the registered calls."""
    rows = read_run_set(bundle)["rows"]
    out = []
    for i, r in enumerate(rows):
        today, old = (checked_prediction(bundle, i, r, k) for k in ("today", "old"))
        procs = process_runs(bundle, r)
        if not procs:
            continue
        meds = [p["step_ms"] for p in procs]
        mean = statistics.mean(meds)
        mems = [m for p in procs for m in p["mem_GiB"]]
        out.append({"name": r["name"], "mode": r["mode"], "medians": meds, "mean": mean,
                    "spread": max(meds) / min(meds) - 1 if len(meds) > 1 else None, "within": within_range(procs),
                    "share": today["attention_share"], "flag": bool(today["host_bound"]),
                    "err_today": today["step_ms"] / mean - 1, "err_old": old["step_ms"] / mean - 1,
                    "mem_GiB": mems, "mem_err": [mem_error(today, m) for m in mems]})
    return {"rows": out, "verdicts": verdicts(out, [r["mode"] for r in rows], old_name), "sdpa": sdpa_read(bundle, rows)}


def checked_prediction(bundle: Path, i: int, row: dict, which: str) -> dict:
    """rows[i].predicted[which] with its step, share and memory range as numbers; else one SimclusterError line naming
    the registered.yaml, the row and the key."""
    try:
        pred = row["predicted"][which]
        return {**pred, "step_ms": float(pred["step_ms"]), "attention_share": float(pred["attention_share"]),
                "steady_mem_GiB": [float(pred["steady_mem_GiB"][0])], "stage_mem_GiB": [float(pred["stage_mem_GiB"][0])]}
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows[{i}].predicted.{which}: step_ms, attention_share, "
                              f"steady_mem_GiB and stage_mem_GiB must be numbers ({type(exc).__name__}: {exc})") from None


def checked_step(bundle: Path, i: int, row: dict, which: str) -> float:
    """rows[i].predicted[which].step_ms as a number; else one SimclusterError line naming the registered.yaml, the row and
    the key (checked_prediction's rule for a set that registers steps only)."""
    try:
        return float(row["predicted"][which]["step_ms"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows[{i}].predicted.{which}.step_ms must be a number "
                              f"({type(exc).__name__}: {exc})") from None


def within_range(procs: list[dict]) -> float | None:
    """A one-process row's timed steps' max / min - 1 within the process (None: several processes, or no step samples)."""
    steps = procs[0].get("steps_s") if len(procs) == 1 else None
    return max(steps) / min(steps) - 1 if steps else None


def spread_text(row: dict) -> str:
    """The spread column: across processes; for a one-process row the within-process range in parentheses, or '-'."""
    if row["spread"] is not None:
        return f"{row['spread']:.1%}"
    return f"({row['within']:.1%})" if row.get("within") is not None else "-"


def verdicts(rows: list[dict], registered_modes: list[str], old_name: str = "old curve") -> dict[str, str]:
    """Per mode: S and M on `today`, the `old` prediction's mean |step error| beside S (named old_name)."""
    out = {}
    for mode in dict.fromkeys(registered_modes):
        got = [r for r in rows if r["mode"] == mode]
        if len(got) < registered_modes.count(mode):
            out[mode] = f"INCOMPLETE: {len(got)} of {registered_modes.count(mode)} rows"
            continue
        s = 100 * statistics.mean(abs(r["err_today"]) for r in got)
        o = 100 * statistics.mean(abs(r["err_old"]) for r in got)
        m = 100 * max(abs(e) for r in got for e in r["mem_err"])
        out[mode] = (f"S {'MET' if s <= TARGET_STEP_PCT else 'NOT MET'} (mean |error| {s:.1f}%, {old_name} {o:.1f}%); "
                     f"M {'MET' if m <= TARGET_MEM_PCT else 'NOT MET'} (max |memory error| {m:.1f}%) over {len(got)} rows")
    return out


def sdpa_read(bundle: Path, rows: list[dict]) -> list[dict]:
    """runs/sdpa.json (the device call's one-layer SDPA check) against each row's registered call: [] if absent."""
    path = bundle / "runs" / "sdpa.json"
    if not path.is_file():
        return []
    try:
        calls = {c["name"]: c for c in json.loads(path.read_text())["calls"]}
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise SimclusterError(f"{path}: not the SDPA check's output ({type(exc).__name__}: {exc})") from None
    out = []
    for r in rows:
        c = calls.get(r["name"])
        if c is None or "fwd_ms" not in c:
            continue
        t, o = r["predicted"]["today"]["attention_call_ms"], r["predicted"]["old"]["attention_call_ms"]
        out.append({"name": r["name"], "kernels": c.get("kernels", [])[:3], "fwd_ms": c["fwd_ms"], "bwd_ms": c["bwd_ms"],
                    "err_today": ((t["fwd"] / c["fwd_ms"] - 1), (t["bwd"] / c["bwd_ms"] - 1)),
                    "err_old": ((o["fwd"] / c["fwd_ms"] - 1), (o["bwd"] / c["bwd_ms"] - 1))})
    return out


def show(result: dict) -> None:
    print(f"{'row':12} {'attn':>5} {'process medians (ms)':>22} {'spread':>7} {'today':>7} {'old':>7} {'peak GiB (rank 0/proc)':>22} {'mem err':>14}")
    for r in result["rows"]:
        print(f"{r['name']:12} {r['share']:5.2f} {' / '.join(f'{x:.1f}' for x in r['medians']):>22} {spread_text(r):>7} "
              f"{r['err_today']:+7.1%} {r['err_old']:+7.1%} {' / '.join(f'{m:.2f}' for m in r['mem_GiB']):>22} "
              f"{' / '.join(f'{e:+.1%}' for e in r['mem_err']):>14}")
    for c in result["sdpa"]:
        print(f"sdpa {c['name']:12} fwd {c['fwd_ms']:.2f} ms (today {c['err_today'][0]:+.1%}, old {c['err_old'][0]:+.1%}), "
              f"bwd {c['bwd_ms']:.2f} ms (today {c['err_today'][1]:+.1%}, old {c['err_old'][1]:+.1%}); {', '.join(c['kernels'])[:90]}")
    for mode, text in result["verdicts"].items():
        print(f"{mode}: {text}")


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
