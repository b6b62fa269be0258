"""Issue 44, session 49 (helper x2set49): one registered 2 x H200 set (calibration/h200x2-x2set49-2026-12-01), three
parts on one lease, each with its own rule fixed before the run:

  Z3  FSDP2 zero 3 (the runner's --mode fsdp, FSDP2's default full shard, 4 micro-batches reduce-scattered each): the
      forward's autocast weight casts FSDP2's bf16 parameters never run, dropped at zero 3 (FrameworkSpec.
      zero3_bf16_weights, off: llm/fsdp2_zero2.forward_casts), as adopt2g dropped them at zero 2. Two GPU-bound shapes,
      three processes each; the shipped column (step_ms) and the candidate's (step_ms_candidate). Rule Z.
  C   a held-out check of adopt48 (framework.whole_model_graph and fsdp_free_phases on for torch-compile+fsdp2): compck2's
      variant (whole-model compile over checkpointed blocks) on a shape where the fixed per-step host work the free-phase
      switch takes off the critical path (8.79 ms) is a larger share of the step than on compck2's 1b shape, three
      processes; and one compiled FSDP2 shape without checkpointing (where fsdp_free_phases is on, unmeasured), two
      processes. The shipped column (`predicted`) and the same model with fsdp_free_phases off (`predicted_candidate`:
      compck's candidate, whole_model_graph on). No model change: rules CM, CR, CN say what the result means.
  G   a held-out check of adopt2g (the four FSDP2 ZeRO-2 switches on for torch's zero 2) on a GPU-bound zero-2 shape of a
      size neither zero2g (8b, 3b) nor zero2e (1b, 3b) ran: 2b, two processes, FSDP2's default reshard after backward
      (the product's zero 2). The shipped column and the model before adopt2g (step_ms_before). Rule G.

    python validation/x2set49.py --register calibration/h200x2-x2set49-2026-12-01/registered.yaml   # before the call
    python validation/x2set49.py [calibration/h200x2-x2set49-2026-12-01]                            # after: the read-out

Each part's N, M, B, P are validation/nosync.py's step_verdicts on that part's rows (P on the timed steps' peak for Z3 and
G, as zero2.py; the whole run's peak for C, as compck.py); nothing fitted on the runs after.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import compilefsdp  # noqa: E402
import nosync  # noqa: E402
import zero2  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import before_adopt2g, pooled_log_sd, set_main  # noqa: E402
from simcluster.llm import eager  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-x2set49-2026-12-01"
TIMED_STEPS = {"Z3": 3, "G": 3, "C": 5}   # per process (device_run.sh --steps)
SEQS = (3040, 3104, 1824, 2464, 288, 320)   # this helper's seqs, each new to every bundle
FREE_HOST_MS = 8.79   # the fixed per-step host work fsdp_free_phases takes off the critical path (compck2's Result)
# (part, preset, seq, micro_batch, variant, processes, why)
SHAPES = (
    ("Z3", "8b", 2464, 1, "zero3", 3, "GPU-bound (host share 0.048): the 8b shape of SEQS x micro-batch 1, 2 with host share "
                                      "<= 0.05 whose candidate moves the step most (-3.9%)"),
    ("Z3", "3b", 3040, 2, "zero3", 3, "GPU-bound (host share 0.045): the 3b shape of SEQS x micro-batch 1, 2 with host share "
                                      "<= 0.05 whose candidate moves the step most (-3.6%)"),
    ("C", "1b", 2464, 2, "fsdp", 3, "compiled FSDP2 + full checkpointing, host share 0.23: the free-phase term (8.79 ms) "
                                    "7.4% of the shipped step (compck2's 1b shape: 5.6%), the largest share among the "
                                    "searched shapes with host share <= 0.25; shipped / free-off gap +7.4%"),
    ("C", "1b", 3040, 2, "fsdpnock", 2, "compiled FSDP2 without checkpointing, GPU-bound (host share 0.09): the free-phase "
                                        "term on where no set measured it; the largest share of the step (7.1%) among the "
                                        "searched shapes with host share <= 0.25"),
    ("G", "2b", 3040, 2, "zero2", 2, "GPU-bound zero 2 (host share 0.016), a size zero2e / zero2g did not run (2b: 24 "
                                     "layers of hidden 2560, vocab 65536)"),
)
PARTS = ("Z3", "C", "G")
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05, "column_pct": 1.0, "shape_veto_pct": 0.5,
         "read_floor_pct": 2.0, "diff_z": 2.0}
PEAK = {"Z3": zero2.PEAK_KEY, "G": zero2.PEAK_KEY, "C": "max_memory_allocated_bytes"}
RULES = {
    "measured": "rank 0's median step of each process (Z3, G: 2 warm-up, 3 timed steps of 4 micro-batches; C: 3 warm-up, "
                "the first holding the compilation, 5 timed); a process the budget guard skipped, that failed, or whose "
                "document is not the registered configuration is left out and said",
    "N, M, B, P": "per part (Z3, C, G), validation/nosync.py's rules on that part's rows and processes, M and B on the "
                  "shipped column: N the pooled process sd (ABOVE or below target_pct), M mean |error| <= target_pct, B "
                  "the lease bias (band bias_band), P the rank-0 peak within mem_pct of [steady_mem_GiB, peak_mem_GiB]",
    "Z": "part Z3: each column's mean |error| (step_ms, step_ms_candidate against the measured step) per shape and over "
         "every Z3 process. NOISE if Z3's N is ABOVE the target; 'ZERO-3 FORWARD CASTS CANDIDATE ADOPTED' if the "
         "candidate's overall mean |error| is lower than the shipped one's by >= column_pct points, is itself <= "
         "target_pct, and on no shape is the candidate's higher by >= shape_veto_pct points (the veto); 'REJECTED' if the "
         "shipped one's is lower by >= column_pct points overall; else 'UNDECIDED' (NO DATA without a Z3 process). "
         "Consequence fixed before the run: ADOPTED turns FrameworkSpec.zero3_bf16_weights on for framework torch's "
         "FSDP2 zero 3 (llm/eager.py; torch-compile+fsdp2 and the published FSDP2 frameworks not included), with the pins "
         "that moves; REJECTED and UNDECIDED leave it off",
    "CM": "part C, reported: the shipped model's held-out mean |error| per C shape and overall, 'within' where <= "
          "target_pct (no model change by any C result)",
    "CR": "part C, the checkpointed shape: measured m = exp(mean log step over its processes); e_s = log(predicted / m) "
          "(shipped: fsdp_free_phases on), e_f = log(predicted_candidate / m) (fsdp_free_phases off, whole_model_graph "
          "on); limit = max(read_floor_pct / 100, diff_z x sd / sqrt(n)), sd the shape's own process sd (N's pooled "
          "one where it has one process); NOISE if C's N is ABOVE; 'A (HIDDEN)' if |e_s| <= limit < |e_f|; 'B (NOT "
          "HIDDEN)' if |e_f| <= limit < |e_s|; 'NEITHER' (both beyond: a miss beyond the 8.79 ms, said with its sign) if "
          "both > limit; 'UNDECIDED' if both within; NO DATA without a process. Meaning fixed before the run: A -> "
          "compck2's reading (a), the fixed per-step host work hidden behind the GPU backlog, held on a second shape; B -> "
          "the fixed host work is on the critical path here: adopt48's free-phase term is written up as contradicted on "
          "this shape and a registered re-check of fsdp_free_phases is owed (the product unchanged by this set); NEITHER "
          "-> reading (b): the compiled step's own price misses, these rows development for the next candidate "
          "(llm/compiled.py, llm/eager_compiled.py)",
    "CN": "part C, the shape without checkpointing: CR's words and limit on its processes. Meaning fixed before the run: "
          "A -> fsdp_free_phases' application without checkpointing measured consistent; B -> written up as contradicted "
          "there, a registered check of turning it off without checkpointing owed; NEITHER -> the compiled FSDP2 step "
          "without checkpointing written up outside the valid range; the product unchanged by this set",
    "G": "part G: the shipped column's (adopt2g's) mean |error| over G's processes; NOISE if G's N is ABOVE; 'HELD' if "
         "<= target_pct, else 'NOT HELD'; the before-adopt2g column's (step_ms_before) mean |error| said beside, not "
         "deciding. Meaning fixed before the run: HELD -> adopt2g's held-out error on a third size stated in "
         "docs/models/llm.md (the rows enter the error bands as held-out zero-2 rows); NOT HELD -> zero 2's valid range "
         "written as the sizes read (8b, 3b), these rows development for the next candidate; no switch reverted by this "
         "set alone",
}
NEEDED = {"Z3": ("step_ms_candidate",), "G": ("step_ms_before",), "C": ()}
C_RULES = {"CR": "full", "CN": "none"}   # rule -> the ac_mode of the part C row it reads


def z3_candidate(preset: str, seq: int, mb: int) -> float:
    """The zero-3 row's step (ms) with FrameworkSpec.zero3_bf16_weights on (no forward weight casts)."""
    from simcluster.heldout.eager_regimes import regime_predict

    with eager.torch_framework_as(lambda fw: replace(fw, zero3_bf16_weights=True)):
        return regime_predict(preset, mb, "fsdp", "h200", microbatches=nosync.MICROBATCHES, seq=seq)["step_ms"]


