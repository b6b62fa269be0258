"""Session 48 (issue 44, moegemm): the measured expert-GEMM term (llm/moe_gemm_term.py) judged on the published LLM
families, once, by the rule registered before the measurement ran (calibration/h200x4-moegemm-2026-11-30/README.md).

    PYTHONPATH=. python validation/moegemm.py --register calibration/h200x4-moegemm-2026-11-30/registered.yaml
    PYTHONPATH=. python validation/moegemm.py [BUNDLE]     # the read-out, once runs/ is unpacked in the bundle

The rule (RULE): the term ships ON if it brings the held-out MoE rows' mean |error| down by >= 5 points without moving
the held-out Megatron/NeMo or fp8 family's mean |error| by > 0.5 point; else OFF. The term's table is the H200 group
measurement in the registered mode (heldout/moegemm.MODE, `streams`); the `loop` mode's MoE line and every mode's ratio
summary are printed as sensitivity lines (said before the run; they judge nothing).

"Held-out" here is validate --published's label (rows no fit of the model used); every MoE row, held out or not, is
development for this term (their errors chose to look at the expert GEMMs): the rule's MoE figures judge the term and are
no held-out test of it (calibration/h200x4-moegemm-2026-11-30/README.md, "Labels")."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout import moegemm  # noqa: E402
from simcluster.heldout.registration import before_adopt49, read_run_set, registering_commit, rows_then, set_main, write_registration  # noqa: E402
from simcluster.llm import moe_gemm_term, op_price  # noqa: E402
from simcluster.reference.llm import validate_published_llm  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ("MoE", "Megatron/NeMo", "fp8")
RULE = {"ON": "held-out MoE mean |error| down by >= 5.0 points, and held-out Megatron/NeMo and fp8 each moved by <= 0.5 point",
        "OFF": "otherwise"}
DROP_PTS, DENSE_PTS = 5.0, 0.5


def family_stats(rows) -> dict:
    """{family: {'held_out' | 'development': (rows, mean |error| %, within 10%)}} of validate_published_llm's rows."""
    out = {}
    for fam in FAMILIES:
        out[fam] = {}
        for label, held in (("held_out", True), ("development", False)):
            errs = [abs(r.error) for r in rows if r.family == fam and r.held_out == held and r.error is not None]
            out[fam][label] = (len(errs), round(100 * sum(errs) / len(errs), 2) if errs else None, sum(e <= 0.10 for e in errs))
    return out


def moe_rows(rows) -> dict:
    """{'source row': signed error %} of the held-out MoE rows."""
    return {f"{r.source} {r.run}": round(100 * r.error, 2) for r in rows if r.family == "MoE" and r.held_out and r.error is not None}


def judged_rows(rows) -> list:
    """validate --published llm's rows as the files there were when moegemm and moerouter registered priced them
    (heldout/registration.rows_then): the MoE family limited to the 13 files the router term's rule priced
    (moe_rows_then, llm/moe_router_term.JUDGED_FILES; publ50's Model Zoo files, recorded after both, left out: cold review
    B50 items 5 and 6), the other families on the files held then (registration.FILES_THEN, an allow-list frozen in
    session 51 mendF51, publ51's left out), so that their read-outs reproduce."""
    return rows_then(rows)


def families_with(switch_on, switch_off) -> tuple[dict, dict]:
    """The families and held-out MoE rows of one validate pass with a term switched by switch_on() (switch_off() after;
    op_price's memo cleared around it): validation/moerouter.py's pass too. Both sets registered before adopt49, so the
    pass runs as they priced it (heldout/registration.before_adopt49: the router term off unless switch_on enables it,
    the MoE rows held out as their files say), on the MoE rows of the files they priced (judged_rows)."""
    with before_adopt49():
        switch_on()
        op_price.forget()
        try:
            rows = judged_rows(validate_published_llm().rows)
        finally:
            switch_off()
            op_price.forget()
    return family_stats(rows), moe_rows(rows)


def predict(table=None) -> tuple[dict, dict]:
    """The families and held-out MoE rows with the term off (table None) or on with `table`."""
    return families_with(lambda: moe_gemm_term.enable(table) if table else moe_gemm_term.disable(), moe_gemm_term.disable)


