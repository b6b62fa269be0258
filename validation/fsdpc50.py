"""Issue 44, session 50 (helper fsdpc50): one registered 2 x H200 set (calibration/h200x2-fsdpc50-2026-12-01), the held-out
decision on framework.compiled_nock_loss (OFF; llm/compiled.fused_loss): the runner's FSDP2 with the whole model compiled
and no checkpointing (--mode fsdp --compile --compile-scope model, no --ac-mode) prices its loss as eager's (48 B a logit,
five kernels) in the shipped model; the candidate prices it as Inductor's in the last graph (8 B a logit, two kernels),
as the checkpointed step already does and as mem49's peak term already does for this step's memory. And its peak:
the shipped model (4 B a logit at the loss, FSDP2's root unit only at the backward's end) against the candidate
framework.compiled_loss_donated (OFF; llm/memory.py: the logits' gradient written over the donated saved logits, 2 B a
logit, and from the backward's start the root unit's gathered bf16 parameters, 2 B a root parameter, and the head's
unsharded bf16 gradient, 2 B a head parameter: -2TV+2R+2W, -2TV+4R to 2H bytes on these tied models; the step without
checkpointing only).

    python validation/fsdpc50.py --register calibration/h200x2-fsdpc50-2026-12-01/registered.yaml   # before the call
    python validation/fsdpc50.py [calibration/h200x2-fsdpc50-2026-12-01]                            # after: the read-out

Development for the candidates (studies/fsdpc50_loss.py): x2set49's and mem49's three rows without checkpointing, step
shipped +5.1 / +10.5 / +6.1%, candidate -2.3 / +1.5 / +4.6%; peak shipped +2.7 / +7.9 / +0.6%, candidate -0.2 / -0.0 /
-0.0%. These shapes are new (seqs 416, 480, 576). N, M, B, P are validation/nosync.py's step_verdicts (M on the shipped
column); MC the candidate's M; L decides the step's switch, PM the peak's (within 1% on every row: the candidate's
-2TV+2R+2W against mem49's -2TV+2R differ by 1.7-1.8% on these rows); PF reports each row's residual against both
forms and judges nothing; nothing fitted after. Re-registered before any run after cold review B50 item 3 (pm_pct 3 ->
1, PF, the head's parameters for the gradient term, the switch gated to the step without checkpointing).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import compilefsdp  # noqa: E402
import nosync  # noqa: E402
import x2set49  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import set_main  # noqa: E402
from simcluster.llm import eager  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-fsdpc50-2026-12-01"
SEQS = (416, 480, 576)   # this helper's seqs (session 50's task file), each new to every run
SEARCHED = (("1b", (16, 24, 32)), ("3b", (8, 16, 24)))
# (preset, seq, micro_batch, processes, why)
SHAPES = (
    ("1b", 576, 24, 2, "1b's vocabulary (128256) at a GPU-bound shape: the candidate 8.8% below the shipped step, as on "
                       "mem49's 1b row (+10.5% shipped, +1.5% candidate)"),
    ("3b", 480, 16, 2, "another size (28 layers of hidden 3072), the same vocabulary: the loss a smaller share, the "
                       "candidate 3.5% below the shipped step: tells the loss apart from a slowness of the whole step"),
    ("1b", 416, 32, 1, "a third seq at 1b, GPU-bound: the candidate 8.9% below the shipped step"),
)
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05, "column_pct": 2.0, "shape_veto_pct": 2.0, "pm_pct": 1.0,
         "pm_gain_pct": 2.0}
RULES = {
    "measured": "rank 0's median step and max_memory_allocated_timed_bytes of each process (3 warm-up steps, the first "
                "holding the compilation, 5 timed); a process the budget guard skipped, that failed, or whose document is "
                "not the registered configuration (--mode fsdp on 2 ranks, --compile-scope model, no checkpointing, the "
                "preset and shape) is left out and said",
    "N, M, B, P": "validation/nosync.py's rules on the rows' processes with the shipped column (compiled_nock_loss off): "
                  "N the pooled process sd, M the mean |error| against target_pct, B the lease bias, P every peak within "
                  "mem_pct of [steady_mem_GiB, peak_mem_GiB] (the candidate moves no peak)",
    "MC": "M for the candidate column (predicted_candidate: compiled_nock_loss on), reported",
    "L": "decides: s, c = the mean |error| over every process of the shipped and the candidate column; per row (a shape's "
         "processes) the same two means. 'NOISE' if N's noise alone exceeds target_pct; 'NO DATA' if no process ran; "
         "'ON' if s - c >= column_pct points and c <= target_pct and no row's candidate mean is worse than its shipped "
         "one by shape_veto_pct points or more; 'OFF' if c - s >= column_pct points; else 'UNDECIDED' (a vetoed row "
         "named). Meaning fixed before the run: ON -> framework.compiled_nock_loss turned on (the FSDP+compile regime "
         "priced with the loss in the last graph, these rows held out for it); OFF or UNDECIDED -> it stays off and the "
         "compiled FSDP2 step without checkpointing stays written up as model-limited (llm.md, caveats.py)",
    "PM": "decides the peak's switch: per row m = the mean of its processes' peaks, e_s = peak_mem_GiB / m - 1 (shipped), "
          "e_c = predicted_memory's peak_mem_GiB / m - 1 (compiled_loss_donated on); 'NO DATA' without a peak; 'ON' if "
          "every row's |e_c| <= pm_pct and the rows' mean |e_s| - mean |e_c| >= pm_gain_pct points; 'OFF' if mean |e_c| >= "
          "mean |e_s|; else 'UNDECIDED'. Meaning fixed before the run: ON -> framework.compiled_loss_donated turned on "
          "(these rows held out for it); OFF or UNDECIDED -> it stays off, mem49's NOT HELD stands",
    "PF": "reported, judges nothing: per row r = m - the shipped peak (GiB) and r minus each registered peak_forms_GiB "
          "(the loss peak's move under the candidate, -2TV+2R+2W: -2 B a logit (T tokens x V vocabulary), 2 B a root "
          "parameter R, 2 B a head parameter W = V x H; and under mem49's registered -2TV+2R)",
}


def predicted(preset: str, seq: int, mb: int, on: str = "") -> dict:
    """x2set49.compiled's dict without checkpointing: the shipped model, or with the framework switch `on` (one of
    session 50's candidates: compiled_nock_loss, compiled_loss_donated) set."""
    if on:
        with eager.torch_framework_as(lambda fw: replace(fw, **{on: True})):
            return x2set49.compiled(preset, seq, mb, False)
    return x2set49.compiled(preset, seq, mb, False)


