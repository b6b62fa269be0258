"""Session 49 (issue 44, moelab49): an independent check of the MoE router / permutation term (llm/moe_router_term.py,
measured in calibration/h200x1-moerouter-2026-12-01) on Megatron-Core MoE layers that no set has run: the local layer
spec (its router and permutations in torch, the form moerouter measured), 2 x H200, four configurations
(studies/megatron_moe/register.py SET49) each launched twice, every step predicted twice before the run: term OFF (the
product as it priced these layers before) and term ON (moe_router_term enabled with moerouter's table, as adopt49 ships it).

    PYTHONPATH=. python validation/moelab49.py --register calibration/h200x2-moelab49-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/moelab49.py [BUNDLE]     # the read-out, once runs/ is unpacked in the bundle
    PYTHONPATH=. python validation/moelab49.py --development  # the earlier lab sets' rows, term off / on (development)

Measured step of a configuration: the mean over its launches (runs/ and runs/launch2/) of rank 0's median step; a launch
counts if its document is ok, on 2 H200s, of the registered flags, with every rank pinned (arm B). Error = predicted /
measured - 1. The rule (RULE, fixed before the run), on the mean |error| over the configurations measured, ON vs OFF:
HOLDS if ON <= OFF - margin and ON <= level; FAILS if ON > OFF + margin; else UNDECIDED; fewer than
min_configurations measured: NO READING. Printed, judging nothing: each launch, the launches' spread, the term's router
piece alone and its permutation piece alone (their mean |error|), the GPU-only part."""

from __future__ import annotations

import statistics
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout import moe_lab, moerouter  # noqa: E402
from simcluster.heldout.registration import print_verdicts, read_run_set, registering_commit, set_main, write_registration  # noqa: E402
from simcluster.llm import moe_router_term, op_price  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SET = "h200x2-moelab49-2026-12-01"
BUNDLE = ROOT / "calibration" / SET
GPUS = 2
LAUNCH2 = moe_lab.LAUNCH2             # runs/launch2/: each configuration's second launch
RULE = {"margin_points": 3.0, "level_pct": 10.0, "min_configurations": 3}
# column -> (tables() key, registered.yaml key); the first two priced in the read-out's table, the pieces as errors alone
COLUMNS = {"off": ("off", "predicted_step_s"), "on": ("on", "predicted_on_s"), "router_only": ("router_only", "router_only_s"),
           "permute_only": ("permute_only", "permute_only_s")}


def configurations(set_name: str = "moelab49") -> tuple:
    """(a set's configurations, arm B, the flags function) of studies/megatron_moe/register.py (moelab49b's too)."""
    sys.path.insert(0, str(ROOT / "studies" / "megatron_moe"))
    import register

    return register.SETS[set_name][0], register.ARMS["B"], register.flags


def tables() -> dict:
    """The term's table per column (None: off): moerouter's, its router piece alone (permute ratios 1), its permutation
    piece alone (router extras 0)."""
    t, _ = moerouter.table_of(moerouter.BUNDLE / "runs" / moerouter.TRACE)
    return {"off": None, "on": t, "router_only": [(*r[:5], 1.0, 1.0, r[7]) for r in t],
            "permute_only": [(*r[:3], 0.0, 0.0, *r[5:]) for r in t]}


@contextmanager
def term_as(table):
    """The term on `table` (None: off) inside the block, its scope (moe_router_term.ADOPTED since adopt49) widened to the
    local spec while on (moe_router_term.set_scope; the labels keep ADOPTED). The term's whole state (table, rate,
    labels, scope: moe_router_term.state) is restored in a finally, op_price's memo cleared both ways
    (validation/moelab49b.py prices the published rows inside it too)."""
    saved = moe_router_term.state()
    try:
        if table:
            moe_router_term.enable(table, moerouter.h200_rate())
            moe_router_term.set_scope((*moe_router_term.ADOPTED, moe_lab.FRAMEWORK))
        else:
            moe_router_term.disable()
        op_price.forget()
        yield
    finally:
        moe_router_term.set_state(saved)
        op_price.forget()


def step_with(m: dict, table, fw=None, gpus: int = GPUS) -> float:
    """The lab step (heldout/moe_lab.step_s, H200) with the term on `table` (None: off) applied to the local spec's router
    and permute ops (term_as)."""
    with term_as(table):
        return moe_lab.step_s(m, gpus, "H200", fw)[0]


