"""A sweep: a scenario with a `sweep:` section naming dotted keys of the scenario document and their values.

    sweep:
      keys:
        machine.nodes: [1, 2, 4, 8]
        machine.nic.card: [../models/nic/seed000-roce-100g.yaml, ../models/nic/roce-400g.yaml]
        jobs[0].parallel.tp: [1, 2, 4]
      mode: product        # every combination (default); `list`: the i-th value of every key together

Each point is the scenario document with those keys set (a missing mapping on the way is created; a list index
must exist), then read by the scenario's own strict reader (scenario._build), so a point is checked exactly like
a hand-written scenario. A point the reader refuses is kept as an `invalid` point with its one-line reason.
The point's hash is the sha256 of the canonical JSON of its resolved scenario (every field of the frozen
Scenario but its file, name and description; card paths relative to the scenario's folder) plus the sha256 of every file it names (a recalibrated
card makes new points) and of simcluster's own code (simcluster.code_digest: a changed model makes new points too), so it
names what was computed, not how the sweep was written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from simcluster import code_digest, output, strict
from simcluster import scenario as scenario_module
from simcluster.dotted import parse_key, set_key
from simcluster.errors import SimclusterError
from simcluster.scenario_reader import ScenarioReader

MODES = ("product", "list")
MAX_POINTS = 1_000_000          # a sweep larger than this is refused (split it): the driver holds every point in memory
SECTIONS = ("sweep", "search", "plan")   # top-level sections that are not part of the scenario itself
UNHASHED = ("path", "name", "description")   # what names a scenario but does not change what it computes


@dataclass(frozen=True)
class SweepSpec:
    keys: tuple[tuple[str, tuple], ...]   # (dotted key, values)
    mode: str = "product"


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its parameter values, and either its Scenario or why the reader refused it."""

    params: tuple[tuple[str, object], ...]
    hash: str
    scenario: object | None            # scenario.Scenario
    error: str | None = None


@dataclass(frozen=True)
class SweepFile:
    path: Path                         # absolute
    doc: dict                          # the scenario document without the sections above
    lines: dict[str, int]
    spec: SweepSpec
    sections: dict                     # the raw `search:` and `plan:` sections, if any


def read_sweep(path: str | Path, sections: tuple[str, ...] = ("sweep", "plan")) -> SweepFile:
    """The scenario file and its sweep section (required); `sections` names the sections allowed here (a `plan:`
    section prices the results in `simcluster report`; `search:` is for `simcluster plan` only)."""
    path = Path(path).resolve()
    doc, lines = scenario_module._read(path)
    r = ScenarioReader(path, lines)
    if not isinstance(doc, dict):
        r.fail("", f"expected a mapping, got {type(doc).__name__}")
    for name in SECTIONS:
        if name in doc and name not in sections:
            r.fail(name, f"a '{name}' section belongs in a plan file", hint="run it with: simcluster plan")
    if "variants" in doc:
        r.fail("variants", "a sweep file has no what-if variants", hint="make the varied keys sweep keys")
    if "sweep" not in doc:
        if "sweep" in sections and "search" not in sections:
            r.fail("", "no 'sweep:' section", hint="add sweep: {keys: {machine.nodes: [1, 2, 4]}}")
        spec = SweepSpec((), "product")
    else:
        spec = _spec(r, doc["sweep"])
    rest = {k: v for k, v in doc.items() if k not in SECTIONS}
    return SweepFile(path, rest, lines, spec, {k: doc[k] for k in SECTIONS[1:] if k in doc})


