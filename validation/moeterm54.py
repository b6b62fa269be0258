"""Session 54 (issue 44, moeterm54): the adoption rule of the MoE serial host floor (llm/moe_host_floor.py, OFF), registered
before the term was printed on any row outside its development rows, for a later session to read.

    PYTHONPATH=. python validation/moeterm54.py --register calibration/rule-moeterm54-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/moeterm54.py [BUNDLE]            # the judgement (NOT JUDGED until enough rows exist)
    PYTHONPATH=. python validation/moeterm54.py --development       # the AWS rows (development) with the floor off / on

Rows: validate --published llm's rows with an error that the project labels held out (ReferenceRow.held_out), of the
families MoE, Megatron/NeMo and fp8, each in one class:
  development  a row of a DEVELOPMENT file (AWS's Qwen3-30B-A3B cells: their gap chose the term and its constant,
               moe54 / moe54b / moe54c): reported, never judged;
  regime       a MoE row in the floor's regime (moe_host_floor.in_regime: a framework it prices, router / preprocess not
               CUDA-graphed, hidden <= 4096, >= 8 local experts, the model's own serial host count at c above the pass's
               compute) recorded AFTER the registration
               (recorded_after: its file is not among registered.yaml's `files`, calibration/published/llm-*.yaml at the
               registering commit read from git, and the commit that added it descends from that commit; or its index is
               at or beyond the count of runs `files` holds and its file's newest commit descends from it; a file from a
               branch made beside the registration is not "after");
  seen         a MoE row in the regime recorded before (printed under candidate floors in moe54b): reported, not judged;
  guard        every other row (MoE outside the regime -- graphed recipes among them --, Megatron/NeMo, fp8); the
               development file's rows are not in the guard.
Rule (fixed at registration; registered.yaml `rule`, `thresholds`):
  NOT JUDGED   fewer than MIN_ROWS regime rows, or fewer than MIN_SOURCES sources among them (source_group: R1-R4);
  ON           the regime rows' mean |error| falls by >= GAIN_PTS points with the floor on (c_s as registered, in seconds:
               the read-out enables ratio = c_s / today's c, so a refit of c does not move c_s),
               and each guard family's (MoE, Megatron/NeMo, fp8) mean |error| rises by <= GUARD_PTS point;
  OFF          otherwise.
The floor is computed on no row unless the rule is judged (or for --development, the AWS rows alone).
REGISTERED REVISION 1 (final read 54 item 2; made after the development prints of studies/moeterm54_dev.txt, with 0 regime
rows in existence, so no held-out row was seen): the regime excludes CUDA-graphed router / preprocess (the term's stated
valid range), c (147.2 us) and c_s (229.4 us) are recorded and c_s is fixed in seconds, and the rule text says the
development rows are not in the guard."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import read_rule_registration, registering_commit, set_main, write_registration  # noqa: E402
from simcluster.llm import moe_host_floor  # noqa: E402
from simcluster.llm.framework import MEGATRON  # noqa: E402

BUNDLE = ROOT / "calibration" / "rule-moeterm54-2026-12-01"
PUBLISHED = "calibration/published"
DEVELOPMENT = ("llm-awsome-megatron-bridge-qwen3-30b-p5-h100",)
FAMILIES = ("MoE", "Megatron/NeMo", "fp8")
MIN_ROWS, MIN_SOURCES, GAIN_PTS, GUARD_PTS = 4, 2, 5.0, 0.5
RULE = (f"regime rows = held-out MoE rows in moe_host_floor.in_regime (router / preprocess not CUDA-graphed) recorded after the "
        f"registration (recorded_after: a file not in "
        f"`files` added by a commit descending from `commit`, or a row beyond its file's count there whose newest commit descends from it); NOT JUDGED if "
        f"< {MIN_ROWS} of them or < {MIN_SOURCES} source_groups; else ON if their mean |error| falls by >= {GAIN_PTS} points with the floor "
        f"on (c_s fixed in seconds as registered) and each guard family's ({', '.join(FAMILIES)}: held-out rows outside the regime, "
        f"graphed ones included; the development file's rows excluded) mean |error| rises by <= {GUARD_PTS} point; else OFF")


def git(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    """A git command in the checkout; one SimclusterError line where it fails (e.g. a clone without the history)."""
    got = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if got.returncode not in ok:
        raise SimclusterError(f"git {' '.join(args[:2])}: {got.stderr.strip() or 'failed'} (the rule reads the published files' history)")
    return got


def files_at(commit: str) -> dict[str, int]:
    """{file stem: number of runs} of calibration/published/llm-*.yaml at `commit` (git); one line if git cannot say."""
    names = [n for n in git("ls-tree", "--name-only", commit, f"{PUBLISHED}/").stdout.split() if Path(n).name.startswith("llm-") and n.endswith(".yaml")]
    return {Path(n).stem: len(yaml.safe_load(git("show", f"{commit}:{n}").stdout)["runs"]) for n in sorted(names)}


def recorded_after(source: str, run: int, files: dict[str, int], commit: str) -> bool:
    """Whether row `run` of `source` was recorded after the registration: a file not among `files` whose adding commit
    descends from the registering commit `commit`, or a row at or beyond the count `files` holds whose file's newest commit
    does (a file or row from a branch made beside the registration, or not committed, is not)."""
    if source in files and run < files[source]:
        return False
    path = f"{PUBLISHED}/{source}.yaml"
    log = git("log", "--format=%H", *(["--diff-filter=A"] if source not in files else ["-1"]), "--", path).stdout.split()
    return bool(log) and git("merge-base", "--is-ancestor", commit, log[-1], ok=(0, 1)).returncode == 0


def register(path: Path) -> None:
    commit = registering_commit(ROOT)
    doc = {"set": "moeterm54", "issue": 44, "commit": commit, "term": "simcluster/llm/moe_host_floor.py",
           "ratio": moe_host_floor.SERIAL_RATIO, "c_s": moe_host_floor.SERIAL_RATIO * MEGATRON.moe_sync_kernel_s,
           "c": MEGATRON.moe_sync_kernel_s, "units": "c, c_s: seconds", "c_s_source": "calibration/h200x1-moe54c-2026-12-01 RULE CS (readout.txt)",
           "rule": RULE, "thresholds": {"min_rows": MIN_ROWS, "min_sources": MIN_SOURCES, "gain_pts": GAIN_PTS, "guard_pts": GUARD_PTS},
           "regime": {"hidden_max": moe_host_floor.REGIME_HIDDEN, "local_experts_min": moe_host_floor.REGIME_LOCAL_EXPERTS,
                      "host_count_over_compute": "> 1 at c (moe_host_floor.in_regime)"},
           "development": list(DEVELOPMENT), "families": list(FAMILIES), "files": files_at(commit)}
    write_registration(path, "# REGISTERED REVISION 1 (final read 54 item 2): made after the development prints (studies/moeterm54_dev.txt), "
                       "with 0 regime rows in existence (validation/moeterm54.py --register)\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def read_registration(bundle: Path) -> dict:
    return read_rule_registration(bundle, "moeterm54", lambda reg: (reg["files"], float(reg["c_s"]), reg["thresholds"]["min_rows"]),
                                  "set, files, c_s, thresholds")


def in_regime(source: str, run: int) -> bool:
    """Whether published row `run` of `source` is in the floor's regime (the model's own count at c; no floor priced)."""
    from moe_rows import predict_row

    from simcluster.llm import compiled

    row = predict_row(source, run)
    fwd, bwd = compiled.layer_ops(row.model, row.par, row.batch, row.framework)
    return moe_host_floor.in_regime(row.model, row.par, row.gpu, fwd, bwd, row.batch.precision, row.framework)


def classify(rows, new, regime=in_regime) -> list[dict]:
    """The rule's rows ({key, group, family, cls, before}) from validate --published llm's rows (the floor off); new(source,
    run): recorded after the registration."""
    out = []
    for r in rows:
        if r.error is None or not r.held_out or r.family not in FAMILIES:
            continue
        cls = ("development" if r.source in DEVELOPMENT else "guard" if r.family != "MoE" or not regime(r.source, r.run)
               else "regime" if new(r.source, r.run) else "seen")
        out.append({"key": (r.source, r.run), "group": r.source_group or r.source, "family": r.family, "cls": cls, "before": r.error})
    return out


def _mean(xs) -> float:
    return 100 * statistics.mean(abs(x) for x in xs) if xs else float("nan")


def judge(rows: list[dict], th: dict) -> str:
    """The verdict line from classified rows; rows with `after` (the floor on) where judged."""
    reg = [r for r in rows if r["cls"] == "regime"]
    groups = {r["group"] for r in reg}
    if len(reg) < th["min_rows"] or len(groups) < th["min_sources"]:
        return (f"NOT JUDGED ({len(reg)} held-out regime rows recorded after the registration from {len(groups)} sources; needs >= "
                f"{th['min_rows']} from >= {th['min_sources']})")
    gain = _mean([r["before"] for r in reg]) - _mean([r["after"] for r in reg])
    rises = {}
    for fam in FAMILIES:
        g = [r for r in rows if r["cls"] == "guard" and r["family"] == fam]
        rises[fam] = _mean([r["after"] for r in g]) - _mean([r["before"] for r in g]) if g else 0.0
    ok = gain >= th["gain_pts"] and all(x <= th["guard_pts"] for x in rises.values())
    return (f"{'ON' if ok else 'OFF'} (regime: {len(reg)} rows from {len(groups)} sources, mean |error| falls {gain:+.1f} points, needs >= "
            f"{th['gain_pts']}; guard rises " + ", ".join(f"{f} {x:+.2f}" for f, x in rises.items()) + f", each needs <= {th['guard_pts']})")


def read_out(bundle: Path) -> dict:
    from simcluster.reference.llm import validate_published_llm

    reg = read_registration(bundle)
    rows = classify(validate_published_llm().rows, lambda s, i: recorded_after(s, i, reg["files"], reg["commit"]))
    verdict = judge(rows, reg["thresholds"])
    if not verdict.startswith("NOT JUDGED"):   # judged: the same rows with the floor on, then the verdict on both
        ratio = float(reg["c_s"]) / MEGATRON.moe_sync_kernel_s   # c_s fixed in seconds (revision 1)
        after = {(r.source, r.run): r.error for r in floor_on(validate_published_llm, ratio).rows}
        for r in rows:
            r["after"] = after[r["key"]]
        verdict = judge(rows, reg["thresholds"])
    return {"rows": rows, "verdict": verdict, "commit": reg["commit"]}


def floor_on(fn, ratio: float, *args):
    moe_host_floor.enable(ratio)
    try:
        return fn(*args)
    finally:
        moe_host_floor.disable()


def show(res: dict) -> None:
    print(f"# moeterm54: the MoE serial host floor's adoption rule, registered at {res['commit']}")
    for cls in ("regime", "seen", "development", "guard"):
        sel = [r for r in res["rows"] if r["cls"] == cls]
        line = f"# {cls:<11} {len(sel):>3} rows, {len({r['group'] for r in sel}):>2} sources"
        if cls in ("regime", "seen"):
            line += ": " + ", ".join(f"{s}[{i}]" for s, i in (r["key"] for r in sel))
        print(line)
    print(f"RULE ADOPT: {res['verdict']}")


def development() -> None:
    """The DEVELOPMENT file's rows with the floor off and on (the registered ratio); labelled development."""
    from simcluster.reference.llm import validate_published_llm

    for stem in DEVELOPMENT:
        path = ROOT / PUBLISHED / f"{stem}.yaml"
        off, on = validate_published_llm(path).rows, floor_on(validate_published_llm, moe_host_floor.SERIAL_RATIO, path).rows
        print(f"# DEVELOPMENT rows ({stem}: their gap chose the term): error off -> on (+ = predicted fast)")
        for a, b in zip(off, on, strict=True):
            if a.error is not None:
                print(f"{a.run:>3}  {100 * a.error:+6.1f}% -> {100 * b.error:+6.1f}%")
        errs = [(a.error, b.error) for a, b in zip(off, on, strict=True) if a.error is not None]
        print(f"# mean |error| {_mean([a for a, _ in errs]):.1f}% -> {_mean([b for _, b in errs]):.1f}%")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--development"]:   # the AWS rows off / on (development); everything else: registration's command line
        development()
        return 0
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
