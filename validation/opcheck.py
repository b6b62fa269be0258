"""Issue 44, session 44: a held-out check of the product's ckpt and op host terms (engineer hostproduct, today:
docs/models/llm.md "The ckpt and op host terms at the product's host speed"; heldout/eager.MODE_HOST's leases.yaml
`{scaled_to: single, leases}`, llm/eager.lease_scaling) on a fresh lease. A registered 1-GPU set on the 2 x H200
machine (calibration/h200x2-opcheck-2026-11-30, GPU 0 only: CUDA_VISIBLE_DEVICES=0, llm-step --mode single): four
shapes new to calibration/ -- two op-policy (--ac-mode op), one host-bound and one not, and two full activation
checkpointing (--activation-checkpointing, the runner's ckpt), one host-bound and one not -- each in three separate
processes, led by this lease's own hidden-128 host probe (single, op and ckpt at 2 and 32 layers).

    python validation/opcheck.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/opcheck.py [calibration/BUNDLE]                            # after: read-out and verdicts

Registered per shape (judged): the PRODUCT's step, host share, flag and memory range -- today's model with the CLI's
default host folder (heldout/eager.MODE_HOST, as `simcluster run` answers), whose ckpt term is 31.55 us per kernel +
2.70 ms per step and op's 55.91 us + 3.66 ms since hostproduct; beside it, for rule C, the same model with
eager.leases_unread(("ckpt", "op")): the product before hostproduct (ckpt and op at single's 24.71 us, unsplit). The
hostproduct terms' evidence (hostsingle's 12 processes, the leases it pools) is development; nothing in this set is.
The reading machinery is hostsingle's (validation/hostsingle.py: predict, read_processes) and heldout/registration.py's (bias_line and the rest).
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import (  # noqa: E402
    bias_line,
    mem_error,
    memory_verdict,
    noise_verdict,
    print_rows,
    read_run_set,
    registering_commit,
    set_main,
    write_registration,
)
from validation.hostsingle import predict, read_processes  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-opcheck-2026-11-30"
# (name, preset, seq, micro-batch, llm-step --ac-mode (full: --activation-checkpointing)): runs/NAME-rK.json, K = 1..3
SHAPES = (("ophb-0.5b", "0.5b", 1472, 2, "op"), ("op-1b", "1b", 2240, 2, "op"),
          ("ckhb-0.5b", "0.5b", 960, 2, "full"), ("ck-0.8b", "0.8b", 2432, 2, "full"))
PROCESSES = 3
HOST_PROBE = ("single-L2", "single-L32", "op-L2", "op-L32", "ckpt-L2", "ckpt-L32")   # runs/host/NAME.json (128:1)
TERM = {"op": "op", "full": "ckpt"}   # llm-step's ac mode -> the host term (llm/eager.fit_modes' mode) it is priced with
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05, "better_pts": 1.0}
RULES = {
    "measured": "each process's median step (llm-step --mode single on GPU 0, 5 warm-up and 20 timed steps)",
    "N": "pooled sd of the log of each process's median step over the processes of one shape, its dof, and the mean "
         "|error| that process noise alone gives a model exactly on each shape's mean, sqrt(2/pi) sd: ABOVE the target "
         "(target_pct) or below it",
    "M": "per regime (term ckpt / op, + host-bound by the product's registered flag), the product's mean |error| over its "
         "processes (error = predicted.product / measured - 1) <= target_pct -> 'within', else 'not within'",
    "B": "per regime and per term, the product's lease bias b = mean log error, se = sd / sqrt(n): SLOW if b > bias_band "
         "and b - 2 se > 0; FAST if b < -bias_band and b + 2 se < 0; NONE if |b| + 2 se <= bias_band; else UNDECIDED "
         "(fewer than 3 processes: NO DATA)",
    "C": "per regime and per term, the product's mean |error| against the pre-hostproduct product's (predicted.before) "
         "on the same processes: BETTER if lower by more than better_pts percentage points, WORSE if higher by more, "
         "else SAME",
    "O": "per regime, the model with this lease's own host fits (runs/host: single, op, ckpt via llm/eager.fit_modes) "
         "in place of the product's folder: mean |error| within target_pct or not, and its lease bias; beside it this "
         "lease's own per-kernel costs against the product's terms",
    "P": "every process's peak memory (max_memory_allocated_bytes) within mem_pct of the registered range "
         "[steady_mem_GiB, peak_mem_GiB] (0 inside it) -> 'memory met', else 'memory not met'",
    "D": "per term (ckpt, op; its two regimes' processes): NOISE if N is ABOVE the target (nothing follows for the term); "
         "else REVERTED if C is WORSE for the term (the mode's leases.yaml entry goes, back to FALLBACK); else ADOPTED "
         "STAYS if M is within for both its regimes; else ADOPTED STAYS (lease) if O is within for every regime M "
         "misses (the miss is this lease's host speed: a band input, not a term); else NEXT TERM (the host term is not "
         "the remaining miss: another term of the regimes M misses); NO DATA without processes",
}


def group_of(ac_mode: str, host_bound: bool) -> str:
    return TERM[ac_mode] + ("+host-bound" if host_bound else "")


def trust_regime(ac_mode: str, host_bound: bool) -> str:
    """trust/regime.llm_regime's key of a single-GPU eager row (full checkpointing is pooled with none: `single`)."""
    return "llm | PyTorch eager | {} | bf16".format("single" + ("+sac-op" if ac_mode == "op" else "")
                                                    + ("+host-bound" if host_bound else ""))


