"""Session 54 (issue 44, moe54): one rank's own work in AWS's Qwen3-30B-A3B cells, one layer on one H200 without any
collective, against the model's price of the same work; how much of the rows' missing ~6-10 ms per layer per
micro-batch is the rank's GPU / host and how much must be communication (calibration/h200x1-moe54-2026-12-01/README.md).

    PYTHONPATH=. python validation/moe54.py --register calibration/h200x1-moe54-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/moe54.py [BUNDLE]      # the read-out, once runs/ is unpacked in the bundle

Per AWS row i (calibration/published/llm-awsome-megatron-bridge-qwen3-30b-p5-h100.yaml, rows 0-5), registered before the
run from today's model:
  P_i      the model's seconds per layer per micro-batch of the rank's own work on the H200 card: the compute and host
           parts of one layer's forward + backward (the backward holds the recomputed forward under full recompute) as
           llm/work.build_work prices them for row i's configuration (TP / EP / all-to-all parts left out: nothing on
           the device communicates); P_i,fwd the forward alone; P_i,compute the compute part alone.
  G_i      the row's missing time per layer per micro-batch: (measured step - predicted step) / (micro-batches a
           pipeline x layers a stage), the H100 prediction of today's model (the held-out row as validate predicts it).
Measured (studies/moe54_device.py, runs/moe54.json): per cell (ep16 / ep32 x micro-batch 4 / 1) and pass, `events`
(the rank's wall per layer call: CUDA events around 5 eager calls) and `kernels` (torch.profiler's device busy time).
Row i reads pass `recompute` (rows 0, 1, 3, 4: full recompute) or `fwdbwd` (rows 2, 5: no recompute) of its cell.
  D_i = events_i - P_i (the rank's time beyond the model's price), share_i = D_i / G_i;
  K_i = kernels_i - P_i,compute (GPU kernels beyond the model's compute price); I_i = events_i - kernels_i (GPU idle: host).
Rules, fixed before the run (RULE lines):
  SIDE   median share_i over the 6 rows >= SHARE_RANK: RANK (at least half of the missing time is one rank's own GPU /
         host work, measurable on one GPU); <= SHARE_COMM: COMMUNICATION (the missing time is not the rank's own work:
         the collectives, their host calls, or Megatron / TE host work this plain-torch layer lacks); between: SPLIT.
  GPU    (the GPU side alone, the set's firm reading) median K_i / G_i over the 6 rows >= SHARE_RANK: GPU (the rank's
         kernels carry at least half of the missing time); <= SHARE_COMM: NOT GPU; between: PART.
  PRICE  the model's price of the rank's work: mean |P_i / events_i - 1| over the 6 rows <= PRICE_PCT: HOLDS, else OFF
         (the signed mean printed).
Printed, judging nothing: per cell and pass the events / kernels / kernel count / GEMM share, the fwd pass against
P_i,fwd."""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from moe_rows import predict_row  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402
from simcluster.llm.work import build_work  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-moe54-2026-12-01"
TRACE = "moe54.json"
STEM = "llm-awsome-megatron-bridge-qwen3-30b-p5-h100"
H200_CARD = ROOT / "models" / "gpu" / "h200-sxm.yaml"
# AWS row -> (cell, pass) of studies/moe54_device.py
ROWS = {0: ("ep16-mb4", "recompute"), 1: ("ep16-mb1", "recompute"), 2: ("ep16-mb4", "fwdbwd"),
        3: ("ep32-mb4", "recompute"), 4: ("ep32-mb1", "recompute"), 5: ("ep32-mb4", "fwdbwd")}
CELLS = ("ep16-mb4", "ep16-mb1", "ep32-mb4", "ep32-mb1")
PASSES = ("fwd", "fwdbwd", "recompute")
SHARE_RANK, SHARE_COMM, PRICE_PCT = 0.5, 0.2, 15.0
RULE = {"SIDE": f"median share (events - P) / G over the 6 rows >= {SHARE_RANK}: RANK; <= {SHARE_COMM}: COMMUNICATION; else SPLIT",
        "GPU": f"median (kernels - P_compute) / G over the 6 rows >= {SHARE_RANK}: GPU; <= {SHARE_COMM}: NOT GPU; else PART",
        "PRICE": f"mean |P / events - 1| over the 6 rows <= {PRICE_PCT}%: HOLDS, else OFF"}