def g_before(preset: str, seq: int, mb: int) -> float:
    """The zero-2 row's step (ms) as the model priced it before adopt2g (its four switches off)."""
    from simcluster.heldout.eager_regimes import regime_predict

    with eager.torch_framework_as(before_adopt2g):
        return regime_predict(preset, mb, "fsdp-zero2", "h200", microbatches=nosync.MICROBATCHES, seq=seq)["step_ms"]


def compiled(preset: str, seq: int, mb: int, ckpt: bool, free: bool | None = None) -> dict:
    """The compiled FSDP2 row's prediction (heldout/eager_compilefsdp.predict's dict) with or without checkpointing;
    `free` False: fsdp_free_phases off (whole_model_graph on), None the product's."""
    from simcluster.heldout.eager_compilefsdp import fits, predict
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm.host_bound import is_host_bound

    if free is not None:
        with eager.torch_framework_as(lambda fw: replace(fw, whole_model_graph=True, fsdp_free_phases=free)):
            return compiled(preset, seq, mb, ckpt)
    if ckpt:
        return predict(preset, seq, mb, "fsdp")
    p = regime_predict(preset, mb, "fsdp", "h200", seq=seq, fits=fits(), compiled=True)
    return {"step_ms": p["step_ms"], "host_share": p["host_share"], "host_bound": is_host_bound(p["host_share"]),
            "steady_mem_GiB": p["steady_mem_GiB"][0], "peak_mem_GiB": p["stage_mem_GiB"][0]}