def rows() -> list[dict]:
    out = []
    for preset, seq, mb, n, _ in SHAPES:
        r = compilefsdp.row(preset, seq, mb, "fsdp", n, predicted=predicted(preset, seq, mb),
                            predicted_candidate=predicted(preset, seq, mb, "compiled_nock_loss"),
                            predicted_memory=predicted(preset, seq, mb, "compiled_loss_donated"))
        out.append(r | {"name": f"{preset}-{seq}x{mb}-fsdpnock", "variant": "fsdpnock", "ac_mode": "none",
                        "peak_forms_GiB": peak_forms(preset, seq, mb)})
    return out


def peak_forms(preset: str, seq: int, mb: int) -> dict[str, float]:
    """The loss peak's move (GiB) under the candidate's form and mem49's (rule PF): T = seq x mb tokens, V the vocabulary,
    W = V x H the head's parameters, R the root unit's (W tied, 2 W untied, and the final norm's H)."""
    from simcluster.runner.llm_step import PRESETS

    m = PRESETS[preset]
    w = m["vocab"] * m["hidden"]
    logits, root = seq * mb * m["vocab"], w * (1 if m["tied"] else 2) + m["hidden"]
    return {"-2TV+2R+2W": round((-2 * logits + 2 * root + 2 * w) / 2**30, 4), "-2TV+2R": round((-2 * logits + 2 * root) / 2**30, 4)}


def _line(r: dict) -> str:
    p, c, m = r["predicted"], r["predicted_candidate"], r["predicted_memory"]
    return (f"{r['name']:20} shipped {p['step_ms']:8.2f} ms  candidate {c['step_ms']:8.2f} ms "
            f"({c['step_ms'] / p['step_ms'] - 1:+.1%})  host share {p['host_share']} / {c['host_share']}  peak "
            f"{p['peak_mem_GiB']:.2f} GiB, candidate {m['peak_mem_GiB']:.2f} ({m['peak_mem_GiB'] / p['peak_mem_GiB'] - 1:+.1%})")


def searched() -> list[str]:
    """The lines SHAPES were chosen from (printed by --register): SEARCHED's presets and micro-batches at SEQS, the
    shipped and the candidate step, host share and peak."""
    out = []
    for preset, mbs in SEARCHED:
        for seq in SEQS:
            for mb in mbs:
                p, c = predicted(preset, seq, mb), predicted(preset, seq, mb, "compiled_nock_loss")
                out.append(f"searched {preset} {seq}:{mb}: shipped {p['step_ms']:.2f} ms, candidate {c['step_ms']:.2f} ms "
                           f"({c['step_ms'] / p['step_ms'] - 1:+.1%}), host share {p['host_share']:.3f} / "
                           f"{c['host_share']:.3f}, peak {p['peak_mem_GiB']:.2f} GiB")
    return out


def register(path: Path) -> None:
    notes = {"shapes": {f"{p}-{s}x{mb}-fsdpnock": why for p, s, mb, _, why in SHAPES}}
    nosync.register(path, "validation/fsdpc50.py --register", judge=JUDGE, rules=RULES, session=50,
                    calibration=compilefsdp.CALIBRATION, regs=rows(), notes=notes, line=_line)
    for line in searched():
        print(line)