def _spec(r, section) -> SweepSpec:
    r.mapping(section, "sweep", {"keys"}, {"mode"})
    mode = r.choice(section, "sweep", "mode", MODES, "product")
    keys = section["keys"]
    if not isinstance(keys, dict) or not keys:
        r.fail("sweep.keys", "expected a mapping of dotted key -> list of values")
    out = []
    for key, values in keys.items():
        try:
            steps = parse_key(str(key))
        except ValueError as exc:
            r.fail(f"sweep.keys.{key}", str(exc))
        if steps[0] in SECTIONS + ("name",):
            r.fail(f"sweep.keys.{key}", f"'{steps[0]}' cannot be swept")
        if not isinstance(values, list) or not values:
            r.fail(f"sweep.keys.{key}", f"expected a non-empty list of values, got {strict.short(values)}")
        for i, value in enumerate(values):   # a value becomes a results column: no NaN or inf in it
            if output.problems({"value": value}):
                r.fail(f"sweep.keys.{key}", f"value {i + 1}, {strict.short(value)}, is not finite")
        out.append((str(key), tuple(values)))
    if mode == "list" and len({len(v) for _, v in out}) > 1:
        r.fail("sweep.keys", "mode: list needs the same number of values for every key",
               hint=", ".join(f"{k}: {len(v)}" for k, v in out))
    count = 1
    for _, v in out:
        count = count * len(v) if mode == "product" else len(v)
    if count > MAX_POINTS:
        r.fail("sweep.keys", f"{count:,} points; at most {MAX_POINTS:,} in one sweep", hint="split the sweep")
    return SweepSpec(tuple(out), mode)


def combinations(spec: SweepSpec) -> list[tuple[tuple[str, object], ...]]:
    """Every point's (key, value) pairs, in a fixed order."""
    names = [k for k, _ in spec.keys]
    if not names:
        return [()]
    if spec.mode == "list":
        rows = zip(*(v for _, v in spec.keys), strict=True)
    else:
        rows = itertools.product(*(v for _, v in spec.keys))
    return [tuple(zip(names, row, strict=True)) for row in rows]


def build_point(sweep: SweepFile, params: tuple[tuple[str, object], ...]) -> Point:
    """The point's scenario, read strictly, and its hash; a refused point keeps the reader's one line."""
    doc = sweep.doc
    try:
        for key, value in params:
            doc = set_key(doc, key, value)
    except ValueError as exc:
        return Point(params, _hash({"params": [[k, _jsonable(v)] for k, v in params], "error": str(exc), "code": code_digest()}), None, str(exc))
    reader = ScenarioReader(sweep.path, sweep.lines)
    try:
        sc = scenario_module._build(sweep.path, doc, reader)
    except SimclusterError as exc:
        line = exc.one_line()
        return Point(params, _hash({"params": [[k, _jsonable(v)] for k, v in params], "error": line, "code": code_digest()}), None, line)
    return Point(params, scenario_hash(sc), sc)


def points(sweep: SweepFile, params_list=None) -> list[Point]:
    """Every point of the sweep (or of `params_list`), each built once; repeated points (same hash) once."""
    out, seen = [], set()
    for params in (combinations(sweep.spec) if params_list is None else params_list):
        p = build_point(sweep, params)
        if p.hash not in seen:
            seen.add(p.hash)
            out.append(p)
    return out


def scenario_hash(sc) -> str:
    return _hash(resolved(sc))


def resolved(sc) -> dict:
    """The Scenario as plain JSON: paths relative to its folder, with the sha256 of each file they name."""
    base = sc.path.parent
    files: dict[str, str] = {}

    def plain(value):
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {"type": type(value).__name__, **{f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}}
        if isinstance(value, Path):
            resolved_path = value if value.is_absolute() else Path.cwd() / value
            rel = os.path.relpath(resolved_path, base)
            files[rel] = file_digest(str(resolved_path))
            return rel
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, float):
            return repr(value)
        return value

    body = {f.name: plain(getattr(sc, f.name)) for f in dataclasses.fields(sc) if f.name not in UNHASHED}
    return {"scenario": body, "files": dict(sorted(files.items())), "code": code_digest()}


@lru_cache(maxsize=4096)
def _digest(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_digest(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    if not os.path.isfile(path):
        return "folder"
    return _digest(path, st.st_mtime_ns, st.st_size)


def _jsonable(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def _hash(doc) -> str:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