def _row(part: str, preset: str, seq: int, mb: int, variant: str, processes: int) -> dict:
    name = f"{preset}-{seq}x{mb}-{variant}"
    if part == "C":
        row = compilefsdp.row(preset, seq, mb, "fsdp", processes, predicted=compiled(preset, seq, mb, variant == "fsdp"),
                              predicted_candidate=compiled(preset, seq, mb, variant == "fsdp", free=False))
        return {"part": part} | row | {"name": name, "variant": variant, "ac_mode": "full" if variant == "fsdp" else "none"}
    row = nosync.rows(((preset, seq, mb, ""),), {variant: "fsdp" if part == "Z3" else "fsdp-zero2"})[0]
    row |= {"name": name, "processes": processes, "process": name, "reshard_after_forward": part == "Z3",
            "reshard_after_backward": True}
    row["predicted"] |= ({"step_ms_candidate": z3_candidate(preset, seq, mb)} if part == "Z3" else
                         {"step_ms_before": g_before(preset, seq, mb)})
    return {"part": part} | row


def rows() -> list[dict]:
    return [_row(part, preset, seq, mb, variant, n) for part, preset, seq, mb, variant, n, _ in SHAPES]


def _line(r: dict) -> str:
    p = r["predicted"]
    other = {"Z3": ("candidate", p.get("step_ms_candidate")), "G": ("before adopt2g", p.get("step_ms_before")),
             "C": ("free phases off", (r.get("predicted_candidate") or {}).get("step_ms"))}[r["part"]]
    return (f"{r['part']:2} {r['name']:20} shipped {p['step_ms']:8.2f} ms  {other[0]} {other[1]:8.2f} ms  host share "
            f"{p['host_share']}  memory {p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB")