def predict() -> dict:
    """{name: {flags, predicted_step_s (OFF), predicted_on_s, router_only_s, permute_only_s, gpu_only_s}}."""
    from simcluster.llm.framework import MEGATRON_LOCAL

    configs, _, flags = configurations()
    tabs = tables()
    return {name: {"flags": flags(m), **priced(m, tabs, COLUMNS),
                   "gpu_only_s": round(step_with(m, None, replace(MEGATRON_LOCAL, moe_host=None)), 6)}
            for name, m in configs.items()}


def priced(m: dict, tabs: dict, columns: dict) -> dict:
    """A configuration's registered steps: {registered.yaml key: the step with the term on that column's table, s (6
    decimals)} for each column of `columns` (COLUMNS' shape; moelab49b's too)."""
    return {key: round(step_with(m, tabs[t]), 6) for t, key in columns.values()}


def head(set_id: str, arm: dict, rule: dict) -> dict:
    """A lab registration's head: set, commit, framework, GPUs, the term's trace and card, arm B, the launches, the rule
    (moelab49b's too)."""
    return {"set": set_id, "issue": 44, "commit": registering_commit(ROOT), "framework": moe_lab.FRAMEWORK,
            "gpu": f"H200 x {GPUS} (NVLink, NCCL_NVLS_ENABLE=0), one micro-batch forward + backward",
            "term_trace": str((moerouter.BUNDLE / "runs" / moerouter.TRACE).relative_to(ROOT)),
            "term_card": str(moerouter.H200_CARD.relative_to(ROOT)),
            "arms": {"B": {"what": arm["what"], "device_flags": arm["flags"],
                           "env": " ".join(f"{k}={v}" for k, v in arm["env"].items())}},
            "launches": ["runs", f"runs/{LAUNCH2}"], "rule": rule}