def host_terms(folder: Path) -> dict:
    """single's, ckpt's and op's host seconds per kernel and per step of `folder` (llm/eager.fit_modes; leases.yaml read
    unless inside eager.leases_unread)."""
    from simcluster.llm.eager import fit_modes

    fits = fit_modes(folder)
    return {m: {"per_kernel_s": round(fits[m][0], 9), "per_step_s": round(fits[m][1], 7)}
            for m in ("single", "ckpt", "op") if m in fits}


def registration_rows() -> list[dict]:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm.eager import leases_unread
    from simcluster.llm.host_bound import is_host_bound

    rows = []
    for name, preset, seq, mb, ac in SHAPES:
        p = predict(preset, seq, mb, ac, MODE_HOST, memory=True)
        with leases_unread(("ckpt", "op")):
            before = predict(preset, seq, mb, ac, MODE_HOST)
        flag = is_host_bound(p["host_share"])
        rows.append({"name": name, "group": group_of(ac, flag), "regime": trust_regime(ac, flag), "mode": "single",
                     "preset": preset, "seq": seq, "micro_batch": mb, "compile": False, "ac_mode": ac, "microbatches": 1,
                     "processes": PROCESSES, "predicted": {"product": p | {"host_bound": flag}, "before": before}})
    return rows


def register(path: Path) -> None:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm.eager import leases_unread

    commit = registering_commit(ROOT)
    rows, product_host = registration_rows(), host_terms(MODE_HOST)
    with leases_unread(("ckpt", "op")):
        before_host = host_terms(MODE_HOST)
    doc = {"registered_at_commit": commit, "script": "validation/opcheck.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml", "host": str(MODE_HOST.relative_to(ROOT))},
           "product_host": product_host, "before_host": before_host, "judge": JUDGE, "rules": RULES, "rows": rows}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 44); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in rows:
        p, q = r["predicted"]["product"], r["predicted"]["before"]
        print(f"{r['name']:10} {r['preset']} {r['seq']}:{r['micro_batch']} ac {r['ac_mode']:4}  product {p['step_ms']:8.2f} ms  "
              f"host share {p['host_share']}  memory {p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB  "
              f"(before {q['step_ms']:.2f} ms)  {r['group']}")
    print(f"registered {len(rows)} shapes x {PROCESSES} processes in {path} (model at {commit[:10]})")


def mean_abs(errs: list[float]) -> float:
    return statistics.mean(map(abs, errs))