def layer_tasks(row, gpu) -> tuple[dict, dict]:
    """(forward parts, backward parts) of one layer per micro-batch, seconds, as build_work prices row's configuration on
    `gpu`: the difference of two builds with 2 and 1 layers a virtual stage (embedding and head cancel)."""
    par, v = row.par, row.par.pp * row.par.virtual_stages

    def stage0(layers_each: int):
        model = replace(row.model, layers=v * layers_each)
        w = build_work(model, par, row.batch, gpu, row.net, fw=row.framework)
        return w.stages[0].forward[0], w.stages[0].backward[0]
    (f2, b2), (f1, b1) = stage0(2), stage0(1)
    return ({k: f2.parts[k] - f1.parts[k] for k in f2.parts}, {k: b2.parts[k] - b1.parts[k] for k in b2.parts})


def predict(i: int) -> dict:
    """Row i's registered figures: P, P_fwd, P_compute (H200, seconds per layer per micro-batch) and G (H100 rows)."""
    row = predict_row(STEM, i)
    gpu = load_gpu(H200_CARD)[0]
    f, b = layer_tasks(row, gpu)
    m = row.batch.global_batch // (row.batch.micro_batch * row.par.dp)
    layers = row.model.layers // row.par.pp
    gap = (row.measured_step_s - row.result.step_time_s) / (m * layers)
    return {"row": i, "cell": ROWS[i][0], "pass": ROWS[i][1], "p_s": round(f["compute"] + f["host"] + b["compute"] + b["host"], 7),
            "p_fwd_s": round(f["compute"] + f["host"], 7), "p_compute_s": round(f["compute"] + b["compute"], 7),
            "p_host_s": round(f["host"] + b["host"], 7), "gap_s": round(gap, 7),
            "aws_measured_step_s": row.measured_step_s, "aws_predicted_step_s": round(row.result.step_time_s, 4),
            "micro_batches": m, "layers_a_stage": layers}