def register(path: Path) -> None:
    import yaml

    doc = {**head(SET, configurations()[1], RULE), "runs": predict()}
    doc["rows"] = list(doc["runs"])
    write_registration(path, "# registered before the run (validation/moelab49.py --register): each configuration's step "
                       "with the router term OFF (predicted_step_s) and ON (predicted_on_s), and the rule\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def launches(bundle: Path, name: str, flags: str, left: list[str]) -> list[float]:
    """A configuration's counted launches' rank-0 median steps (heldout/moe_lab.counted_launches: runs/, runs/launch2/);
    each launch left out appended to `left` with why (moelab49b's read-out too)."""
    skipped: list[moe_lab.Skipped] = []
    docs = moe_lab.counted_launches(Path(bundle), name, flags, GPUS, "H200", skipped)
    left += [f"{s.file}: {s.why}" for s in skipped]
    return [float(d["rank0"]["median_step_s"]) for d in docs]


def verdict(off: list[float], on: list[float], rule: dict = RULE) -> str:
    """The rule on the configurations' errors (fractions), term off and on."""
    return two_way(off, on, rule, ("OFF", "ON"), ("HOLDS", "FAILS", "UNDECIDED"), lambda a_off, a_on, m: a_on > a_off + m)


def two_way(base: list[float], cand: list[float], rule: dict, names: tuple, readings: tuple, loses) -> str:
    """A candidate column against a base column on the configurations' errors (fractions): readings[0] if the candidate's
    mean |error| <= the base's - margin and <= level; readings[1] if loses(base's, candidate's, margin) (mean |error| %);
    else readings[2]; NO READING under min_configurations (moelab49b's P-vs-ON rule too)."""
    if len(cand) < rule["min_configurations"]:
        return f"NO READING ({len(cand)} configurations measured, rule >= {rule['min_configurations']})"
    a_base, a_cand = (100 * statistics.fmean(abs(e) for e in errs) for errs in (base, cand))
    said = (f"mean |error| {names[1]} {a_cand:.1f}% vs {names[0]} {a_base:.1f}% over {len(cand)} configurations; margin "
            f"{rule['margin_points']} points, level {rule['level_pct']}%")
    if a_cand <= a_base - rule["margin_points"] and a_cand <= rule["level_pct"]:
        return f"{readings[0]} ({said})"
    if loses(a_base, a_cand, rule["margin_points"]):
        return f"{readings[1]} ({said})"
    return f"{readings[2]} ({said})"


def read_out(bundle: Path) -> dict:
    reg, rows, left = measured_rows(bundle, SET, COLUMNS)
    return {"rows": rows, "left": left, "verdict": verdict([x["off"] for x in rows], [x["on"] for x in rows], reg["rule"])}


def measured_rows(bundle: Path, set_id: str, columns: dict, extra: tuple = ()) -> tuple[dict, list, list]:
    """A lab set's registration (set `set_id`; moelab49b's too) and its runs as read: (registered.yaml, rows, left).
    A row per configuration with a counted launch: its launches' steps (s), their mean (measured_s), max / min (spread),
    its registration (reg) and per column of `columns` the error of its registered step (predicted / measured - 1); left:
    each launch left out, with why. A registration without the runs, rule (and `extra`) mappings, or a run without its
    flags or a column's step, is one SimclusterError line naming the file and the key, before any run is read."""
    reg, path = read_run_set(bundle, {"set": set_id}), Path(bundle) / "registered.yaml"
    keys, name = ("runs", "rule", *extra), set_id.split("-")[1]
    if not all(isinstance(reg.get(k), dict) for k in keys):
        raise SimclusterError(f"{path}: no {' / '.join(keys)} mapping (expected {name}'s registration)")
    for run, r in reg["runs"].items():
        for key in ("flags", *(k for _, k in columns.values())):
            v = r.get(key) if isinstance(r, dict) else None
            if not (isinstance(v, str) if key == "flags" else isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0):
                raise SimclusterError(f"{path}: runs: {run}: {key} missing or not a {'string' if key == 'flags' else 'step > 0'}"
                                      f" (expected {name}'s registration)")
    rows, left = [], []
    for run, r in reg["runs"].items():
        steps = launches(bundle, run, r["flags"], left)
        if steps:
            meas = statistics.fmean(steps)
            rows.append({"name": run, "launches": steps, "measured_s": meas, "spread": max(steps) / min(steps), "reg": r,
                         **{c: r[k] / meas - 1 for c, (_, k) in columns.items()}})
    return reg, rows, left


def show(res: dict) -> None:
    print_rows(res["rows"], {c: COLUMNS[c] for c in ("off", "on")}, ("router_only", "permute_only"))
    if res["rows"]:
        print("mean |error|: " + ", ".join(f"{c} {mean_abs_pct(res['rows'], c):.1f}%" for c in COLUMNS)
              + " (router_only / permute_only: printed, judging nothing)")
    print_verdicts({"RULE": res["verdict"]}, res["left"])


def print_rows(rows: list[dict], priced: dict, alone: tuple = ()) -> None:
    """A lab read-out's table (moelab49b's too): the header, then per configuration its launches and measured step (ms),
    per column of `priced` (COLUMNS' shape) its registered step (ms) and error, per column of `alone` its error alone."""
    print(f"{'configuration':34s} {'launches (ms)':>17s} {'measured':>9s} | " + " | ".join(f"{c.upper():>17s}" for c in priced)
          + (" | " + " ".join(c.replace("_", "-") for c in alone) if alone else ""))
    for x in rows:
        cols = " | ".join(f"{1e3 * x['reg'][k]:7.2f} {100 * x[c]:+6.1f}%" for c, (_, k) in priced.items())
        cols += (" | " + " ".join(f"{100 * x[c]:+6.1f}%" for c in alone)) if alone else ""
        print(f"{x['name']:34s} {' / '.join(f'{1e3 * s:.1f}' for s in x['launches']):>17s} {1e3 * x['measured_s']:7.2f}ms | "
              f"{cols}  (spread {x['spread']:.3f}x)")


def mean_abs_pct(rows: list[dict], column: str) -> float:
    """The rows' mean |error| in `column`, percent (moelab49b's too)."""
    return 100 * statistics.fmean(abs(x[column]) for x in rows)


def development() -> None:
    """Today's model with the term off and on against every earlier registered lab set's rows (development: all seen)."""
    tabs = tables()
    for folder in moe_lab.REGISTERED:
        rows, flags = moe_lab.read_set(ROOT / folder)[0], moe_lab.registered_steps(ROOT / folder)
        errs = {"off": [], "on": []}
        for r in rows:
            words = flags[r["run"]]["flags"].split()
            m = {w[2:].replace("-", "_"): int(v) for w, v in zip(words[::2], words[1::2], strict=True)}
            for c in errs:
                errs[c].append(step_with(m, tabs[c], gpus=r["gpus"]) / r["measured_s"] - 1)
        if rows:
            print(f"{folder.split('/')[-1]:34s} {len(rows):2d} rows: mean |error| OFF "
                  f"{100 * statistics.fmean(map(abs, errs['off'])):.1f}% (signed {100 * statistics.fmean(errs['off']):+.1f}%), ON "
                  f"{100 * statistics.fmean(map(abs, errs['on'])):.1f}% (signed {100 * statistics.fmean(errs['on']):+.1f}%)")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--development"]:
        development()
        return 0
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
