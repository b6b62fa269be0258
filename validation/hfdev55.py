"""Issue 44, session 55 (helper hfdev55): accelerate's FSDP1 and DeepSpeed ZeRO-3 around a Hugging Face Llama on ONE H200
against the `hf-fsdp1` and `hf-deepspeed` frameworks, whose answers say the per-module hook host time is not priced; plain
eager (the `torch-amp` framework's mechanism) beside them as the reference (calibration/h200x1-hfdev55-2026-12-01,
studies/hfdev55_device.py).

    python validation/hfdev55.py --register calibration/h200x1-hfdev55-2026-12-01/registered.yaml   # before the run
    python validation/hfdev55.py [calibration/h200x1-hfdev55-2026-12-01]                            # after: the read-out

Registered per (size, point, variant), today's model on FLAG_CARD (heldout/eager_registered's one-GPU card), one GPU:
  eager  P = `torch-amp` with the one-GPU host fits (heldout/eager_registered.FLAG_HOSTS through eager.torch_framework,
         as the eager-today set's one-GPU rows are predicted); P_gpu = plain `torch-amp` (no host priced);
  fsdp1  P = P_gpu = `hf-fsdp1` at parallel.zero 3, dp 1 (nothing fitted; no host priced);
  zero3  P = P_gpu = `hf-deepspeed` (overlap_comm false, as run) at parallel.zero 3, dp 1 (likewise).
Measured (runs/hfdev55.json: eager and fsdp1; runs/hfdev55-z3.json: zero3): per configuration the median over the
timed steps of the CUDA-event step (events) and of the host's issue time (issue). Rules (thresholds fixed before the run; one RULE line each):
  HOOK   h = (issue_fsdp1 - issue_eager) / layers per point, seconds a decoder layer a step (the wrapper's host time;
         the model's: 0): median over the 6 points >= 100 us: REAL; <= 25 us: NEGLIGIBLE; else SMALL.
  HOOK-Z3  the same of issue_zero3.
  PRICE  mean |P / events - 1| over the 6 fsdp1 rows <= 10%: HOLDS, else OFF (the signed mean printed; + = model slower).
  PRICE-Z3  the same over the 6 zero3 rows.
  EAGER  mean |P / events - 1| over the 6 eager rows <= 10%: HOLDS, else OFF (do the one-GPU host fits carry to this
         transformers-shaped model?).
The eager and fsdp1 rows must all have run (else one error line); if any zero3 row did not run (no deepspeed on the
device, a failure), HOOK-Z3 and PRICE-Z3 read NOT RUN with the first reason, and the rest is read.
Printed, judging nothing: per row P, P_gpu, events, issue, peak memory against the model's; per point each wrapper's
step excess over eager and the what-if P_eager + layers x h against its events.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from hfdev55_device import POINTS, SIZES, VARIANTS  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-hfdev55-2026-12-01"
TRACE = "hfdev55.json"           # eager and fsdp1 (one device invocation)
TRACE_Z3 = "hfdev55-z3.json"      # zero3 (its own invocation: a DeepSpeed hang or crash leaves the other trace whole)
FRAMEWORK = {"eager": "torch-amp", "fsdp1": "hf-fsdp1", "zero3": "hf-deepspeed"}
WRAPPERS = ("fsdp1", "zero3")
OPTIONAL = "zero3"   # its rows may be missing (the carried deepspeed wheel); the others may not
HOOK_REAL_S, HOOK_NEGLIGIBLE_S, PRICE_PCT = 100e-6, 25e-6, 10.0
RULE = {"HOOK": "median over the 6 points of (issue_fsdp1 - issue_eager) / layers >= 100 us: REAL; <= 25 us: NEGLIGIBLE; else SMALL",
        "HOOK-Z3": "median over the 6 points of (issue_zero3 - issue_eager) / layers >= 100 us: REAL; <= 25 us: NEGLIGIBLE; else SMALL",
        "PRICE": f"mean |P / events - 1| over the 6 fsdp1 rows <= {PRICE_PCT}%: HOLDS, else OFF",
        "PRICE-Z3": f"mean |P / events - 1| over the 6 zero3 rows <= {PRICE_PCT}%: HOLDS, else OFF; NOT RUN if any zero3 row did not run",
        "EAGER": f"mean |P / events - 1| over the 6 eager rows <= {PRICE_PCT}%: HOLDS, else OFF"}


def model_of(size: str, seq: int):
    from simcluster.llm.spec import TransformerSpec

    layers, hidden, ffn, heads, kv_heads, vocab = SIZES[size]
    return TransformerSpec(layers, hidden, ffn, heads, kv_heads, vocab, seq, tied_embeddings=False)


def predict(size: str, point: str, variant: str) -> dict:
    """Row's registered figures (module docstring), seconds and GiB."""
    from simcluster.heldout.eager_registered import _flag_hosts
    from simcluster.llm import eager
    from simcluster.llm.comm import Network
    from simcluster.llm.framework import FRAMEWORKS
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec, ParallelSpec

    hosts, gpu = _flag_hosts()
    mb, seq = POINTS[point]
    model, batch = model_of(size, seq), BatchSpec(mb, mb)

    def run(par, fw):
        return predict_llm(model, par, batch, gpu, Network(None, 1), 1, trace=False, framework=fw)
    if variant == "eager":
        r, g = run(ParallelSpec(), eager.torch_framework(ParallelSpec(), hosts)), run(ParallelSpec(), FRAMEWORKS["torch-amp"])
    else:
        r = g = run(ParallelSpec(zero=3), FRAMEWORKS[FRAMEWORK[variant]])
    return {"name": f"{size}-{point}-{variant}", "size": size, "point": point, "variant": variant, "framework": FRAMEWORKS[FRAMEWORK[variant]].name,
            "host_fits": variant == "eager", "layers": model.layers, "micro_batch": mb, "seq": seq,
            "p_s": round(r.step_time_s, 7), "p_gpu_s": round(g.step_time_s, 7),
            "host_share": None if r.host_share is None else round(r.host_share, 4),
            "memory_gib": round(float(r.memory_per_gpu_GiB["total"]), 3)}


