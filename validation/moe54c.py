"""Session 54 (issue 44, moe54c): Megatron-Core's own MoE layer (megatron-core 0.14 local spec, no TE) at the per-rank shapes
of AWS's Qwen3-30B-A3B cells on one H200, beside moe54's plain-torch layer on the same lease: which serial host cost a
modelled call (c_s, llm-findings "Session 54: moe54b" section 3) the measurement implies, and the verdict the proposed
serial-host floor would get with it (calibration/h200x1-moe54c-2026-12-01/README.md).

    PYTHONPATH=. python validation/moe54c.py --register calibration/h200x1-moe54c-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/moe54c.py [BUNDLE]      # the read-out, once runs/ is unpacked in the bundle

Registered per AWS row i (rows 0-5, the cell and pass of validation/moe54.ROWS), from today's model before the run:
  p_local   the model's seconds a layer per micro-batch of the rank's own work on the H200 card priced with framework
            megatron-local-spec (what runs here: Megatron-Core's local spec; moe54.layer_tasks: compute + host parts, the
            TP / EP parts left out; the host part as priced in the AWS cell, where the EP's GPU time hides part of it);
  n, r      the row's modelled calls of a layer pass at moe_sync's c and the ungraphed router / preprocess host
            (studies/moe54_whatif.calls: the definition of moe54b's c');
  c_pass, h_pass, per, steps   for the what-if: the pass's compute and priced host excess on the row's own card
            (moe54_whatif.pass_figures), micro-batches x MoE layers a stage, the predicted and measured AWS steps;
  moe54_events   moe54's measured plain-torch events of the row's cell and pass (the bridge's reference).
Measured (studies/moe54c_device.py, runs/moe54c.json): impl mcore / torch x cell x pass, clocks events and kernels.
Rules (RULE lines), fixed before the run:
  CS      r = median over the host-bound micro-batch-1 rows (1, 4) of mcore events / torch events (the two layers'
          serial host, same lease); c_s = c x r (moe54b's definition). r < R_LOW: BELOW C; <= R_AT: AT C (the term at
          c_s = c, no new constant); <= R_FAR: ABOVE C; else FAR ABOVE C. UNDECIDED if on rows 1 / 4 either layer's
          kernels exceed HOST_BOUND of its events (not host-bound: the ratio would not be the hosts').
  TERM    the proposed floor T = max(C + h, N c_s + R) on the 6 AWS rows (DEVELOPMENT: their gap chose the sets), step +
          (T - C - h) x per: mean |measured / step - 1| <= TERM_CLOSE%: CLOSES; else the signed mean < -TERM_CLOSE%:
          OVERSHOOTS (the floor makes the model slow); else mean <= TERM_NARROW%: NARROWS; else SHORT.
          (The term's adoption rule, moe54b section 3, needs >= 4 held-out regime rows from 2 sources: not judged here.)
  PRICE   megatron-local-spec's price of Megatron-Core's layer: mean |p_local / mcore events - 1| over the 6 rows <=
          PRICE_PCT%: HOLDS, else OFF (signed mean printed; + = the model slower).
  BRIDGE  median torch events this lease / moe54's events over the 6 rows within 1 +- BRIDGE_TOL: REPEATS, else DRIFTS."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))
sys.path.insert(0, str(ROOT / "validation"))

import moe54  # noqa: E402  (the plain-torch set: its rows, cells, layer_tasks, read-out)

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-moe54c-2026-12-01"
TRACE = "moe54c.json"
ROWS, CELLS, PASSES, IMPLS = moe54.ROWS, moe54.CELLS, moe54.PASSES, ("mcore", "torch")
HOST_ROWS = (1, 4)
R_LOW, R_AT, R_FAR, HOST_BOUND = 0.85, 1.15, 1.6, 0.6
TERM_CLOSE, TERM_NARROW, PRICE_PCT, BRIDGE_TOL = 15.0, 40.0, 15.0, 0.15
RULE = {"CS": f"r = median over rows {HOST_ROWS} of mcore events / torch events, c_s = c r: r < {R_LOW} BELOW C; <= {R_AT} AT C; "
              f"<= {R_FAR} ABOVE C; else FAR ABOVE C; UNDECIDED if kernels > {HOST_BOUND} x events on those rows",
        "TERM": f"AWS rows (development) under T = max(C + h, N c_s + R): mean |error| <= {TERM_CLOSE}% CLOSES; else signed mean < "
                f"-{TERM_CLOSE}% OVERSHOOTS; else mean |error| <= {TERM_NARROW}% NARROWS; else SHORT",
        "PRICE": f"mean |p_local / mcore events - 1| over the 6 rows <= {PRICE_PCT}%: HOLDS, else OFF",
        "BRIDGE": f"median torch events / moe54's events over the 6 rows within 1 +- {BRIDGE_TOL}: REPEATS, else DRIFTS"}


def predict(i: int, moe54_events: dict) -> dict:
    import moe54_whatif
    from moe_rows import predict_row

    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm import compiled
    from simcluster.llm.framework import MEGATRON_LOCAL

    row = predict_row(moe54.STEM, i)
    gpu = load_gpu(moe54.H200_CARD)[0]
    local = SimpleNamespace(model=row.model, par=row.par, batch=row.batch, net=row.net, framework=MEGATRON_LOCAL)
    f, b = moe54.layer_tasks(local, gpu)
    fwd, bwd = compiled.layer_ops(row.model, row.par, row.batch, row.framework)
    n, r = moe54_whatif.calls(gpu, fwd, bwd, row.batch.precision, row.framework)
    fig = moe54_whatif.pass_figures(row, row.framework.moe_sync_kernel_s)
    m = row.batch.global_batch // (row.batch.micro_batch * row.par.dp)
    return {"row": i, "cell": ROWS[i][0], "pass": ROWS[i][1],
            "p_local_s": round(f["compute"] + f["host"] + b["compute"] + b["host"], 7),
            "p_local_compute_s": round(f["compute"] + b["compute"], 7), "n_calls": n, "r_s": round(r, 7),
            "c_s": row.framework.moe_sync_kernel_s, "c_pass_s": round(fig["C"], 7), "h_pass_s": round(fig["h"], 7),
            "per": m * row.model.moe_layers / row.par.pp, "aws_measured_step_s": row.measured_step_s,
            "aws_predicted_step_s": round(row.result.step_time_s, 4), "moe54_events_s": round(moe54_events[i], 7)}


def register(path: Path) -> None:
    import yaml

    ev = {r["row"]: r["events_s"] for r in moe54.read_out(moe54.BUNDLE)["rows"]}
    doc = {"set": "moe54c", "issue": 44, "commit": registering_commit(ROOT), "card": str(moe54.H200_CARD.relative_to(ROOT)),
           "trace": f"runs/{TRACE}", "published": f"calibration/published/{moe54.STEM}.yaml",
           "bridge": "calibration/h200x1-moe54-2026-12-01 (runs/moe54.json)", "rule": RULE,
           "thresholds": {"r_low": R_LOW, "r_at": R_AT, "r_far": R_FAR, "host_bound": HOST_BOUND, "term_close_pct": TERM_CLOSE,
                          "term_narrow_pct": TERM_NARROW, "price_pct": PRICE_PCT, "bridge_tol": BRIDGE_TOL},
           "rows": [predict(i, ev) for i in ROWS]}
    write_registration(path, "# registered before the run (validation/moe54c.py --register): today's model, the rules\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def read_trace(path: Path) -> dict:
    """{(impl, cell, pass, clock): record} of a full H200 run; one SimclusterError line for anything else."""
    try:
        doc = json.loads(path.read_text())
        recs = {(r["impl"], r["cell"], r["pass"], r["clock"]): r for r in doc["records"] if "error" not in r}
        failed = {(r["impl"], r["cell"]): r["error"] for r in doc["records"] if "error" in r}
        device = dict(doc["device"])
    except FileNotFoundError:
        raise SimclusterError(f"{path}: missing (the device call's trace)") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SimclusterError(f"{path}: not a moe54c trace ({type(exc).__name__}: {exc})") from None
    if doc.get("quick"):
        raise SimclusterError(f"{path}: a --quick dry run, not the registered measurement")
    for key in ((i, c, p, k) for i in IMPLS for c in CELLS for p in PASSES for k in ("events", "kernels")):
        r = recs.get(key)
        try:
            if r is None or not float(r["time_s"]) > 0:
                raise ValueError
        except (KeyError, TypeError, ValueError):
            why = f" (failed: {failed[key[:2]]})" if key[:2] in failed else f" ({device['stopped']})" if "stopped" in device else ""
            raise SimclusterError(f"{path}: no positive time_s for impl {key[0]} cell {key[1]} pass {key[2]} clock {key[3]}{why}") from None
    return {"device": device, "records": recs, "mcore": doc.get("mcore")}


def _t(tr: dict, impl: str, r: dict, clock: str) -> float:
    return float(tr["records"][(impl, r["cell"], r["pass"], clock)]["time_s"])


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"set": "moe54c"})
    tr = read_trace(Path(bundle) / "runs" / TRACE)
    rows = []
    try:
        for r in reg["rows"]:
            em, km, et, kt = (_t(tr, i, r, k) for i in IMPLS for k in ("events", "kernels"))
            rows.append({**r, "em": em, "km": km, "et": et, "kt": kt, "c_direct": (em - float(r["r_s"])) / int(r["n_calls"]),
                         "c_torch": (et - float(r["r_s"])) / int(r["n_calls"])})
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: a row without {exc} (expected cell, pass, n_calls, r_s, ...)") from None
    if [r["row"] for r in rows] != list(ROWS):
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows {[r['row'] for r in rows]}, expected {list(ROWS)}")
    return {"tr": tr, "rows": rows, "verdicts": verdicts(rows)}


def whatif(rows: list[dict], cs: float) -> tuple[float, list[float]]:
    """The AWS rows' errors (measured / step - 1) under the floor at c_s, and their mean |error| in %."""
    errs = []
    for r in rows:
        delta = max(0.0, int(r["n_calls"]) * cs + float(r["r_s"]) - float(r["c_pass_s"]) - float(r["h_pass_s"]))
        errs.append(float(r["aws_measured_step_s"]) / (float(r["aws_predicted_step_s"]) + delta * float(r["per"])) - 1)
    return 100 * statistics.mean(abs(e) for e in errs), errs