def register(path: Path) -> None:
    notes = {"parts": {"Z3": "FSDP2 zero 3, 4 micro-batches: shipped (step_ms) and FrameworkSpec.zero3_bf16_weights on "
                             "(step_ms_candidate)",
                       "C": "compiled FSDP2 (whole model): shipped (`predicted`, adopt48 on) and fsdp_free_phases off "
                            "(`predicted_candidate`, whole_model_graph on)",
                       "G": "FSDP2 zero 2 (adopt2g on), 4 micro-batches: shipped (step_ms) and before adopt2g "
                            "(step_ms_before)"},
             "shapes": {f"{p}-{s}x{mb}-{v}": f"{part}: {why}" for part, p, s, mb, v, _, why in SHAPES}}
    nosync.register(path, "validation/x2set49.py --register", judge=JUDGE, rules=RULES, session=49,
                    calibration=compilefsdp.CALIBRATION, regs=rows(), notes=notes, line=_line)
    for line in searched():
        print(line)


def searched() -> list[str]:
    """The lines SHAPES were chosen from (printed by --register): Z3's 8b / 3b zero-3 shapes and G's 2b zero-2 shapes of
    SEQS x micro-batch 1, 2 (host share, the candidate's move), C's 0.5b / 1b compiled shapes of SEQS x 2, 4 (host share,
    the fixed host work's share of the shipped step, the free-off column's gap)."""
    from simcluster.heldout.eager_regimes import regime_predict

    out = []
    for preset in ("8b", "3b"):
        for seq in SEQS:
            for mb in (1, 2):
                got = regime_predict(preset, mb, "fsdp", "h200", microbatches=nosync.MICROBATCHES, seq=seq)
                out.append(f"searched Z3 {preset} {seq}:{mb}: host share {got['host_share']:.3f}, candidate / shipped "
                           f"{z3_candidate(preset, seq, mb) / got['step_ms'] - 1:+.1%}")
    for seq in SEQS:
        for mb in (1, 2):
            got = regime_predict("2b", mb, "fsdp-zero2", "h200", microbatches=nosync.MICROBATCHES, seq=seq)
            out.append(f"searched G 2b {seq}:{mb}: host share {got['host_share']:.3f}, step {got['step_ms']:.1f} ms")
    for preset in ("0.5b", "1b"):
        for ckpt in (True, False):
            for seq in SEQS:
                for mb in (2, 4):
                    a, b = compiled(preset, seq, mb, ckpt), compiled(preset, seq, mb, ckpt, free=False)
                    out.append(f"searched C {preset} {seq}:{mb} {'ckpt' if ckpt else 'no ckpt'}: host share "
                               f"{a['host_share']:.2f}, {FREE_HOST_MS} ms {FREE_HOST_MS / a['step_ms']:.1%} of the step, "
                               f"free off / shipped {b['step_ms'] / a['step_ms'] - 1:+.1%}")
    return out


