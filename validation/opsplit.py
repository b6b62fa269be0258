"""Issue 44, session 45: the op-policy checkpointing host term's next term, registered before the runs. Session 44's opcheck
set (calibration/h200x2-opcheck-2026-11-30) read the product's op host term NEXT TERM (op+host-bound 11.6%, op 10.6%,
noise alone 7.6%). Development read (docs/models/llm-findings.md, session 45 opsplit; the opcheck, hostsingle and ophost
bundles are development for what follows): the op policy's host work per block is shape-independent (1,223 profiler CPU
ops a layer at hidden 128 and at 0.3b / 3b alike; the model counts 136 kernels a layer at every shape); its forward /
backward split on the 2 x H200 probes' thread clocks is the product's (the forward 0.47 / 0.49 of a layer's host against
the product's 0.485 at 16 layers); a three-pass split (forward / recompute / gradient) would move no op step (argued,
not computed: where the backward is GPU-bound its backlog covers the recompute's host). What the step model does unlike
torch: it starts each phase's host with its GPU (the backward's host waits for the forward's last kernel, the per-step
host work for the backward's), where torch issues the step's host work back to back, one synchronisation after
opt.step().

The candidate (FrameworkSpec.free_phase_host, off in the product): on one GPU the backward's host starts from the
forward's last issue (work.free_hosts, simulate.free_host) and the step's fixed host work (host_step_s) runs beside the
backward's GPU backlog (work._beside_backlog). A registered 1-GPU set on the 2 x H200 machine
(calibration/h200x2-opsplit-2026-11-30, GPU 0: CUDA_VISIBLE_DEVICES=0, llm-step --mode single --ac-mode op): this
lease's hidden-128 single / op probe and the op policy's per-phase probe (the ophost bundle's hostprobe.py, hidden 128
L24 and the host-bound shape) FIRST, then three op shapes new to calibration/ in three processes each.

    python validation/opsplit.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/opsplit.py [calibration/BUNDLE]                            # after: read-out and verdicts
"""

from __future__ import annotations

import math
import statistics
import sys
from contextlib import contextmanager
from dataclasses import replace
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
from validation.opcheck import compare, group_of, host_terms, mean_abs, own_lease, trust_regime  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-opsplit-2026-11-30"
# (name, preset, seq, micro-batch, llm-step --ac-mode): runs/NAME-rK.json, K = 1..PROCESSES
SHAPES = (("ophb-1b", "1b", 1728, 2, "op"), ("op-1.1b", "1.1b", 2368, 4, "op"), ("op-0.5b", "0.5b", 3008, 4, "op"))
PROCESSES = 3
HOST_PROBE = ("single-L2", "single-L32", "op-L2", "op-L32")   # runs/host/NAME.json (hidden 128, 128:1)
PHASE_PROBE = ("tiny-L24-128x1", "ophb-1b")   # runs/phase/NAME.json: hostprobe.py --modes op (hidden 128 L24; SHAPES[0])
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05, "better_pts": 1.0}
RULES = {
    "measured": "each process's median step (llm-step --mode single --ac-mode op on GPU 0, 5 warm-up and 20 timed steps)",
    "N": "pooled sd of the log of each process's median step over the processes of one shape, its dof, and the mean "
         "|error| that process noise alone gives a model exactly on each shape's mean, sqrt(2/pi) sd: ABOVE the target "
         "(target_pct) or below it",
    "M": "per group (op / op+host-bound by the product's registered flag), the product's and the candidate's mean |error| "
         "over its processes (error = predicted / measured - 1) <= target_pct -> 'within', else 'not within'",
    "B": "per group and over all, the product's and the candidate's lease bias b = mean log error, se = sd / sqrt(n): "
         "SLOW if b > bias_band and b - 2 se > 0; FAST if b < -bias_band and b + 2 se < 0; NONE if |b| + 2 se <= bias_band; "
         "else UNDECIDED (fewer than 3 processes: NO DATA)",
    "C": "per group and over all, the candidate's mean |error| against the product's on the same processes: BETTER if "
         "lower by more than better_pts percentage points, WORSE if higher by more, else SAME",
    "O": "per group, the product and the candidate with this lease's own host fits (runs/host: single, op via "
         "llm/eager.fit_modes) in place of the product's folder: mean |error| within target_pct or not; beside it this "
         "lease's own per-kernel costs against the product's terms",
    "F": "not judged: this lease's op forward / backward host factors (runs/phase hidden-128 probe, llm/eager."
         "op_phase_factors) against the product's; the host-bound shape's per-step forward / backward issue (ms)",
    "P": "every process's peak memory (max_memory_allocated_bytes) within mem_pct of the registered range "
         "[steady_mem_GiB, peak_mem_GiB] (0 inside it) -> 'memory met', else 'memory not met'",
    "D": "NOISE if N is ABOVE the target (nothing follows); else ADOPT (free_phase_host on in the product) if C over all "
         "is BETTER and no group's C is WORSE, KEEP (it stays off) otherwise; and for the model kept or adopted, the op "
         "miss: MET if its M is within in both groups; LEASE if every group it misses is within at this lease's own host "
         "fits (O: a band input, not a term); else NEXT TERM",
}


