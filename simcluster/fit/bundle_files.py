"""A trace bundle as `calibrate` and `validate` read it: its manifest, its usable runs (each checked to lie inside
the bundle), the nccl-tests logs of each op by role (timing rounds, NCCL tuning logs), and where its cards come from."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from simcluster import documents, strict
from simcluster.card_document import provenance
from simcluster.errors import SimclusterError, TraceFormatError
from simcluster.files import inside
from simcluster.traces.common import sha256_of

# what a trace's own content can raise on the way to a fit, beyond TraceFormatError: one input skipped
DATA_ERRORS = (SimclusterError, ValueError, KeyError, TypeError, IndexError, ZeroDivisionError, OSError)


def read_manifest(bundle: Path) -> dict:
    path = bundle / "manifest.json"
    if not path.is_file():
        raise TraceFormatError("not a trace bundle: no manifest.json", where=str(path),
                               hint="make one with 'simcluster collect --out DIR'")
    doc = strict.load_json(path, TraceFormatError, "bundle manifest", schema=documents.BUNDLE_MANIFEST)
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise TraceFormatError("manifest has no 'runs' list", where=str(path))
    return doc


def _is_run(run) -> bool:
    return isinstance(run, dict) and all(isinstance(run.get(k), str) for k in ("tool", "run_id", "status", "path"))


class Bundle:
    """A bundle being calibrated: its manifest, its usable runs (each run folder checked to lie inside the
    bundle) and the problem lines of what was skipped."""

    def __init__(self, path: Path, manifest: dict | None = None):
        self.path = Path(path)
        self.manifest = read_manifest(self.path) if manifest is None else manifest
        self.problems: list[str] = []
        self.refused: dict[str, str] = {}           # tool -> first refused manifest path (timing_logs raises it)
        runs = self.manifest["runs"]
        if runs and not any(map(_is_run, runs)):
            raise TraceFormatError("no run has a tool, run_id, status and path: not a manifest written by simcluster collect",
                                   where=str(self.path / "manifest.json"))
        self.ok_runs = [r for n, r in enumerate(runs, 1) if self._usable(n, r)]

    def _usable(self, n: int, run) -> bool:
        if not _is_run(run):
            self.problems.append(f"{self.path / 'manifest.json'}: run {n}: no tool, run_id, status and path; skipped")
            return False
        if run["status"] != "ok":
            self.problems.append(f"{run['tool']}/{run['run_id']}: skipped ({run['status']})")
            return False
        rel = PurePosixPath(run["path"])
        if not run["path"] or rel.is_absolute() or ".." in rel.parts or not inside(self.path, self.path / rel):
            reason = (f"{run['tool']}/{run['run_id']}: manifest path {run['path']!r} is outside the bundle; "
                      "not read")
            self.problems.append(reason)
            self.refused.setdefault(run["tool"], reason)
            return False
        return True

    def runs(self, tool: str) -> list[dict]:
        return [r for r in self.ok_runs if r["tool"] == tool]

    def file(self, run: dict, name: str = "stdout.txt") -> Path:
        """A file of a run's folder; one that a symlink takes outside the bundle is refused."""
        path = self.path / run["path"] / name
        if not inside(self.path, path):
            raise TraceFormatError("the file leads outside the bundle (a symlink); not read", where=str(path))
        return path

    def skip(self, exc: Exception, what: str = "") -> None:
        """One problem line for an input that is not used."""
        text = exc.one_line() if isinstance(exc, SimclusterError) else f"{what}: {type(exc).__name__}: {exc}"
        self.problems.append(" ".join(text.split()))

    def parsed(self, items: list, parse) -> tuple[list, list]:
        """(parse(item) for each item that parses, those items); each that does not is a problem line."""
        good, used = [], []
        for item in items:
            try:
                good.append(parse(item))
                used.append(item)
            except DATA_ERRORS as exc:
                self.skip(exc, str(item))
        return good, used


def bundle_source(bundle: Path | list[Path], manifest: dict | None) -> dict:
    """Where a card's traces came from when they came from a bundle (or bundles, for a fit across repeats): the
    bundle and its host; merged into the card's provenance."""
    out: dict = {"bundle": [str(b) for b in bundle] if isinstance(bundle, list) else str(bundle)}
    if manifest is not None:
        host = manifest.get("host") if isinstance(manifest.get("host"), dict) else {}
        out["host"] = {k: host.get(k) for k in ("hostname", "cpu_model", "cores")}
    return out


def bundle_provenance(paths: list[Path], bundle: Path | list[Path], manifest: dict | None) -> dict:
    """Where a card came from (card_document.provenance), with the bundle (bundle_source)."""
    return provenance([{"path": str(p), "sha256": sha256_of(p)} for p in paths]) | bundle_source(bundle, manifest)


def logs_by_op(b: Bundle, tool: str, role: str = "timing") -> dict[str, list[Path]]:
    """op -> the stdout of each of its runs of one role ("timing" rounds or NCCL "tuning" logs), in manifest
    order; older manifests without meta hold timing runs named by their op. A file outside the bundle is skipped."""
    logs: dict[str, list[Path]] = {}
    for run in b.runs(tool):
        meta = run.get("meta") if isinstance(run.get("meta"), dict) else {}
        if meta.get("role", "timing") == role:
            try:
                logs.setdefault(str(meta.get("op", run["run_id"])), []).append(b.file(run))
            except TraceFormatError as exc:
                b.skip(exc)
    return logs


def timing_logs(bundle: str | Path, tool: str = "nccl-tests") -> dict[str, list[Path]]:
    """op -> the stdout of each of its timing rounds in a trace bundle (tuning logs left out), in manifest order.
    A manifest path outside the bundle is an error here (nothing of such a bundle is validated)."""
    b = Bundle(Path(bundle))
    logs = logs_by_op(b, tool)
    if tool in b.refused:
        raise TraceFormatError(b.refused[tool], where=str(b.path / "manifest.json"))
    if not logs:
        raise TraceFormatError(f"the bundle has no {tool} timing runs that finished", where=str(b.path / "manifest.json"))
    return logs


def tuning_logs(bundle: str | Path, tool: str = "nccl-tests") -> tuple[dict[str, list[Path]], dict]:
    """op -> the NCCL tuning logs of a trace bundle (none: {}), and the bundle's manifest (its host's GPUs)."""
    b = Bundle(Path(bundle))
    return logs_by_op(b, tool, "tuning"), b.manifest
