"""Issue 44, session 48 (helper compck2): FSDP2 + whole-model torch.compile + full activation checkpointing on 2 ranks,
the second registered check of compck's candidate (framework.whole_model_graph), with this lease's own host measured.
A registered 2 x H200 set (calibration/h200x2-compck2-2026-11-30) run as compck's (validation/compck.py: its rules N, M,
B, P, F, G, D, MC and R imported) on two new shapes, three processes each, A B | B A | A B, led by four hidden-128 host
runs (runs/host: single and fsdp at 2 and 32 layers, the product host folder's shapes) for this lease's own host fit.

Four columns: `predicted` the shipped model, `predicted_candidate` whole_model_graph on, `predicted_free` with
framework.fsdp_free_phases on too (the three registered numbers; the free-phase term chosen on the development rows),
and `predicted_lease`, the candidate with this lease's own host fit, computed at the read-out by lease_column from runs/host
by a mapping committed before the run (heldout/eager_compilefsdp.fits(own_host): this lease's single and fsdp fits in
place of the product's pooled ones, the compile fit at this lease's single speed by fits()' own rule). Rule H names which
of compck's two readings the set supports: (a) the candidate is right and compck's 0.5b miss is the lease's host speed,
or (b) a larger miss in the compiled step. Development: compck's, repeats47's, compileac's, compilefsdp's fsdp rows.

    python validation/compck2.py --register calibration/h200x2-compck2-2026-11-30/registered.yaml   # before
    python validation/compck2.py [calibration/h200x2-compck2-2026-11-30]                             # after
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import compck  # noqa: E402
import compilefsdp  # noqa: E402
import nosync  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.eager_compilefsdp import fits, predict  # noqa: E402
from simcluster.heldout.registration import set_main  # noqa: E402
from simcluster.llm import eager  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-compck2-2026-11-30"
PROCESSES = compck.PROCESSES
VARIANT = compck.VARIANT
# (preset, seq, micro_batch, why): seqs from this helper's own list (320, 608, 928, 1120, 1824, 2080, 2528, 3104)
SHAPES = (("1b", 2528, 3, "GPU-bound (predicted host share 0.10 shipped): the candidate's GEMM term dominates"),
          ("0.5b", 2080, 5, "host share 0.34 shipped (compck's 0.5b shape 0.36): where a lease's host speed would show"))
JUDGE = compck.JUDGE
LEASE_HOST = "runs/host"   # the bundle's hidden-128 host runs (device_run.sh)
RULES = compck.RULES | {
    "LH": "reported, not judged: this lease's own single and fsdp host cost per kernel and per step (eager.fit_modes of "
          "runs/host) against the product's pooled fits (heldout/eager_compilefsdp.fits()), as ratios",
    "ML": "M for the candidate with this lease's own host fit (`predicted_lease`, computed at the read-out by "
          "validation/compck2.lease_column: heldout/eager_compilefsdp.predict with own_host = runs/host and "
          "framework.whole_model_graph on): mean |error| per shape and over every process <= target_pct -> 'within'; "
          "NO DATA if runs/host lacks two layer counts of single or fsdp",
    "MF": "M for the free-phase column (`predicted_free`: framework.whole_model_graph and fsdp_free_phases on, the "
          "host of the one-stage FSDP2 step free across forward, backward and optimizer, launch_backlog.fsdp_step): mean "
          "|error| per shape and over every process <= target_pct -> 'within'",
    "RF": "UNDECIDED if N is ABOVE the target; else ADOPT if MF is within and neither M nor MC is; REJECT if MF is not "
          "within and M or MC is; else UNDECIDED. Consequence, fixed before the run: ADOPT -> framework.whole_model_graph "
          "and fsdp_free_phases both turned on for the runner's FSDP2 whole-model compile (torch-compile+fsdp2; this "
          "supersedes R's consequence; these rows and the 18 development processes then development for the product); "
          "REJECT -> fsdp_free_phases stays off, written up as ruled out on this set; UNDECIDED -> it stays off",
    "H": "UNDECIDED if N is ABOVE the target or ML has no data; else A (HOST) if ML is within (the candidate with this "
         "lease's host within on every shape and overall) and MC is not; CANDIDATE if both are within (no host-side miss "
         "to separate); B (COMPILED STEP) if neither is; else UNDECIDED (MC within, ML not). Consequence, fixed before "
         "the run: A -> compck's 0.5b miss is written up as the lease's host speed (the product's pooled host term "
         "stays); CANDIDATE -> written up as the candidate right on this set with no host miss shown; B -> the next "
         "candidate is sought in the compiled step's own price (llm/compiled.py, llm/eager_compiled.py), these rows "
         "development for it; in every case R alone decides whole_model_graph, as registered",
}


def free_phases(preset: str, seq: int, mb: int) -> dict:
    """The free-phase column: compck's candidate with framework.fsdp_free_phases on too (development-chosen: the compck,
    repeats47, compileac and compilefsdp fsdp processes, docs/models/llm-findings.md "session 48 compck2")."""
    with eager.torch_framework_as(lambda fw: replace(fw, whole_model_graph=True, fsdp_free_phases=True)):
        return predict(preset, seq, mb, VARIANT)


def rows() -> list[dict]:
    return [compilefsdp.row(preset, seq, mb, VARIANT, PROCESSES, predicted=predict(preset, seq, mb, VARIANT),
                            predicted_candidate=compck.candidate(preset, seq, mb),
                            predicted_free=free_phases(preset, seq, mb)) for preset, seq, mb, _ in SHAPES]


def register(path: Path) -> None:
    notes = {"model": "`predicted` the shipped one (heldout/eager_compilefsdp.predict, the product's framework), "
                      "`predicted_candidate` with framework.whole_model_graph on; nothing fitted on the step runs",
             "predicted_free": "framework.whole_model_graph and fsdp_free_phases on (validation/compck2.free_phases); "
                               "the free-phase term chosen on the development processes below",
             "predicted_lease": "not a number registered here: computed at the read-out by validation/compck2.lease_column "
                                "from runs/host (this lease's single-L2/L32 and fsdp-L2/L32 hidden-128 runs), the "
                                "mapping committed with this registration",
             "development_for_the_candidate": "calibration/h200x2-compck-2026-11-30, h200x2-repeats47-2026-11-30, "
                                              "h200x2-compileac-2026-11-30 and h200x2-compilefsdp-2026-11-30 (their fsdp "
                                              "rows), KempnerForge's compiled rows",
             "shapes": {f"{p}-{s}x{mb}-{VARIANT}": why for p, s, mb, why in SHAPES}}
    nosync.register(path, "validation/compck2.py --register", judge=JUDGE, rules=RULES, session=48,
                    calibration=compilefsdp.CALIBRATION, regs=rows(), notes=notes, line=_line)


def _line(r: dict) -> str:
    return compck._line(r) + f"  free phases {r['predicted_free']['step_ms']:8.2f} ms"


def lease_column(reg: dict, host: Path) -> dict:
    """The candidate (whole_model_graph on, fsdp_free_phases off: the registered mapping, whatever the product's
    since session 48 adopt48) with the lease's own host fit from `host` (fits(own_host))."""
    with eager.torch_framework_as(lambda fw: replace(fw, whole_model_graph=True, fsdp_free_phases=False)):
        return predict(reg["preset"], int(reg["seq"]), int(reg["micro_batch"]), reg["variant"], own_host=host)


