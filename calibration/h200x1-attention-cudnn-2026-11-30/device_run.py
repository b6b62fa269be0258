"""Issue 44, session 39 (cudnnwave): torch's default SDPA backend (cuDNN's fused attention on Hopper) at shapes no
bundle has measured, against the card's smooth attention curve (today's price of the default backend, Megatron-TE's
fused attention and the eager lab) and the schedule form of studies/cudnn_wave.py. Flash beside it in the same process
(a control of the lease, and a diagnostic read of the 'fa2' form at new shapes). bf16, forward and forward + backward
(backward = the difference), head sizes 64 / 128, 4-64 heads, batch 1-4, 4K-128K tokens, causal (most), non-causal
and GQA (a few); the two control shapes of the backends bundle first and last. One process, one GPU.

    python calibration/h200x1-attention-cudnn-2026-11-30/device_run.py --predict   (here: writes registered.yaml)
    python calibration/h200x1-attention-cudnn-2026-11-30/device_run.py > cudnn.json   (one H200, ~2-3 min)
"""

from __future__ import annotations

import json
import math
import runpy
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NONCAUSAL = HERE.parent / "h200x1-attention-noncausal-2026-11-29" / "device_run.py"   # its _one (the wave's timer)
HEADS = (4, 6, 10, 28)     # query heads, batch 1: one partial wave (4 heads at 4K) to many waves
SEQS = (4096, 8192, 16384, 32768, 65536)
# (group, head_dim, batch, heads, kv_heads, seq_q, seq_kv, causal)
EXTRA = (("batch", 64, 3, 6, 6, 8192, 8192, True), ("batch", 128, 4, 10, 10, 4096, 4096, True),
         ("batch", 128, 2, 28, 28, 16384, 16384, True),
         ("long", 64, 1, 6, 6, 131072, 131072, True), ("long", 128, 1, 4, 4, 131072, 131072, True),
         ("gqa", 64, 1, 28, 4, 16384, 16384, True), ("gqa", 128, 1, 48, 8, 8192, 8192, True),
         ("gqa", 128, 1, 56, 8, 16384, 16384, True), ("gqa", 128, 2, 40, 8, 4096, 4096, True),
         ("noncausal", 128, 1, 28, 28, 8192, 8192, False), ("noncausal", 64, 1, 10, 10, 32768, 32768, False),
         ("noncausal", 128, 4, 6, 6, 4096, 4096, False), ("noncausal", 128, 1, 8, 8, 65536, 65536, False),
         ("few", 64, 1, 5, 5, 4096, 4096, True), ("few", 128, 1, 3, 3, 8192, 8192, True),
         ("few", 128, 1, 2, 2, 16384, 16384, True), ("few", 64, 1, 2, 2, 32768, 32768, True))
CONTROLS = ((64, 1, 16, 16, 16384, 16384), (128, 1, 32, 32, 16384, 16384))   # causal; backends-bundle shapes
BACKENDS = ("default", "flash")
PRIOR_RUNS = ("h200x1-attention-wave-2026-11-29/wave.json", "h200x1-attention-noncausal-2026-11-29/noncausal.json")
RULE = {  # declared before any run; studies/cudnn_wave_read.py applies it from registered.yaml
    "adopt": "over the probe's default-backend passes (role probe: every shape's fwd and bwd; controls excluded), "
             "error = predicted / measured - 1: the form is adopted for the card's attention (torch's default / cuDNN "
             "kernel, 'card', on the measured Hopper cards: the H200 as fitted, the H100 scaled as the flash form "
             "was) if its mean |error| is <= max_ratio x the card curve's and <= max_mean_abs; else nothing changes",
    "max_ratio": 0.5, "max_mean_abs": 0.05,
    "full_waves": "if the rule fails over all probe passes but holds over the shapes whose forward has >= "
                  "full_waves_min waves of units (units_fwd >= full_waves_min x slots_fwd), the form may be adopted "
                  "for that range only (the card's curve below it); else nothing changes",
    "full_waves_min": 2,
    "void": "if a control's default pass (start or end run) is off its prior time (before_*: the mean of the backends "
            "bundle's run and the wave and non-causal probes' start and end runs) by more than control_tolerance, "
            "the lease is not the one the form was fitted on: the verdict is void and the run is repeated once",
    "control_tolerance": 0.08,
    "incomplete": "if fewer than min_complete of the probe shapes have a default-backend record (failed or missing: a "
                  "run cut short), no verdict: the run is repeated once; otherwise the rule reads the shapes measured",
    "min_complete": 0.9,
    "flash": "flash's passes against the adopted 'fa2' form are printed (a second held-out read of that form at new "
             "shapes), not judged",
}
HEADER = ("# Registered before any run (issue 44, session 39, cudnnwave): written by `python calibration/"
          "h200x1-attention-cudnn-2026-11-30/device_run.py --predict`.\n# Times in seconds. card_*: the H200 card's "
          "attention curve (today's price of torch's default backend); form_*: studies/cudnn_wave.py's schedule form "
          "(the rule's),\n# with `grid` and `consts`; fa2_*: the model's 'fa2' time for the flash control (diagnostic "
          "only; null where it is not the form's).\n")


def probe_shapes() -> list[tuple]:
    """(group, head_dim, batch, heads, kv_heads, seq_q, seq_kv, causal) of the probe, in run order."""
    mha = [("mha", d, 1, h, h, s, s, True) for d in (64, 128) for s in SEQS for h in HEADS]
    return mha + list(EXTRA)