def register(path: Path) -> None:
    import yaml

    from simcluster.heldout.eager_registered import FLAG_CARD, FLAG_HOSTS

    doc = {"set": "hfdev55", "issue": 44, "commit": registering_commit(ROOT), "card": FLAG_CARD, "host_fits": list(FLAG_HOSTS),
           "trace": f"runs/{TRACE}", "trace_zero3": f"runs/{TRACE_Z3}", "rule": RULE,
           "thresholds": {"hook_real_s": HOOK_REAL_S, "hook_negligible_s": HOOK_NEGLIGIBLE_S, "price_pct": PRICE_PCT},
           "rows": [predict(size, point, v) for size in SIZES for point in POINTS for v in VARIANTS]}
    write_registration(path, "# registered before the run (validation/hfdev55.py --register): today's model, the rules\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def read_trace(path: Path) -> dict:
    """{(size, point, variant): record} of a full GPU run; one SimclusterError line for anything else."""
    try:
        doc = json.loads(path.read_text())
        recs = {(r["size"], r["point"], r["variant"]): r for r in doc["records"]}
        env = dict(doc["env"])
    except FileNotFoundError:
        raise SimclusterError(f"{path}: missing (the device call's trace)") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SimclusterError(f"{path}: not an hfdev55 trace ({type(exc).__name__}: {exc})") from None
    if env.get("quick") or env.get("device") == "cpu":
        raise SimclusterError(f"{path}: a --quick / CPU dry run, not the registered measurement")
    return {"env": env, "records": recs}


def measured(path: Path, recs: dict, reg: dict) -> dict:
    key = (reg["size"], reg["point"], reg["variant"])
    r = recs.get(key)
    where = f"{path}: size {key[0]} point {key[1]} variant {key[2]}"
    if r is None:
        raise SimclusterError(f"{where}: no record")
    if r.get("status") != "ok":
        raise SimclusterError(f"{where}: status {r.get('status')!r}, expected 'ok'")
    try:
        ev, iss = float(r["median_events_s"]), float(r["median_issue_s"])
        same = (int(r["layers"]), int(r["micro_batch"]), int(r["seq"])) == (int(reg["layers"]), int(reg["micro_batch"]), int(reg["seq"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{where}: expected positive median_events_s / median_issue_s, layers, micro_batch, seq ({exc})") from None
    if not (ev > 0 and iss > 0):
        raise SimclusterError(f"{where}: expected positive median_events_s and median_issue_s, got {ev} / {iss}")
    if not same:
        raise SimclusterError(f"{where}: ran layers / micro_batch / seq {r['layers']} / {r['micro_batch']} / {r['seq']}, "
                              f"registered {reg['layers']} / {reg['micro_batch']} / {reg['seq']}")
    fwd, bwd = (statistics.median(r[k]) if isinstance(r.get(k), list) and r[k] else None for k in ("issue_fwd_s", "issue_bwd_s"))
    return {**reg, "events_s": ev, "issue_s": iss, "fwd_s": fwd, "bwd_s": bwd, "peak_bytes": r.get("peak_bytes"), "sharding": r.get("sharding_strategy"),
            "units": r.get("fsdp_units"), "spread_s": (min(r.get("events_s") or [ev]), max(r.get("events_s") or [ev]))}


def verdicts(rows: list[dict], skipped: str) -> dict:
    by = {(r["size"], r["point"], r["variant"]): r for r in rows}
    points = [(s, p) for s in SIZES for p in POINTS]
    out = {"hooks": {}}
    for variant, hook_key, price_key in (("fsdp1", "HOOK", "PRICE"), ("zero3", "HOOK-Z3", "PRICE-Z3")):
        if variant == OPTIONAL and skipped:
            out[hook_key] = out[price_key] = f"NOT RUN ({skipped})"
            continue
        hooks = [(by[(s, p, variant)]["issue_s"] - by[(s, p, "eager")]["issue_s"]) / by[(s, p, "eager")]["layers"] for s, p in points]
        h = statistics.median(hooks)
        hook = "REAL" if h >= HOOK_REAL_S else "NEGLIGIBLE" if h <= HOOK_NEGLIGIBLE_S else "SMALL"
        out["hooks"][variant] = hooks
        out[hook_key] = (f"{hook} (median {1e6 * h:.0f} us a layer a step, range {1e6 * min(hooks):.0f}..{1e6 * max(hooks):.0f} us; "
                         f"thresholds {1e6 * HOOK_REAL_S:.0f} / {1e6 * HOOK_NEGLIGIBLE_S:.0f} us; the model prices 0)")
        out[price_key] = price(rows, variant)
    out["EAGER"] = price(rows, "eager")
    return out


def price(rows: list[dict], variant: str) -> str:
    errs = [r["p_s"] / r["events_s"] - 1 for r in rows if r["variant"] == variant]
    mean_abs, signed = 100 * sum(map(abs, errs)) / len(errs), 100 * sum(errs) / len(errs)
    return (f"{'HOLDS' if mean_abs <= PRICE_PCT else 'OFF'} (mean |P / events - 1| {mean_abs:.1f}%, signed {signed:+.1f}%; "
            f"+ = model slower; rule <= {PRICE_PCT}%)")


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"set": "hfdev55"})
    path = Path(bundle) / "runs" / TRACE
    tr = read_trace(path)
    z3_path, z3_note = Path(bundle) / "runs" / TRACE_Z3, ""
    try:   # optional: its failure is the zero3 rules' NOT RUN reason
        z3 = read_trace(z3_path)["records"]
        tr["records"].update({k: v for k, v in z3.items() if k[2] == OPTIONAL})
    except SimclusterError as exc:
        z3_note = str(exc)
    want = {(s, p, v) for s in SIZES for p in POINTS for v in VARIANTS}
    try:
        have = {(r["size"], r["point"], r["variant"]) for r in reg["rows"]}
    except (KeyError, TypeError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: a row without {exc} (expected size, point, variant, p_s, ...)") from None
    if have != want or len(reg["rows"]) != len(want):
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows {sorted(have)}, expected the {len(want)} of SIZES x POINTS x VARIANTS")
    rows, skipped = [], ""
    for r in reg["rows"]:
        try:
            rows.append(measured(z3_path if r["variant"] == OPTIONAL else path, tr["records"], r))
        except SimclusterError as exc:
            if r["variant"] != OPTIONAL:
                raise
            skipped = skipped or z3_note or str(exc)
    rows = [r for r in rows if not (skipped and r["variant"] == OPTIONAL)]
    return {"tr": tr, "rows": rows, "verdicts": verdicts(rows, skipped)}


def show(res: dict) -> None:
    env, ms = res["tr"]["env"], 1e3
    print(f"# device {env.get('device')} torch {env.get('torch')} cuda {env.get('cuda')} backend {env.get('backend')} world {env.get('world_size')}")
    print("row                     framework   P (ms)  P_gpu   events  (min..max)       error   issue   peak GiB (model)  sharding")
    for r in res["rows"]:
        peak = "-" if r["peak_bytes"] is None else f"{r['peak_bytes'] / 2**30:.2f}"
        print(f"{r['name']:<23} {r['framework']:<12} {ms * r['p_s']:7.2f} {ms * r['p_gpu_s']:7.2f} {ms * r['events_s']:8.2f}  "
              f"({ms * r['spread_s'][0]:.2f}..{ms * r['spread_s'][1]:.2f})  {100 * (r['p_s'] / r['events_s'] - 1):+6.1f}%  "
              f"{ms * r['issue_s']:7.2f}  {peak} ({r['memory_gib']:.2f})  {r['sharding'] or '-'} {r['units'] or ''}")
    by = {(r["size"], r["point"], r["variant"]): r for r in res["rows"]}
    for variant, hooks in res["verdicts"]["hooks"].items():
        for (s, p), h in zip(((s, p) for s in SIZES for p in POINTS), hooks, strict=True):
            e, f = by[(s, p, "eager")], by[(s, p, variant)]
            what_if = e["p_s"] + e["layers"] * h
            split = ""
            if None not in (e["fwd_s"], e["bwd_s"], f["fwd_s"], f["bwd_s"]):   # the host's issue by phase: forward, backward, step
                parts = (f["fwd_s"] - e["fwd_s"], (f["bwd_s"] - f["fwd_s"]) - (e["bwd_s"] - e["fwd_s"]),
                         (f["issue_s"] - f["bwd_s"]) - (e["issue_s"] - e["bwd_s"]))
                split = " (forward / backward / step {:.0f} / {:.0f} / {:.0f} us)".format(*(1e6 * x / e["layers"] for x in parts))
            print(f"# {variant} {s} {p}: hook host h {1e6 * h:.0f} us a layer{split}; step excess over eager "
                  f"{ms * (f['events_s'] - e['events_s']):+.2f} ms; what-if P_eager + layers x h {ms * what_if:.2f} ms against events "
                  f"{ms * f['events_s']:.2f} ms ({100 * (what_if / f['events_s'] - 1):+.1f}%)")
    for key in ("HOOK", "HOOK-Z3", "PRICE", "PRICE-Z3", "EAGER"):
        print(f"RULE {key}: {res['verdicts'][key]}")


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