def lease_line(host: Path) -> str:
    """Rule LH's line: this lease's single and fsdp fits over the product's (per kernel, per step)."""
    own, product = fits(host), fits()
    return "; ".join(f"{m} {own[m][0] * 1e6:.1f} us/kernel + {own[m][1] * 1e3:.2f} ms/step (x{own[m][0] / product[m][0]:.2f}, "
                     f"x{own[m][1] / product[m][1]:.2f} the product's)" for m in ("single", "fsdp", "compile"))


def read_out(bundle: Path) -> dict:
    result = compck.read_out(bundle)
    procs, verdicts = result["procs"], result["verdicts"]
    if not procs:   # compck's read-out said NO DATA for MC and R
        verdicts.update({k: "NO DATA: no process ran" for k in ("MF", "RF", "LH", "ML", "H")})
        return result
    target = nosync.read_registration(bundle, JUDGE)[0]["target_pct"] / 100
    above = "ABOVE" in verdicts["N"]   # rule N's line: process noise above the target
    ship_ok, cand_ok = verdicts["M"].startswith("within"), verdicts["MC"].startswith("within")
    free_ok, verdicts["MF"] = compck._within(procs, "predicted_free", target)
    verdicts["RF"] = ("UNDECIDED: process noise above the target" if above else
                      "ADOPT: the free-phase column within, the shipped model and the candidate not"
                      if free_ok and not (ship_ok or cand_ok) else
                      "REJECT: the free-phase column not within, the shipped model or the candidate within"
                      if not free_ok and (ship_ok or cand_ok) else
                      f"UNDECIDED: free phases {_word(free_ok)}, shipped {_word(ship_ok)}, candidate {_word(cand_ok)}")
    host = bundle / LEASE_HOST
    try:
        verdicts["LH"] = lease_line(host)
        for p in procs:
            p["row"]["predicted_lease"] = lease_column(p["row"], host)
    except SimclusterError as exc:   # no or bad runs/host (fits(own_host)); a coding error is a failure, not NO DATA
        verdicts["LH"] = verdicts["ML"] = f"NO DATA: {exc}"
        verdicts["H"] = "UNDECIDED: no lease column"
        return result
    lease_ok, verdicts["ML"] = compck._within(procs, "predicted_lease", target)
    verdicts["H"] = ("UNDECIDED: process noise above the target" if above else
                     "A (HOST): the candidate within with this lease's host, not with the product's" if lease_ok and not cand_ok
                     else "CANDIDATE: the candidate within with this lease's host and the product's" if lease_ok else
                     "B (COMPILED STEP): the candidate not within, with this lease's host or the product's" if not cand_ok
                     else "UNDECIDED: the candidate within, with this lease's host not")
    return result


def _word(ok: bool) -> str:
    return "within" if ok else "not within"


def show(result: dict) -> None:
    for p in result["procs"]:   # the free-phase and lease columns, then compck's lines (candidate, shipped, verdicts)
        for key, label in (("predicted_free", "free phases"), ("predicted_lease", "cand+lease")):
            q = p["row"].get(key)
            if q is not None:
                print(f"{p['process']:26} {label:11} {float(q['step_ms']):8.1f} ms  error "
                      f"{float(q['step_ms']) / 1e3 / p['step_s'] - 1:+.1%}  host share {q['host_share']}")
    compck.show(result)


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