def own_lease(bundle: Path, reg: dict, procs: list[dict], verdicts: dict, modes: tuple[str, ...] = ("single", "ckpt", "op"),
              price=None) -> dict:
    """Rule O's prices: {key: step s} of the model with this lease's own host fits (runs/host), {} without every one of
    `modes`; the O host line: this lease's per-kernel costs of `modes` against the product's registered terms. `price`
    (key, folder) -> the value kept per key (validation/opsplit.py: the product's and the candidate's steps)."""
    folder = bundle / "runs" / "host"
    try:
        fits = host_terms(folder) if folder.is_dir() else {}
    except ValueError as exc:   # a host run that is not an llm-step document: one line, the rules without it
        verdicts["O host"] = f"NO DATA: {str(exc).splitlines()[0]}"
        return {}
    parts = []
    for mode, term in reg["product_host"].items():
        if mode not in modes:
            continue
        if mode not in fits:
            parts.append(f"{mode}: NO DATA (fewer than two layer counts ran)")
            continue
        c, c0 = fits[mode]["per_kernel_s"], float(term["per_kernel_s"])
        parts.append(f"{mode} {c * 1e6:.1f} us per kernel {fits[mode]['per_step_s'] * 1e3:+.2f} ms per step against the "
                     f"product's {c0 * 1e6:.1f} us {float(term['per_step_s']) * 1e3:+.2f} ms (x{c / c0:.2f})")
    verdicts["O host"] = "this lease's own fits: " + "; ".join(parts)
    if not set(modes) <= set(fits):
        return {}
    return {p["key"]: predict(*p["key"], folder)["step_ms"] / 1e3 if price is None else price(p["key"], folder) for p in procs}


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle)
    try:
        judge = {k: float(reg["judge"][k]) for k in JUDGE}
        dict(reg["product_host"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    procs, left = read_processes(bundle, reg, ("product", "before"), "group")
    target, band, pts, verdicts = judge["target_pct"] / 100, judge["bias_band"], judge["better_pts"] / 100, {}
    for p in procs:
        p["product_s"], p["before_s"] = (float(p["predicted"][k]["step_ms"]) / 1e3 for k in ("product", "before"))
        p["mem"] = (float(p["predicted"]["product"]["steady_mem_GiB"]), float(p["predicted"]["product"]["peak_mem_GiB"]))
        p["error"], p["before_error"] = p["product_s"] / p["measured_s"] - 1, p["before_s"] / p["measured_s"] - 1
        p["mem_err"] = mem_error(*p["mem"], p["peak_GiB"])
    above, verdicts["N"] = noise_verdict(procs, target)
    verdicts["P"] = memory_verdict([p["mem_err"] for p in procs], judge["mem_pct"])
    own = own_lease(bundle, reg, procs, verdicts)
    within, own_within = {}, {}
    for g in dict.fromkeys(str(r["group"]) for r in reg["rows"]):
        ps = [p for p in procs if p["group"] == g]
        if not ps:
            verdicts[f"M {g}"] = "NO DATA: no process ran"
            continue
        errs = [p["error"] for p in ps]
        within[g] = mean_abs(errs) <= target
        verdicts[f"M {g}"] = (f"product {'within' if within[g] else 'not within'} the target: mean |error| {mean_abs(errs):.1%} "
                              f"over {len(ps)} processes, errors {min(errs):+.1%}..{max(errs):+.1%}")
        verdicts[f"B {g}"] = bias_line([math.log1p(e) for e in errs], band)[1]
        verdicts[f"C {g}"] = compare(ps, pts)[1]
        own_errs = [own[p["key"]] / p["measured_s"] - 1 for p in ps if p["key"] in own]
        if own_errs:
            own_within[g] = mean_abs(own_errs) <= target
            verdicts[f"O {g}"] = (f"with this lease's own host fits {'within' if own_within[g] else 'not within'} the target: "
                                  f"mean |error| {mean_abs(own_errs):.1%}, lease bias "
                                  f"{math.expm1(statistics.mean(map(math.log1p, own_errs))):+.1%}")
    for term in ("ckpt", "op"):
        ps = [p for p in procs if p["group"].split("+")[0] == term]
        groups = [g for g in dict.fromkeys(str(r["group"]) for r in reg["rows"]) if g.split("+")[0] == term]
        if not ps:
            verdicts[f"D {term}"] = "NO DATA: no process ran"
            continue
        verdicts[f"B {term}"] = bias_line([math.log1p(p["error"]) for p in ps], band)[1]
        word, verdicts[f"C {term}"] = compare(ps, pts)
        missed = [g for g in groups if not within.get(g, False)]
        if above:
            d = "NOISE: process noise alone exceeds the target; nothing follows from this set for the term"
        elif word == "WORSE":
            d = f"REVERTED: the product before hostproduct prices this lease better; {term}'s leases.yaml entry goes (FALLBACK)"
        elif not missed:
            d = f"ADOPTED STAYS: the product within the target in {' and '.join(groups)} (C {word})"
        elif all(own_within.get(g, False) for g in missed):
            d = f"ADOPTED STAYS (lease): {', '.join(missed)} missed at the product's terms but within at this lease's own host fits (C {word})"
        else:
            d = f"NEXT TERM: {', '.join(missed)} missed and this lease's own host fits do not explain it (C {word})"
        verdicts[f"D {term}"] = d
    return {"rows": procs, "left": left, "verdicts": verdicts, "own": own}


def compare(ps: list[dict], pts: float, key: str = "error", against: str = "before_error",
            text: str = "the product {now} mean |error| against {before} before hostproduct") -> tuple[str, str]:
    """Rule C on processes: (BETTER / WORSE / SAME, text): the mean |error| of each process's `key` against its
    `against` (this set's: the product against the product before hostproduct; opsplit's: its candidate against the
    product), `text` naming the two ({now}, {before}: the two mean |error|s)."""
    now, before = mean_abs([p[key] for p in ps]), mean_abs([p[against] for p in ps])
    word = "BETTER" if now < before - pts else "WORSE" if now > before + pts else "SAME"
    return word, f"{word}: {text.format(now=f'{now:.1%}', before=f'{before:.1%}')} ({len(ps)} processes)"


def line(p: dict, own) -> str:
    preset, seq, mb, ac = p["key"]
    return (f"{p['name']:10} {preset} {seq}:{mb} ac {ac:4}  measured {p['measured_s'] * 1e3:8.1f} ms  product "
            f"{p['product_s'] * 1e3:8.1f} ms  error {p['error']:+.1%}  before {p['before_error']:+.1%}"
            + ("" if own is None else f"  own host {own / p['measured_s'] - 1:+.1%}")
            + f"  peak {p['peak_GiB']:.2f} GiB ({p['mem_err']:+.1%})")


def show(result: dict) -> None:
    print_rows(result, line)


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
