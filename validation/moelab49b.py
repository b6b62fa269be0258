"""Session 49 (issue 44, moelab49b): is the MoE router term's ROUTER piece real? Four more Megatron-Core local-spec MoE
layers no set has run (studies/megatron_moe/register.py SET49B), 2 x H200, each launched twice as moelab49 (its device
flow, launches and read-out: validation/moelab49.py), every step predicted three times before the run: term OFF, ON (the
whole term: moerouter's table, as adopt49 ships it) and P (its permutation piece alone: the router extras at 0).

    PYTHONPATH=. python validation/moelab49b.py --register calibration/h200x2-moelab49b-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/moelab49b.py [BUNDLE]     # the read-out, once runs/ is unpacked in the bundle

Measured step and counted launches: moelab49's (the mean of the counted launches' rank-0 median steps). Error = predicted
/ measured - 1. The rule (RULE, fixed before the run), on the mean |error| over the configurations measured, P vs ON:
P REPLACES ON if P <= ON - margin and P <= level; ON STAYS if ON <= P - margin; else UNDECIDED (ON stays); fewer than
min_configurations measured: NO READING. Printed, judging nothing: the OFF column's mean |error|, and the published MoE
rows' mean |error| (all 70 development for the term) with each column's table, computed at registration and read from
registered.yaml."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.heldout.registration import moe_rows_then, moedev51_off, print_verdicts, set_main, write_registration  # noqa: E402
from simcluster.reference.llm import validate_published_llm  # noqa: E402
from validation import moelab49  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SET = "h200x2-moelab49b-2026-12-01"
BUNDLE = ROOT / "calibration" / SET
RULE = {"margin_points": 3.0, "level_pct": 10.0, "min_configurations": 3}
# column -> (moelab49.tables() key, registered.yaml key)
COLUMNS = {"off": ("off", "predicted_step_s"), "on": ("on", "predicted_on_s"), "p": ("permute_only", "predicted_p_s")}


def published_moe(table) -> dict:
    """The published MoE rows (validate --published llm; every one development for the term) with the term on `table`
    (None: off): {rows, mean_abs_error_pct, signed_mean_error_pct}."""
    with moelab49.term_as(table), moedev51_off():   # moedev51_off: the model as registered (session 51's facts off)
        errs = [r.error for r in moe_rows_then(validate_published_llm().rows)]   # its 70 rows (publ50's 7 left out)
    return {"rows": len(errs), "mean_abs_error_pct": round(100 * statistics.fmean(map(abs, errs)), 2),
            "signed_mean_error_pct": round(100 * statistics.fmean(errs), 2)}


def register(path: Path) -> None:
    import yaml

    configs, arm, flags = moelab49.configurations("moelab49b")
    tabs = moelab49.tables()
    runs = {name: {"flags": flags(m), **moelab49.priced(m, tabs, COLUMNS)} for name, m in configs.items()}
    doc = {**moelab49.head(SET, arm, RULE), "runs": runs, "rows": list(runs),
           "published_moe_development": {c: published_moe(tabs[t]) for c, (t, _) in COLUMNS.items()}}
    write_registration(path, "# registered before the run (validation/moelab49b.py --register): each configuration's step "
                       "with the router term OFF (predicted_step_s), ON (predicted_on_s) and its permutation piece alone "
                       "(predicted_p_s); the published MoE rows' figures per column (development); the rule\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def verdict(on: list[float], p: list[float], rule: dict = RULE) -> str:
    """The rule on the configurations' errors (fractions), ON (the base) and P (the candidate)."""
    return moelab49.two_way(on, p, rule, ("ON", "P"), ("P REPLACES ON", "ON STAYS", "UNDECIDED, ON stays"),
                            lambda a_on, a_p, m: a_on <= a_p - m)


def read_out(bundle: Path) -> dict:
    reg, rows, left = moelab49.measured_rows(bundle, SET, COLUMNS, ("published_moe_development",))
    return {"rows": rows, "left": left, "published": reg["published_moe_development"],
            "verdict": verdict([x["on"] for x in rows], [x["p"] for x in rows], reg["rule"])}


def show(res: dict) -> None:
    moelab49.print_rows(res["rows"], COLUMNS)
    if res["rows"]:
        print("mean |error|: " + ", ".join(f"{c.upper()} {moelab49.mean_abs_pct(res['rows'], c):.1f}%" for c in COLUMNS)
              + " (OFF: printed, judging nothing)")
    print("published MoE rows, development for the term (registered, judging nothing): "
          + ", ".join(f"{c.upper()} {v['mean_abs_error_pct']}% (signed {v['signed_mean_error_pct']:+}%, {v['rows']} rows)"
                      for c, v in res["published"].items()))
    print_verdicts({"RULE": res["verdict"]}, res["left"])


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