def verdicts(rows: list[dict]) -> dict:
    host = [r for r in rows if r["row"] in HOST_ROWS]
    ratio = statistics.median(r["em"] / r["et"] for r in host)
    c = float(rows[0]["c_s"])
    cs = c * ratio
    bound = all(r["km"] <= HOST_BOUND * r["em"] and r["kt"] <= HOST_BOUND * r["et"] for r in host)
    band = ("BELOW C" if ratio < R_LOW else "AT C" if ratio <= R_AT else "ABOVE C" if ratio <= R_FAR else "FAR ABOVE C")
    cs_v = band if bound else f"UNDECIDED (not host-bound: {band} if read anyway)"
    mean, errs = whatif(rows, cs)
    signed = 100 * statistics.mean(errs)
    term = ("CLOSES" if mean <= TERM_CLOSE else "OVERSHOOTS" if signed < -TERM_CLOSE else "NARROWS" if mean <= TERM_NARROW
            else "SHORT")
    perr = [r["p_local_s"] / r["em"] - 1 for r in rows]
    pm, ps = 100 * statistics.mean(map(abs, perr)), 100 * statistics.mean(perr)
    bridge = statistics.median(r["et"] / float(r["moe54_events_s"]) for r in rows)
    return {"ratio": ratio, "cs": cs, "term_errs": errs,
            "CS": f"{cs_v} (r {ratio:.3f}, c_s {1e6 * cs:.1f} us a modelled call against c {1e6 * c:.1f} us)",
            "TERM": f"{term} (AWS rows, development: mean |error| {mean:.1f}%, signed {signed:+.1f}% at c_s {1e6 * cs:.1f} us; errors "
                    + " / ".join(f"{100 * e:+.1f}%" for e in errs) + ")",
            "PRICE": f"{'HOLDS' if pm <= PRICE_PCT else 'OFF'} (mean |p_local / mcore events - 1| {pm:.1f}%, signed {ps:+.1f}%; + = model slower)",
            "BRIDGE": f"{'REPEATS' if abs(bridge - 1) <= BRIDGE_TOL else 'DRIFTS'} (median torch events / moe54's {bridge:.3f})"}