@contextmanager
def candidate():
    """The model with the candidate on: every torch framework with free_phase_host (par.gpus 1 only: work.free_hosts, work._beside_backlog)."""
    from simcluster.llm import eager

    with eager.torch_framework_as(lambda fw: replace(fw, free_phase_host=True)):
        yield


def both(preset: str, seq: int, mb: int, ac: str, host: Path, memory: bool = False) -> tuple[dict, dict]:
    """(the product's, the candidate's) prediction of one process with `host`'s fits (validation/hostsingle.predict)."""
    p = predict(preset, seq, mb, ac, host, memory)
    with candidate():
        return p, predict(preset, seq, mb, ac, host)


def registration_rows() -> list[dict]:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm.host_bound import is_host_bound

    rows = []
    for name, preset, seq, mb, ac in SHAPES:
        p, c = both(preset, seq, mb, ac, MODE_HOST, memory=True)
        flag = is_host_bound(p["host_share"])
        rows.append({"name": name, "group": group_of(ac, flag), "regime": trust_regime(ac, flag), "mode": "single",
                     "preset": preset, "seq": seq, "micro_batch": mb, "compile": False, "ac_mode": ac, "microbatches": 1,
                     "processes": PROCESSES, "predicted": {"product": p | {"host_bound": flag}, "candidate": c}})
    return rows


def register(path: Path) -> None:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm.eager import op_phase_factors

    commit = registering_commit(ROOT)
    f_fwd, f_bwd = op_phase_factors()
    doc = {"registered_at_commit": commit, "script": "validation/opsplit.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml", "host": str(MODE_HOST.relative_to(ROOT))},
           "product_host": host_terms(MODE_HOST), "op_phase_factors": {"forward": round(f_fwd, 4), "backward": round(f_bwd, 4)},
           "judge": JUDGE, "rules": RULES, "rows": registration_rows()}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 45); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in doc["rows"]:
        p, c = r["predicted"]["product"], r["predicted"]["candidate"]
        print(f"{r['name']:8} {r['preset']} {r['seq']}:{r['micro_batch']}  product {p['step_ms']:8.2f} ms  candidate "
              f"{c['step_ms']:8.2f} ms  host share {p['host_share']}  memory {p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} "
              f"GiB  {r['group']}")
    print(f"registered {len(doc['rows'])} shapes x {PROCESSES} processes in {path} (model at {commit[:10]})")