def _c_step(bundle: Path, reg: dict, k: int) -> tuple[dict | None, str]:
    """A C process's timed shape: heldout/eager_compilefsdp.process_step for the checkpointed row; for the row without
    checkpointing the same checks with --ac-mode none."""
    from simcluster.heldout.eager import process_document
    from simcluster.heldout.eager_compilefsdp import process_step
    from simcluster.heldout.eager_nosync import registered_shape
    from simcluster.llm.eager_ac import document_mode

    if reg["ac_mode"] == "full":
        return process_step(bundle, reg | {"variant": "fsdp"}, k)
    doc, why = process_document(bundle / "runs" / f"{reg['name']}-r{k}.json", "fsdp", 2, reg["preset"])
    if doc is not None and ((doc.get("compile") or {}).get("scope_flag") != "model" or document_mode(doc) != "none"):
        doc, why = None, f"not --compile-scope model without checkpointing (compile {doc.get('compile')}, ac {document_mode(doc)})"
    return registered_shape(doc, reg, why)


def _mean_err(procs: list[dict], step_ms) -> float:
    return statistics.mean(abs(step_ms(p) / (p["step_s"] * 1e3) - 1) for p in procs)


def rule_z(procs: list[dict], judge: dict, above: bool | None) -> str:
    word = "ZERO-3 FORWARD CASTS CANDIDATE"
    if not procs:
        return "NO DATA: no Z3 process ran"
    ship, cand = (lambda p: float(p["row"]["predicted"]["step_ms"])), (lambda p: float(p["row"]["predicted"]["step_ms_candidate"]))
    names = list(dict.fromkeys(p["row"]["name"] for p in procs))
    per = {n: [_mean_err([p for p in procs if p["row"]["name"] == n], f) for f in (ship, cand)] for n in names}
    s, c = _mean_err(procs, ship), _mean_err(procs, cand)
    vetoed = [n for n, (a, b) in per.items() if 100 * (b - a) >= judge["shape_veto_pct"]]
    said = "; ".join(f"{n} shipped {a:.1%} candidate {b:.1%}" for n, (a, b) in per.items())
    if above:
        verdict = "NOISE: process noise alone exceeds the target"
    elif 100 * (s - c) >= judge["column_pct"] and c <= judge["target_pct"] / 100 and not vetoed:
        verdict = f"{word} ADOPTED"
    elif 100 * (c - s) >= judge["column_pct"]:
        verdict = f"{word} REJECTED"
    else:
        verdict = f"{word} UNDECIDED" + (f" (vetoed on {', '.join(vetoed)})" if vetoed else "")
    return f"{verdict}: mean |error| shipped {s:.1%}, candidate {c:.1%} over {len(procs)} processes ({said})"


def reading(procs: list[dict], reg: dict, judge: dict, sd: float | None, above: bool | None) -> str:
    """Rules CR / CN on one C row: which column the measured step sits with (the words in RULES)."""
    logs = [math.log(p["step_s"]) for p in procs if p["row"] is reg]
    if not logs:
        return f"{reg['name']}: NO DATA (no process ran)"
    if above:
        return f"{reg['name']}: NOISE: process noise alone exceeds the target"
    m = statistics.mean(logs)
    e_s = math.log(float(reg["predicted"]["step_ms"]) / 1e3) - m
    e_f = math.log(float(reg["predicted_candidate"]["step_ms"]) / 1e3) - m
    own = pooled_log_sd([logs])[0]
    limit = max(judge["read_floor_pct"] / 100, judge["diff_z"] * (own if own is not None else sd or 0.0) / math.sqrt(len(logs)))
    word = ("A (HIDDEN)" if abs(e_s) <= limit < abs(e_f) else "B (NOT HIDDEN)" if abs(e_f) <= limit < abs(e_s) else
            f"NEITHER (shipped {'slow' if e_s > 0 else 'fast'})" if min(abs(e_s), abs(e_f)) > limit else "UNDECIDED")
    return (f"{reg['name']}: {word}: shipped {math.exp(e_s) - 1:+.1%}, free phases off {math.exp(e_f) - 1:+.1%} "
            f"(limit {limit:.1%}, {len(logs)} processes)")


