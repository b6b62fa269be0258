"""Issue 44, session 55 (helper hfhook55): the Hugging Face hook term (llm/hf_hooks.py, OFF in the product) on held-out
shapes: accelerate's FSDP1 and DeepSpeed ZeRO-3 around a Hugging Face Llama on ONE H200, plain eager beside them as the
control (calibration/h200x1-hfhook55-2026-12-01, studies/hfhook55_device.py: hfdev55's measurement at new shapes).

    python validation/hfhook55.py --register calibration/h200x1-hfhook55-2026-12-01/registered.yaml   # before the run
    python validation/hfhook55.py [calibration/h200x1-hfhook55-2026-12-01]                            # after: the read-out

Registered per (size, point, variant), one GPU on heldout/eager_registered.FLAG_CARD, the one-GPU host fits FLAG_HOSTS:
  eager  P_off = P_on = `torch-amp` with the host fits (as hfdev55's eager rows; the term does not touch it);
  fsdp1  P_off = `hf-fsdp1` at parallel.zero 3, dp 1 (no host priced, the product today); P_on = the same with the term
         switched on (hf_hooks.priced: torch-amp's issue a layer + h_f, the host fit's fixed step seconds);
  zero3  likewise with `hf-deepspeed` (overlap_comm false, as run) and h_z.
Measured (runs/hfhook55.json: eager and fsdp1; runs/hfhook55-z3.json: zero3): per configuration the median over the timed
steps of the CUDA-event step (events). Rules (thresholds fixed before the run; one RULE line each):
  TERM   over the 12 wrapper rows (fsdp1 and zero3): mean |P_on / events - 1| <= 15% AND at least 30 points below the same
         mean of P_off: HOLDS, else FAILS. NOT RUN if any zero3 row did not run (then TERM-FSDP1 is the only term verdict).
  TERM-FSDP1  the same over the 6 fsdp1 rows.
  EAGER  (control) mean |P / events - 1| over the 6 eager rows <= 10%: HOLDS, else OFF (hfdev55's EAGER, new shapes).
The eager and fsdp1 rows must all have run (else one error line naming the configuration).
Printed, judging nothing: per row P_off, P_on, events and both errors; per point each wrapper's measured hook host time
h = (issue_wrapper - issue_eager) / layers against the term's constant.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))
sys.path.insert(0, str(ROOT / "validation"))

from hfdev55 import measured, read_trace  # noqa: E402
from hfhook55_device import POINTS, SIZES  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-hfhook55-2026-12-01"
TRACE, TRACE_Z3 = "hfhook55.json", "hfhook55-z3.json"
VARIANTS = ("eager", "fsdp1", "zero3")
FRAMEWORK = {"eager": "torch-amp", "fsdp1": "hf-fsdp1", "zero3": "hf-deepspeed"}
OPTIONAL = "zero3"
TERM_PCT, TERM_GAIN_PTS, EAGER_PCT = 15.0, 30.0, 10.0
RULE = {"TERM": f"over the 12 wrapper rows mean |P_on / events - 1| <= {TERM_PCT}% and >= {TERM_GAIN_PTS} points below P_off's: "
                "HOLDS, else FAILS; NOT RUN if any zero3 row did not run",
        "TERM-FSDP1": f"the same over the 6 fsdp1 rows (<= {TERM_PCT}%, >= {TERM_GAIN_PTS} points below P_off's): HOLDS, else FAILS",
        "EAGER": f"mean |P / events - 1| over the 6 eager rows <= {EAGER_PCT}%: HOLDS, else OFF"}


def predict(size: str, point: str, variant: str) -> dict:
    """A row's registered figures (module docstring): seconds."""
    from simcluster.heldout.eager_registered import _flag_hosts
    from simcluster.llm import eager, hf_hooks
    from simcluster.llm.comm import Network
    from simcluster.llm.framework import FRAMEWORKS
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

    hosts, gpu = _flag_hosts()
    layers, hidden, ffn, heads, kv_heads, vocab = SIZES[size]
    mb, seq = POINTS[point]
    model, batch = TransformerSpec(layers, hidden, ffn, heads, kv_heads, vocab, seq, tied_embeddings=False), BatchSpec(mb, mb)
    par = ParallelSpec() if variant == "eager" else ParallelSpec(zero=3)

    def step(fw):
        return predict_llm(model, par, batch, gpu, Network(None, 1), 1, trace=False, framework=fw).step_time_s
    if variant == "eager":
        off = on = step(eager.torch_framework(par, hosts))
    else:
        fw = FRAMEWORKS[FRAMEWORK[variant]]
        off = step(hf_hooks.priced(fw, model, par, batch, hosts))   # off: fw itself
        with hf_hooks.switched_on():
            on = step(hf_hooks.priced(fw, model, par, batch, hosts))
    return {"name": f"{size}-{point}-{variant}", "size": size, "point": point, "variant": variant, "framework": FRAMEWORK[variant],
            "layers": layers, "micro_batch": mb, "seq": seq, "p_s": round(off, 7), "p_on_s": round(on, 7)}


