"""NCCL's tree-kernel ceiling judged on published rows it has not seen (issue 41, session 42, engineer treereg).

The candidate is studies/tree_kernel_ceiling.py's version-keyed variant (the shipped tree's data term with
2 S / (tree channels x NCCL's per-channel tree bandwidth of the NCCL the file states) as one more floor). Its 35
held-out Tree rows other than the Together file were looked at while it was developed, so they are development now.
Two sources recorded in session 42 before any prediction (commit f2abae21) judge it here:

- nccl-b200-ib-x46-together-use3a: Together's use3a-ss B200 cluster, forced Ring / Tree at 2-46 nodes, NCCL 2.29.7 --
  a system the ceiling was not developed on ("independent");
- nccl-b200-ib-x62-together-0511: the development file's own cluster a day earlier, 2-62 nodes, NCCL 2.28.9 -- new
  rows, not a new system ("development cluster").

Two steps, the first committed (message "REGISTERED: ...") before the second ran once:

    python studies/tree_ceiling_registered.py register   # writes BUNDLE/registered.yaml: predictions only
    python studies/tree_ceiling_registered.py read       # measured vs both predictions, the RULE's verdict

The adoption rule (RULE below, fixed before any comparison) is in BUNDLE/README.md. It said adopt; since then the
model (collectives/tree_kernel.py) is the candidate, so `read` marks a row "(today differs)" where today's model
no longer gives the registered candidate's figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

import tree_kernel_ceiling as study  # noqa: E402

from simcluster.collectives import fabric  # noqa: E402
from simcluster.reference import nccl  # noqa: E402

BUNDLE = ROOT / "calibration/published-treereg-2026-11-30"
PUBLISHED = ROOT / "calibration/published"
NEW_FILES = {"nccl-b200-ib-x46-together-use3a": "independent",
             "nccl-b200-ib-x62-together-0511": "development cluster"}
RULE = {"min_gain_points": 3.0,          # mean |busbw error|: candidate at least this many points below shipped
        "max_row_worsening_points": 10.0,  # no new Tree row's |error| grows by more than this
        "ring_tolerance": 1e-3,          # every new Ring row's prediction unchanged within 0.1%
        "min_tree_rows": 8}              # the brief's "fewer than ~8 new Tree rows: do not adopt"


def _rows(models, name: str) -> dict:
    """{run: ReferenceRow} of one published file priced with `models` (a CeilingTree learns the file's NCCL)."""
    try:
        fabric.ALGORITHM_MODELS = models
        for m in models:
            if isinstance(m, study.CeilingTree):
                m.version = study.nccl_version(name)
        return {r.run: r for r in nccl.system_rows(nccl.read_nccl_file(ROOT / "calibration/published" / f"{name}.yaml"))}
    finally:
        fabric.ALGORITHM_MODELS = study.SHIPPED


def predictions() -> list[dict]:
    """Every new row's shipped and candidate busbw (GB/s), no measured value read into the output."""
    candidate = study.with_tree(study.CeilingTree(by_version=True))
    out = []
    for name, kind in NEW_FILES.items():
        shipped, keyed = _rows(study.SHIPPED, name), _rows(candidate, name)
        for run in sorted(shipped):
            s, c = shipped[run], keyed[run]
            out.append({"source": name, "run": run, "set": kind, "configuration": s.configuration,
                        "algorithm": s.detail, "nccl": ".".join(map(str, study.nccl_version(name) or ())) or "n/s",
                        "shipped_GBps": round(s.predicted / 1e9, 2), "candidate_GBps": round(c.predicted / 1e9, 2)})
    return out


def verdict(rows: list[dict], rule: dict = RULE) -> tuple[bool, list[str]]:
    """The registered rule on rows carrying measured_GBps, shipped_GBps, candidate_GBps, algorithm, set: (adopt, lines)."""
    def err(r, key):
        return abs(r[key] / r["measured_GBps"] - 1) * 100

    tree = [r for r in rows if r["algorithm"].startswith("tree/")]
    ring = [r for r in rows if r["algorithm"].startswith("ring/")]
    indep = [r for r in tree if r["set"] == "independent"]
    lines, ok = [], True

    def mean_gain(sel, label):
        nonlocal ok
        if not sel:
            lines.append(f"{label}: no rows -> fails")
            ok = False
            return
        s = sum(err(r, "shipped_GBps") for r in sel) / len(sel)
        c = sum(err(r, "candidate_GBps") for r in sel) / len(sel)
        passed = s - c >= rule["min_gain_points"]
        ok &= passed
        lines.append(f"{label}: {len(sel)} rows, mean |error| shipped {s:.1f}% -> candidate {c:.1f}% "
                     f"(gain {s - c:+.1f} points; needs >= {rule['min_gain_points']:.0f}): {'pass' if passed else 'FAIL'}")

    count_ok = len(tree) >= rule["min_tree_rows"]
    ok &= count_ok
    lines.append(f"(0) new Tree rows: {len(tree)} (needs >= {rule['min_tree_rows']}): {'pass' if count_ok else 'FAIL'}")
    mean_gain(indep, "(1) independent system's Tree rows")
    mean_gain(tree, "(2) all new Tree rows")
    worse = [r for r in tree if err(r, "candidate_GBps") - err(r, "shipped_GBps") > rule["max_row_worsening_points"]]
    ok &= not worse
    lines.append(f"(3) Tree rows worse by > {rule['max_row_worsening_points']:.0f} points: {len(worse)}: "
                 f"{'pass' if not worse else 'FAIL'}")
    moved = [r for r in ring if abs(r["candidate_GBps"] / r["shipped_GBps"] - 1) > rule["ring_tolerance"]]
    ok &= not moved
    lines.append(f"(4) Ring rows whose prediction moves by > {100 * rule['ring_tolerance']:.1f}%: {len(moved)} of "
                 f"{len(ring)}: {'pass' if not moved else 'FAIL'}")
    lines.append(f"verdict: {'ADOPT' if ok else 'DO NOT ADOPT'}")
    return ok, lines


class Refused(Exception):
    """A one-line refusal (missing or malformed input, a registration already written)."""


def register(bundle: Path = BUNDLE) -> int:
    if (bundle / "registered.yaml").exists():
        raise Refused(f"{bundle / 'registered.yaml'} exists: the registration is written once (delete it by hand to redo)")
    bundle.mkdir(exist_ok=True)
    doc = {"registered_by": "studies/tree_ceiling_registered.py register (session 42, treereg)",
           "sources_recorded_in": "f2abae21", "rule": RULE, "rows": predictions()}
    (bundle / "registered.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, width=140))
    print(f"{len(doc['rows'])} rows registered in {bundle / 'registered.yaml'}")
    return 0


def _registered(bundle: Path) -> dict:
    """registered.yaml, each row carrying what `read` uses; Refused names the file and the key."""
    path = bundle / "registered.yaml"
    if not path.is_file():
        raise Refused(f"{path}: missing (run `register` first)")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise Refused(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list) or not isinstance(doc.get("rule"), dict):
        raise Refused(f"{path}: expected a mapping with 'rule' and a list 'rows'")
    for i, r in enumerate(doc["rows"]):
        for key in ("source", "run", "set", "configuration", "algorithm", "nccl", "shipped_GBps", "candidate_GBps"):
            if not isinstance(r, dict) or key not in r:
                raise Refused(f"{path}: rows[{i}] has no '{key}'")
    return doc


def _measured(published: Path) -> dict:
    """{(file, run): busbw GB/s} of the judging files; Refused names the file, the run and the key."""
    measured = {}
    for name in NEW_FILES:
        path = published / f"{name}.yaml"
        try:
            runs = yaml.safe_load(path.read_text())["runs"]
        except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
            raise Refused(f"{path}: cannot read its runs ({type(exc).__name__})") from None
        for i, run in enumerate(runs):
            try:
                measured[(name, i)] = float(run["busbw_GBps"])
            except (KeyError, TypeError, ValueError):
                raise Refused(f"{path}: runs[{i}] has no number 'busbw_GBps'") from None
    return measured


def read(bundle: Path = BUNDLE, published: Path = PUBLISHED) -> int:
    doc = _registered(bundle)
    measured = _measured(published)
    missing = [(r["source"], r["run"]) for r in doc["rows"] if (r["source"], r["run"]) not in measured]
    if missing:
        raise Refused(f"{bundle / 'registered.yaml'}: no published run {missing[0][0]} runs[{missing[0][1]}]")
    rows = [{**r, "measured_GBps": measured[(r["source"], r["run"])]} for r in doc["rows"]]
    today = {(r["source"], r["run"]): r for r in predictions()}
    print(f"{'source':34s} {'run':>3s} {'set':11s} {'configuration':44s} {'algorithm':12s} {'NCCL':>5s} "
          f"{'measured':>8s} {'shipped':>8s} {'err':>7s} {'candid.':>8s} {'err':>7s}")
    for r in rows:
        t = today[(r["source"], r["run"])]
        same = t["shipped_GBps"] == r["candidate_GBps"]   # the model since the adoption: the registered candidate
        print(f"{r['source']:34s} {r['run']:3d} {r['set'][:11]:11s} {r['configuration'][:44]:44s} {r['algorithm'][:12]:12s} "
              f"{r['nccl']:>5s} {r['measured_GBps']:8.1f} {r['shipped_GBps']:8.1f} "
              f"{100 * (r['shipped_GBps'] / r['measured_GBps'] - 1):+6.1f}% {r['candidate_GBps']:8.1f} "
              f"{100 * (r['candidate_GBps'] / r['measured_GBps'] - 1):+6.1f}%{'' if same else '  (today differs)'}")
    _, lines = verdict(rows, doc["rule"])
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(names=("register", "read"), usage="register | read")
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd not in ("register", "read"):
        print("usage: python studies/tree_ceiling_registered.py register | read", file=sys.stderr)
        raise SystemExit(2)
    try:
        raise SystemExit(register() if cmd == "register" else read())
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