def _mean(procs: list[dict], key: str) -> float:
    return compilefsdp.mean_abs_error(procs, key)


def rule_l(procs: list[dict], regs: list[dict], judge: dict, above: bool | None) -> str:
    if above:
        return "NOISE: process noise alone exceeds the target"
    if not procs:
        return "NO DATA: no process ran"
    s, c = _mean(procs, "predicted"), _mean(procs, "predicted_candidate")
    per = {r["name"]: [_mean(own, k) for k in ("predicted", "predicted_candidate")]
           for r in regs if (own := [p for p in procs if p["row"] is r])}
    vetoed = [n for n, (a, b) in per.items() if 100 * (b - a) >= judge["shape_veto_pct"]]
    said = "; ".join(f"{n} shipped {a:.1%} candidate {b:.1%}" for n, (a, b) in per.items())
    if 100 * (s - c) >= judge["column_pct"] and c <= judge["target_pct"] / 100 and not vetoed:
        word = "ON"
    elif 100 * (c - s) >= judge["column_pct"]:
        word = "OFF"
    else:
        word = "UNDECIDED" + (f" (vetoed on {', '.join(vetoed)})" if vetoed else "")
    return f"{word}: mean |error| shipped {s:.1%}, candidate {c:.1%} over {len(procs)} processes ({said})"


def rule_pm(procs: list[dict], regs: list[dict], judge: dict) -> str:
    said, es, ec = [], [], []
    for r in regs:
        peaks = [p["peak_GiB"] for p in procs if p["row"] is r and p["peak_GiB"] is not None]
        if peaks:
            m = sum(peaks) / len(peaks)
            es.append(float(r["predicted"]["peak_mem_GiB"]) / m - 1)
            ec.append(float(r["predicted_memory"]["peak_mem_GiB"]) / m - 1)
            said.append(f"{r['name']} measured {m:.3f} GiB, shipped {es[-1]:+.1%}, candidate {ec[-1]:+.1%}")
    if not said:
        return "NO DATA: no peak read"
    s, c = (sum(abs(e) for e in col) / len(col) for col in (es, ec))
    if max(abs(e) for e in ec) <= judge["pm_pct"] / 100 and 100 * (s - c) >= judge["pm_gain_pct"]:
        word = "ON"
    elif c >= s:
        word = "OFF"
    else:
        word = "UNDECIDED"
    return f"{word}: mean |error| shipped {s:.1%}, candidate {c:.1%} over {len(said)} rows ({'; '.join(said)})"


def rule_pf(procs: list[dict], regs: list[dict]) -> str:
    said = []
    for r in regs:
        peaks = [p["peak_GiB"] for p in procs if p["row"] is r and p["peak_GiB"] is not None]
        if peaks:
            res = sum(peaks) / len(peaks) - float(r["predicted"]["peak_mem_GiB"])
            said.append(f"{r['name']} r {res:+.3f} GiB, " + ", ".join(
                f"r - ({k}) {round(res - float(v), 3) + 0.0:+.3f}" for k, v in r["peak_forms_GiB"].items()))
    return "NO DATA: no peak read" if not said else f"reported, judges nothing: {'; '.join(said)}"


def read_out(bundle: Path) -> dict:
    judge, regs = nosync.read_registration(bundle, JUDGE)
    try:
        for r in regs:
            float(r["predicted_candidate"]["step_ms"]), float(r["predicted_memory"]["peak_mem_GiB"])
            r["ac_mode"], r["preset"], int(r["seq"]), int(r["micro_batch"])
            [float(v) for v in r["peak_forms_GiB"].values()]
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: a row without fsdpc50's keys ({type(exc).__name__}: {exc})") from None
    procs, left = nosync.read_processes(bundle, regs, step_of=x2set49._c_step, peak_key="max_memory_allocated_timed_bytes")
    verdicts, _, above, _, _ = nosync.step_verdicts(procs, regs, judge, {"fsdpnock": None})
    c = _mean(procs, "predicted_candidate")
    verdicts["MC"] = "NO DATA: no process ran" if c is None else (
        f"{'within' if c <= judge['target_pct'] / 100 else 'not within'} the target: candidate mean |error| {c:.1%} over "
        f"{len(procs)} processes, errors " + ", ".join(
            f"{float(p['row']['predicted_candidate']['step_ms']) / 1e3 / p['step_s'] - 1:+.1%}" for p in procs))
    verdicts["L"] = rule_l(procs, regs, judge, above)
    verdicts["PM"] = rule_pm(procs, regs, judge)
    verdicts["PF"] = rule_pf(procs, regs)
    return {"procs": procs, "left": left, "verdicts": verdicts}


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, nosync.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