def write_families(path: Path, script: str, head: dict, fams: dict, moe: dict, grid) -> None:
    """A set's registered.yaml: `head` (set, issue, commit, ... rule), the term-off families, the held-out MoE rows and
    the grid; validation/moerouter.py's registration too."""
    import yaml

    doc = {**head, "rows": [{"family": f, "split": s, "rows": v[0], "mean_abs_error_pct": v[1], "within_10pct": v[2]}
                            for f, by in fams.items() for s, v in by.items()],
           "moe_held_out_before_pct": moe, "grid": [list(g) for g in grid]}
    write_registration(path, f"# registered before the run (validation/{script} --register): the term-off families and the rule\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def register(path: Path) -> None:
    fams, moe = predict()
    head = {"set": "moegemm", "issue": 44, "commit": registering_commit(ROOT), "mode": moegemm.MODE,
            "card": str(moegemm.H200_CARD.relative_to(ROOT)), "trace": f"runs/{moegemm.TRACE}", "rule": RULE}
    write_families(path, "moegemm.py", head, fams, moe, moegemm.GRID)


def verdict(before: dict, after: dict) -> str:
    drop = before["MoE"]["held_out"][1] - after["MoE"]["held_out"][1]
    moved = {f: abs(after[f]["held_out"][1] - before[f]["held_out"][1]) for f in ("Megatron/NeMo", "fp8")}
    on = drop >= DROP_PTS and all(m <= DENSE_PTS for m in moved.values())
    return (f"{'ON' if on else 'OFF'} (MoE held out down {drop:+.2f} points, rule >= {DROP_PTS}; "
            + ", ".join(f"{f} moved {m:.2f}" for f, m in moved.items()) + f", rule <= {DENSE_PTS})")


def registered_before(reg: dict, where: Path) -> tuple[dict, dict]:
    """The term-off figures the set registered (`rows`, `moe_held_out_before_pct`), in predict()'s shape: the read-out's
    'before', so a later change to the model cannot move what the rule was fixed against."""
    try:
        fams = {f: {} for f in FAMILIES}
        for r in reg["rows"]:
            fams[r["family"]][r["split"]] = (int(r["rows"]), r["mean_abs_error_pct"], int(r["within_10pct"]))
        moe = {str(k): float(v) for k, v in reg["moe_held_out_before_pct"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SimclusterError(f"{where}: rows / moe_held_out_before_pct unreadable ({type(exc).__name__}: {exc})") from None
    return fams, moe


def read_out(bundle: Path) -> dict:
    """'before': the registered term-off figures; 'after' (term on), the loop sensitivity and the verdict: today's model
    (MODEL_NOW_PARTS: the parts of the print a later model change may move)."""
    reg = read_run_set(bundle, {"set": "moegemm"})
    try:
        trace, card, mode = Path(bundle) / str(reg["trace"]), ROOT / str(reg["card"]), str(reg["mode"])
    except KeyError as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: no {exc} key (expected trace, card, mode)") from None
    before, moe_before = registered_before(reg, Path(bundle) / "registered.yaml")
    table = moegemm.table_of(trace, card, mode)
    after, moe_after = predict(table)
    loop = moegemm.table_of(trace, card, "loop")
    sens = {"loop": predict(loop)[0]["MoE"]["held_out"]}
    ratios = {mode: sorted(r[4] for r in table), "loop": sorted(r[4] for r in loop)}
    grouped = _grouped(trace, card)
    if grouped:
        ratios["grouped_mm"] = grouped
    return {"before": before, "after": after, "moe_before": moe_before, "moe_after": moe_after, "sens": sens,
            "ratios": ratios, "mode": mode, "verdict": verdict(before, after)}


def registered_part(printed: str) -> str:
    """The lines of the print no later model change can move (tests/test_registered_readouts compares these with
    readout.txt): the measured ratio lines, and each family / MoE row line up to its 'after' figure (the registered
    'before'); the 'after' figures, the loop sensitivity and the RULE line are today's model (term on) and are left out."""
    kept = []
    for line in printed.splitlines():
        if line.startswith("# mode "):
            kept.append(line)
        elif " | after " in line or " -> " in line:
            kept.append(line.split(" | after ")[0].split(" -> ")[0])
    return "\n".join(kept) + "\n"


def _grouped(trace: Path, card: Path) -> list[float]:
    """torch._grouped_mm's ratios (bf16 only; a reference: Megatron's TE layer does not run it), [] if none ran."""
    try:
        return sorted(r[4] for r in moegemm.table_of(trace, card, "grouped_mm"))
    except SimclusterError:
        return []


def family_line(v) -> str:
    return f"{v[0]} rows, mean |error| {v[1]:.2f}%, {v[2]} within 10%"


def show_families(res: dict) -> None:
    """The family lines before / after and each held-out MoE row's (validation/moerouter.py's show too)."""
    for fam in FAMILIES:
        for split in ("held_out", "development"):
            print(f"{fam:14s} {split:12s} before {family_line(res['before'][fam][split])} | after {family_line(res['after'][fam][split])}")
    for key, err in res["moe_before"].items():
        now = res["moe_after"].get(key)
        print(f"  MoE held out {key}: {err:+.2f}% -> " + ("no such row now" if now is None else f"{now:+.2f}%"))


def show(res: dict) -> None:
    line = family_line
    for mode, r in res["ratios"].items():
        print(f"# mode {mode}: {len(r)} measured groups, ratio measured / H200 card min {r[0]:.3f} median {r[len(r) // 2]:.3f} "
              f"max {r[-1]:.3f}{' (registered)' if mode == res['mode'] else ' (judges nothing)'}")
    show_families(res)
    for mode, v in res["sens"].items():
        print(f"sensitivity (judges nothing): mode {mode}: MoE held out {line(v)}")
    print(f"RULE: {res['verdict']}")


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], moegemm.BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