def read_out(bundle: Path) -> dict:
    judge, regs = nosync.read_registration(bundle, JUDGE)
    try:
        for r in regs:
            part = r["part"]
            for key in NEEDED[part]:
                float(r["predicted"][key])
            if part == "C":
                float(r["predicted_candidate"]["step_ms"]), r["ac_mode"]
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: a row without its part's keys ({type(exc).__name__}: {exc})") from None
    c_regs = {}     # rule -> its part C row, picked by ac_mode (C_RULES), whatever the rows' order
    for rule, mode in C_RULES.items():
        rows = [r for r in regs if r["part"] == "C" and r["ac_mode"] == mode]
        if len(rows) != 1:
            raise SimclusterError(f"{bundle / 'registered.yaml'}: {len(rows)} part C rows with ac_mode {mode}, expected one "
                                  f"(rule {rule})")
        c_regs[rule] = rows[0]
    procs, left, verdicts = [], [], {}
    for part in PARTS:
        here = [r for r in regs if r["part"] == part]
        step_of = _c_step if part == "C" else None
        got, gone = nosync.read_processes(bundle, here, step_of=step_of, peak_key=PEAK[part])
        v, sd, above, _, _ = nosync.step_verdicts(got, here, judge, {r["variant"]: None for r in here})
        verdicts |= {f"{part} {k}": v[k] for k in ("N", "M", "B", "P")}
        procs, left = procs + got, left + gone
        if part == "Z3":
            verdicts["Z"] = rule_z(got, judge, above)
        elif part == "C":
            verdicts["CM"] = ("NO DATA: no C process ran" if not got else
                              compilefsdp_line(got, judge))
            verdicts |= {rule: reading(got, r, judge, sd, above) for rule, r in c_regs.items()}
        else:
            verdicts["G"] = rule_g(got, judge, above)
    return {"procs": procs, "left": left, "verdicts": verdicts}


def compilefsdp_line(procs: list[dict], judge: dict) -> str:
    """Rule CM's line: the shipped model's mean |error| per C shape and overall (compilefsdp.mean_abs_error)."""
    names = list(dict.fromkeys(p["row"]["name"] for p in procs))
    per = {n: compilefsdp.mean_abs_error(procs, "predicted", lambda p, n=n: p["row"]["name"] == n) for n in names}
    target = judge["target_pct"] / 100
    return "; ".join(f"{n} {m:.1%} ({'within' if m <= target else 'not within'})" for n, m in per.items()) + (
        f"; overall {compilefsdp.mean_abs_error(procs, 'predicted'):.1%} over {len(procs)} processes")


def rule_g(procs: list[dict], judge: dict, above: bool | None) -> str:
    if not procs:
        return "NO DATA: no G process ran"
    s = _mean_err(procs, lambda p: float(p["row"]["predicted"]["step_ms"]))
    b = _mean_err(procs, lambda p: float(p["row"]["predicted"]["step_ms_before"]))
    word = "NOISE" if above else "HELD" if s <= judge["target_pct"] / 100 else "NOT HELD"
    return f"{word}: adopt2g's mean |error| {s:.1%} over {len(procs)} processes (before adopt2g {b:.1%}, not deciding)"


def show(result: dict) -> None:
    for p in result["procs"]:   # the second column of each part, then nosync's process lines and the verdicts
        r = p["row"]
        q = {"Z3": r["predicted"].get("step_ms_candidate"), "G": r["predicted"].get("step_ms_before"),
             "C": (r.get("predicted_candidate") or {}).get("step_ms")}[r["part"]]
        label = {"Z3": "candidate", "G": "before adopt2g", "C": "free phases off"}[r["part"]]
        print(f"{p['process']:26} {label:15} {float(q):8.1f} ms  error {float(q) / 1e3 / p['step_s'] - 1:+.1%}")
    nosync.show(result)


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