def register(path: Path) -> None:
    import yaml

    doc = {"set": "moe54", "issue": 44, "commit": registering_commit(ROOT), "card": str(H200_CARD.relative_to(ROOT)),
           "trace": f"runs/{TRACE}", "published": f"calibration/published/{STEM}.yaml", "rule": RULE,
           "thresholds": {"share_rank": SHARE_RANK, "share_comm": SHARE_COMM, "price_pct": PRICE_PCT},
           "rows": [predict(i) for i in ROWS]}
    write_registration(path, "# registered before the run (validation/moe54.py --register): today's model, the rules\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def read_trace(path: Path) -> dict:
    """{(cell, pass, clock): record} of a full H200 run; one SimclusterError line for anything else."""
    try:
        doc = json.loads(path.read_text())
        recs = {(r["cell"], r["pass"], r["clock"]): r for r in doc["records"] if "error" not in r}
        failed = {r["cell"]: r["error"] for r in doc["records"] if "error" in r}
        device = dict(doc["device"])
    except FileNotFoundError:
        raise SimclusterError(f"{path}: missing (the device call's trace)") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SimclusterError(f"{path}: not a moe54 trace ({type(exc).__name__}: {exc})") from None
    if doc.get("quick"):
        raise SimclusterError(f"{path}: a --quick dry run, not the registered measurement")
    for cell in CELLS:
        for pas in PASSES:
            for clock in ("events", "kernels"):
                r = recs.get((cell, pas, clock))
                try:
                    if r is None or not float(r["time_s"]) > 0:
                        raise ValueError
                except (KeyError, TypeError, ValueError):
                    why = f" (the cell failed: {failed[cell]})" if cell in failed else ""
                    raise SimclusterError(f"{path}: no positive time_s for cell {cell} pass {pas} clock {clock}{why}") from None
    return {"device": device, "records": recs}


def verdicts(rows: list[dict]) -> dict:
    share = statistics.median(r["share"] for r in rows)
    side = "RANK" if share >= SHARE_RANK else "COMMUNICATION" if share <= SHARE_COMM else "SPLIT"
    gshare = statistics.median(r["k_s"] / r["gap_s"] for r in rows)
    gpu = "GPU" if gshare >= SHARE_RANK else "NOT GPU" if gshare <= SHARE_COMM else "PART"
    d, k = statistics.median(r["d_s"] for r in rows), statistics.median(r["k_s"] for r in rows)
    errs = [r["p_s"] / r["events_s"] - 1 for r in rows]
    mean_abs, signed = 100 * sum(map(abs, errs)) / len(errs), 100 * sum(errs) / len(errs)
    price = "HOLDS" if mean_abs <= PRICE_PCT else "OFF"
    return {"SIDE": f"{side} (median share {share:.2f}; thresholds {SHARE_RANK} / {SHARE_COMM})",
            "GPU": f"{gpu} (median share {gshare:.2f}; median K {1e3 * k:.2f} ms, median D {1e3 * d:.2f} ms a layer per micro-batch)",
            "PRICE": f"{price} (mean |P / events - 1| {mean_abs:.1f}%, signed {signed:+.1f}%; + = model slower; rule <= {PRICE_PCT}%)"}


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"set": "moe54"})
    tr = read_trace(Path(bundle) / "runs" / TRACE)
    rows = []
    try:
        for r in reg["rows"]:
            cell, pas = r["cell"], r["pass"]
            ev = float(tr["records"][(cell, pas, "events")]["time_s"])
            kn = float(tr["records"][(cell, pas, "kernels")]["time_s"])
            d = ev - float(r["p_s"])
            rows.append({**r, "events_s": ev, "kernels_s": kn, "d_s": d, "k_s": kn - float(r["p_compute_s"]),
                         "i_s": ev - kn, "share": d / float(r["gap_s"])})
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: a row without {exc} (expected cell, pass, p_s, p_compute_s, gap_s)") from None
    if len(rows) != len(ROWS):
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: {len(rows)} rows, expected {len(ROWS)}")
    return {"tr": tr, "rows": rows, "reg": reg, "verdicts": verdicts(rows)}


def show(res: dict) -> None:
    tr, ms = res["tr"], 1e3
    dev = tr["device"]
    print(f"# device {dev.get('name')} torch {dev.get('torch')} cuda {dev.get('cuda')}")
    for cell in CELLS:
        for pas in PASSES:
            e, k = tr["records"][(cell, pas, "events")], tr["records"][(cell, pas, "kernels")]
            print(f"# {cell} {pas}: events {ms * float(e['time_s']):.3f} ms (samples {ms * min(e['samples']):.3f}-{ms * max(e['samples']):.3f}), "
                  f"kernels {ms * float(k['time_s']):.3f} ms ({float(k.get('n_kernels') or 0):.0f} kernels, gemm {ms * float(k.get('gemm_s') or 0):.3f} ms); "
                  f"attention {e.get('attention')}")
    print("row  cell      pass       P (model, H200)  events   error    kernels  P compute  D (events-P)  G (AWS gap)  D/G     K/G")
    for r in res["rows"]:
        print(f"{r['row']:>3}  {r['cell']:<9} {r['pass']:<10} {ms * r['p_s']:8.3f} ms  {ms * r['events_s']:8.3f}  "
              f"{100 * (r['p_s'] / r['events_s'] - 1):+6.1f}%  {ms * r['kernels_s']:8.3f}  {ms * r['p_compute_s']:8.3f}  "
              f"{ms * r['d_s']:+9.3f} ms  {ms * r['gap_s']:8.3f} ms  {r['share']:+6.2f}  {r['k_s'] / r['gap_s']:+6.2f}")
    for r in res["rows"]:
        if r["pass"] == "recompute":
            e = float(tr["records"][(r["cell"], "fwd", "events")]["time_s"])
            print(f"# row {r['row']} fwd alone: P_fwd {ms * r['p_fwd_s']:.3f} ms, events {ms * e:.3f} ms ({100 * (r['p_fwd_s'] / e - 1):+.1f}%)")
    for key in ("SIDE", "GPU", "PRICE"):
        print(f"RULE {key}: {res['verdicts'][key]}")


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