def register(path: Path) -> None:
    import yaml

    from simcluster.heldout.eager_registered import FLAG_CARD, FLAG_HOSTS
    from simcluster.llm import hf_hooks

    doc = {"set": "hfhook55", "issue": 44, "commit": registering_commit(ROOT), "card": FLAG_CARD, "host_fits": list(FLAG_HOSTS),
           "trace": f"runs/{TRACE}", "trace_zero3": f"runs/{TRACE_Z3}", "rule": RULE,
           "hooks_s": {"hf-fsdp1": hf_hooks.HOOK_FSDP1_S, "hf-deepspeed": hf_hooks.HOOK_ZERO3_S},
           "thresholds": {"term_pct": TERM_PCT, "term_gain_pts": TERM_GAIN_PTS, "eager_pct": EAGER_PCT},
           "rows": [predict(size, point, v) for size in SIZES for point in POINTS for v in VARIANTS]}
    write_registration(path, "# registered before the run (validation/hfhook55.py --register): today's model, the term on and off, the rules\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def mean_abs_pct(rows: list[dict], key: str) -> float:
    return 100 * sum(abs(r[key] / r["events_s"] - 1) for r in rows) / len(rows)


def term(rows: list[dict]) -> str:
    on, off = mean_abs_pct(rows, "p_on_s"), mean_abs_pct(rows, "p_s")
    ok = on <= TERM_PCT and off - on >= TERM_GAIN_PTS
    signed = 100 * sum(r["p_on_s"] / r["events_s"] - 1 for r in rows) / len(rows)
    return (f"{'HOLDS' if ok else 'FAILS'} (ON mean |error| {on:.1f}%, signed {signed:+.1f}%; OFF {off:.1f}%; {off - on:.1f} points "
            f"better; rule ON <= {TERM_PCT}% and >= {TERM_GAIN_PTS} points below OFF; {len(rows)} rows)")


def verdicts(rows: list[dict], skipped: str) -> dict:
    wrappers = [r for r in rows if r["variant"] != "eager"]
    eag = mean_abs_pct([r for r in rows if r["variant"] == "eager"], "p_s")
    signed = 100 * sum(r["p_s"] / r["events_s"] - 1 for r in rows if r["variant"] == "eager") / 6
    return {"TERM": f"NOT RUN ({skipped})" if skipped else term(wrappers),
            "TERM-FSDP1": term([r for r in rows if r["variant"] == "fsdp1"]),
            "EAGER": f"{'HOLDS' if eag <= EAGER_PCT else 'OFF'} (mean |P / events - 1| {eag:.1f}%, signed {signed:+.1f}%; rule <= {EAGER_PCT}%)"}


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"set": "hfhook55"})
    path, z3_path = Path(bundle) / "runs" / TRACE, Path(bundle) / "runs" / TRACE_Z3
    tr = read_trace(path)
    z3_note = ""
    try:   # optional: its failure is TERM's NOT RUN reason
        tr["records"].update({k: v for k, v in read_trace(z3_path)["records"].items() if k[2] == OPTIONAL})
    except SimclusterError as exc:
        z3_note = str(exc)
    want = {(s, p, v) for s in SIZES for p in POINTS for v in VARIANTS}
    try:
        have = [(r["size"], r["point"], r["variant"]) for r in reg["rows"]]
    except (KeyError, TypeError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: a row without {exc} (expected size, point, variant, p_s, p_on_s)") from None
    if set(have) != want or len(have) != len(want):
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
    return {"tr": tr, "rows": rows, "verdicts": verdicts(rows, skipped), "hooks": reg.get("hooks_s", {})}


def show(res: dict) -> None:
    env, ms = res["tr"]["env"], 1e3
    print(f"# device {env.get('device')} torch {env.get('torch')} cuda {env.get('cuda')} backend {env.get('backend')} world {env.get('world_size')}")
    print("row                     framework      P_off    P_on   events   OFF err   ON err   issue")
    for r in res["rows"]:
        print(f"{r['name']:<23} {r['framework']:<12} {ms * r['p_s']:8.2f} {ms * r['p_on_s']:7.2f} {ms * r['events_s']:8.2f}  "
              f"{100 * (r['p_s'] / r['events_s'] - 1):+7.1f}%  {100 * (r['p_on_s'] / r['events_s'] - 1):+6.1f}%  {ms * r['issue_s']:7.2f}")
    by = {(r["size"], r["point"], r["variant"]): r for r in res["rows"]}
    for variant, name in (("fsdp1", "hf-fsdp1"), ("zero3", "hf-deepspeed")):
        hs = [(by[(s, p, variant)]["issue_s"] - by[(s, p, "eager")]["issue_s"]) / by[(s, p, "eager")]["layers"]
               for s in SIZES for p in POINTS if (s, p, variant) in by]
        if hs:
            print(f"# {variant}: measured hook host h median {1e6 * statistics.median(hs):.0f} us a layer a step "
                  f"({1e6 * min(hs):.0f}..{1e6 * max(hs):.0f}); the term's {1e6 * res['hooks'].get(name, 0.0):.0f} us")
    for key in ("TERM", "TERM-FSDP1", "EAGER"):
        print(f"RULE {key}: {res['verdicts'][key]}")


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