def plan() -> list[tuple[str, str, tuple, bool]]:
    """(role, group, (d, b, h, kv, s_q, s_kv), causal) in run order: controls, probe, controls again."""
    probe = [("probe", g, (d, b, h, kv, sq, skv), c) for g, d, b, h, kv, sq, skv, c in probe_shapes()]
    return ([("control-start", "control", c, True) for c in CONTROLS] + probe
            + [("control-end", "control", c, True) for c in CONTROLS])


def measure() -> dict:
    import time

    import torch

    one = runpy.run_path(str(NONCAUSAL))["_one"]   # the non-causal probe's measurement of one shape and backend
    t0, recs = time.time(), []
    for role, group, shape, causal in plan():
        for be in BACKENDS:
            recs.append(one(torch, role, group, shape, causal, be))
            print(json.dumps({k: v for k, v in recs[-1].items() if not k.endswith("samples_s")}), file=sys.stderr, flush=True)
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "device": torch.cuda.get_device_name(0), "wall_s": round(time.time() - t0, 1), "records": recs}


def prior_times(d: int, b: int, h: int, s: int) -> dict:
    """{(backend, pass): mean seconds} of a control shape over its five prior runs on this GPU kind."""
    sys.path.insert(0, str(ROOT))
    from simcluster.llm.attention_kernels import backend_rows

    rows = {(r["backend"], r["mode"]): r["time_s"] for r in backend_rows()
            if (r["head_dim"], r["batch"], r["heads"], r["seq_q"]) == (d, b, h, s) and r.get("time_s")}
    got: dict = {}
    for be in BACKENDS:
        got[(be, "fwd")] = [rows[(be, "fwd")]]
        got[(be, "bwd")] = [rows[(be, "fwd_bwd")] - rows[(be, "fwd")]]
    for name in PRIOR_RUNS:
        for r in json.loads((HERE.parent / name).read_text())["records"]:
            if r["role"].startswith("control") and (r["head_dim"], r["batch"], r["heads"], r.get("seq", r.get("seq_q"))) == (d, b, h, s):
                for p in ("fwd", "bwd"):
                    got[(r["backend"], p)].append(r[f"{p}_s"])
    return {k: statistics.mean(v) for k, v in got.items()}


def predict() -> dict:
    """The registration: the form's grid and constants (studies/cudnn_wave.py, fitted on the development records) and
    every shape's card, form and (flash) 'fa2' times."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "studies"))
    import cudnn_wave as cw

    from simcluster.llm import attention_kernels as ak
    from simcluster.llm import flash_schedule as fs

    grid, consts = cw.fitted()
    gpu = cw.card()
    fa2 = ak.for_kernel(gpu, "fa2")
    out = []
    for role, group, (d, b, h, kv, sq, skv), causal in plan():
        if role == "control-end":
            continue
        row = {"role": "control" if role.startswith("control") else role, "group": group, "head_dim": d, "batch": b,
               "heads": h, "kv_heads": kv, "seq_q": sq, "seq_kv": skv, "causal": causal,
               "units_fwd": b * h * math.ceil(sq / grid.tiles[("fwd", d)][0]),
               "slots_fwd": gpu.sm_count * grid.tiles[("fwd", d)][2]}
        rec = {"batch": b, "heads": h, "kv_heads": kv, "seq_q": sq, "seq_kv": skv, "head_dim": d, "causal": causal}
        if row["role"] == "control":
            prior = prior_times(d, b, h, sq)
            row.update({f"before_{p}_s": prior[("default", p)] for p in ("fwd", "bwd")})
            row.update({f"before_flash_{p}_s": prior[("flash", p)] for p in ("fwd", "bwd")})
        for p in ("fwd", "bwd"):
            row[f"card_{p}_s"] = cw.card_s(gpu, p, rec)
            row[f"form_{p}_s"] = cw.form_s(grid, consts, p, rec, gpu.sm_count, gpu.hbm_bandwidth_Bps)
            in_form = True
            try:
                fs.check_range(b, h, kv, sq, d, gpu.sm_count)
            except fs.FormError:
                in_form = False
            row[f"fa2_{p}_s"] = fa2.attention_time_s(b, h, kv, sq, skv, d, causal, p == "bwd") if in_form else None
        out.append({k: (float(f"{v:.6g}") if isinstance(v, float) else v) for k, v in row.items()})
    return {"rule": RULE,
            "grid": {f"{p}_{d}": {"block_m": bm, "block_n": bn, "units_per_sm": k} for (p, d), (bm, bn, k) in sorted(grid.tiles.items())}
            | {"order": grid.order, "bwd_bytes_per_q_element": grid.bwd_bytes, "gqa_sum": grid.gqa_sum},
            "consts": {f"{p}_{d}": {"u_s": float(f"{u:.6g}"), "a_s": float(f"{a:.6g}")} for (p, d), (u, a) in sorted(consts.items())},
            "fit_records": [f"{r['src']} {cw.label(r)}" for r in cw.dev_records()],
            "shapes": out}


def main(argv: list[str]) -> None:
    if "--predict" not in argv:
        print(json.dumps(measure(), indent=1))
        return
    import yaml

    path = HERE / "registered.yaml"
    path.write_text(HEADER + yaml.safe_dump(predict(), sort_keys=False, width=120))
    print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