def phase_lines(bundle: Path, reg: dict, verdicts: dict) -> None:
    """Rule F (not judged): this lease's op phase factors and the host-bound shape's per-step forward / backward issue."""
    import json

    from simcluster.llm.eager import op_phase_factors

    folder = bundle / "runs" / "phase"
    try:
        f_fwd, f_bwd = op_phase_factors(folder / f"{PHASE_PROBE[0]}.json")
        ref = reg["op_phase_factors"]
        verdicts["F factors"] = (f"this lease's forward x{f_fwd:.3f}, backward x{f_bwd:.3f} of the op fit against the "
                                 f"product's x{float(ref['forward']):.3f} / x{float(ref['backward']):.3f}")
    except (SimclusterError, ValueError, OSError, KeyError, TypeError) as exc:
        verdicts["F factors"] = f"NO DATA: {str(exc).splitlines()[0][:200]}"
    try:
        op = next(m for m in json.loads((folder / f"{PHASE_PROBE[1]}.json").read_text())["modes"] if m["status"] == "ok")
        steps = op["per_step"]
        verdicts["F steps"] = (f"{PHASE_PROBE[1]} forward issue {' '.join(f'{x * 1e3:.0f}' for x in steps['fwd_issue_s'])} ms, "
                               f"backward {' '.join(f'{x * 1e3:.0f}' for x in steps['bwd_issue_s'])} ms")
    except (ValueError, OSError, KeyError, TypeError, StopIteration) as exc:
        verdicts["F steps"] = f"NO DATA: {type(exc).__name__}"


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle)
    try:
        judge = {k: float(reg["judge"][k]) for k in JUDGE}
        dict(reg["product_host"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    procs, left = read_processes(bundle, reg, ("product", "candidate"), "group")
    target, band, pts, verdicts = judge["target_pct"] / 100, judge["bias_band"], judge["better_pts"] / 100, {}
    for p in procs:
        p["product_s"], p["candidate_s"] = (float(p["predicted"][k]["step_ms"]) / 1e3 for k in ("product", "candidate"))
        p["error"], p["candidate_error"] = p["product_s"] / p["measured_s"] - 1, p["candidate_s"] / p["measured_s"] - 1
        pr = p["predicted"]["product"]
        p["mem_err"] = mem_error(float(pr["steady_mem_GiB"]), float(pr["peak_mem_GiB"]), p["peak_GiB"])
    above, verdicts["N"] = noise_verdict(procs, target)
    verdicts["P"] = memory_verdict([p["mem_err"] for p in procs], judge["mem_pct"])
    own = own_lease(bundle, reg, procs, verdicts, ("single", "op"),   # rule O: (product, candidate) at the lease's own fits
                    lambda key, folder: tuple(x["step_ms"] / 1e3 for x in both(*key, folder)))
    phase_lines(bundle, reg, verdicts)
    groups = list(dict.fromkeys(str(r["group"]) for r in reg["rows"]))
    within, own_within, words = {}, {}, {}
    for g in groups + ["all"]:
        ps = [p for p in procs if g in ("all", p["group"])]
        if not ps:
            verdicts[f"M {g}"] = "NO DATA: no process ran"
            continue
        for model, key, at in (("product", "error", 0), ("candidate", "candidate_error", 1)):
            errs = [p[key] for p in ps]
            if g != "all":
                within[(model, g)] = mean_abs(errs) <= target
                verdicts[f"M {g} {model}"] = (f"{'within' if within[(model, g)] else 'not within'} the target: mean |error| "
                                              f"{mean_abs(errs):.1%} over {len(ps)} processes, errors {min(errs):+.1%}..{max(errs):+.1%}")
            verdicts[f"B {g} {model}"] = bias_line([math.log1p(e) for e in errs], band)[1]
            own_errs = [own[p["key"]][at] / p["measured_s"] - 1 for p in ps if p["key"] in own]
            if own_errs and g != "all":
                own_within[(model, g)] = mean_abs(own_errs) <= target
                verdicts[f"O {g} {model}"] = (f"with this lease's own host fits {'within' if own_within[(model, g)] else 'not within'}"
                                              f" the target: mean |error| {mean_abs(own_errs):.1%}, lease bias "
                                              f"{math.expm1(statistics.mean(map(math.log1p, own_errs))):+.1%}")
        words[g], verdicts[f"C {g}"] = compare(ps, pts, "candidate_error", "error",   # rule C: the candidate against the product
                                               "the candidate {now} mean |error| against the product's {before}")
    verdicts["D"] = decide(above, words, groups, within, own_within)
    return {"rows": procs, "left": left, "verdicts": verdicts, "own": own}


def decide(above, words: dict, groups: list[str], within: dict, own_within: dict) -> str:
    """Rule D from N's flag, C's words per group ('all' over every process) and M / O's within flags per (model, group)."""
    if "all" not in words:
        return "NO DATA: no process ran"
    if above:
        return "NOISE: process noise alone exceeds the target; nothing follows from this set"
    adopt = words["all"] == "BETTER" and "WORSE" not in words.values()
    model = "candidate" if adopt else "product"
    missed = [g for g in groups if not within.get((model, g), False)]
    miss = ("MET" if not missed else f"LEASE ({', '.join(missed)} within at this lease's own host fits)"
            if all(own_within.get((model, g), False) for g in missed) else f"NEXT TERM ({', '.join(missed)} missed)")
    return f"{'ADOPT' if adopt else 'KEEP'} (C {words['all']}); the op miss at the {model}: {miss}"


def line(p: dict, own) -> str:
    preset, seq, mb, _ = p["key"]
    return (f"{p['name']:8} {preset} {seq}:{mb}  measured {p['measured_s'] * 1e3:8.1f} ms  product {p['product_s'] * 1e3:8.1f} "
            f"ms ({p['error']:+.1%})  candidate {p['candidate_s'] * 1e3:8.1f} ms ({p['candidate_error']:+.1%})"
            + ("" if own is None else f"  own host {own[0] / p['measured_s'] - 1:+.1%} / {own[1] / p['measured_s'] - 1:+.1%}")
            + f"  peak {p['peak_GiB']:.2f} GiB ({p['mem_err']:+.1%})")


def show(result: dict) -> None:
    print_rows(result, line)


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