def show(res: dict) -> None:
    tr, ms = res["tr"], 1e3
    dev = tr["device"]
    print(f"# device {dev.get('name')} torch {dev.get('torch')} cuda {dev.get('cuda')}; megatron-core {tr.get('mcore')}")
    for cell in CELLS:
        for pas in PASSES:
            line = []
            for impl in IMPLS:
                e, k = tr["records"][(impl, cell, pas, "events")], tr["records"][(impl, cell, pas, "kernels")]
                n = float(k.get("n_kernels") or 0)
                line.append(f"{impl} events {ms * float(e['time_s']):7.3f} ms kernels {ms * float(k['time_s']):7.3f} ms ({n:.0f}, "
                            f"{1e6 * float(e['time_s']) / n if n else 0:5.1f} us of events a kernel)")
            print(f"# {cell:<9} {pas:<9} " + " | ".join(line))
    print("row  cell      pass       p_local   mcore ev  error   mcore ker  torch ev  moe54 ev  mcore/torch  N   R (ms)  c_direct  c_torch (us)")
    for r in res["rows"]:
        print(f"{r['row']:>3}  {r['cell']:<9} {r['pass']:<10} {ms * r['p_local_s']:7.3f}  {ms * r['em']:8.3f}  "
              f"{100 * (r['p_local_s'] / r['em'] - 1):+6.1f}%  {ms * r['km']:8.3f}  {ms * r['et']:8.3f}  {ms * float(r['moe54_events_s']):8.3f}  "
              f"{r['em'] / r['et']:10.3f}  {r['n_calls']:>3}  {ms * float(r['r_s']):5.2f}  {1e6 * r['c_direct']:7.1f}  {1e6 * r['c_torch']:7.1f}")
    v = res["verdicts"]
    print(f"# c_direct (mcore events - R) / N, median over the 6 rows: {1e6 * statistics.median(r['c_direct'] for r in res['rows']):.1f} us; "
          f"over rows {HOST_ROWS}: {1e6 * statistics.median(r['c_direct'] for r in res['rows'] if r['row'] in HOST_ROWS):.1f} us (printed, judging nothing)")
    for cs in (float(res["rows"][0]["c_s"]), v["cs"]):
        print(f"# AWS what-if at c_s {1e6 * cs:.1f} us: mean |error| {whatif(res['rows'], cs)[0]:.1f}%")
    for key in ("CS", "TERM", "PRICE", "BRIDGE"):
        print(f"RULE {key}: {v[key]}")


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
