"""The published files of calibration/published/ as read once: their runs as the source prints them and the
`simcluster:` block saying how simcluster uses each (held out or not, why, per-run exceptions), with the typed value
checks their readers share (`checked`, `flag`, `text`, `one_of`). Read by the comparisons (reference/) and by the
scenario's failure rate taken from a published run (interruptions.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simcluster import documents
from simcluster.errors import SimclusterError
from simcluster.strict import field, known_keys, load_yaml, short

BLOCK_KEYS = {"scenario", "held_out", "why", "note", "runs_not_held_out", "not_predicted", "machine", "assumptions", "flops",
              "framework", "framework_by_model", "framework_by_run", "memory", "memory_by_model", "recipe", "recipe_by_model", "chooser", "runs_not_compared",
              "source_group", "development_for", "excluded_why"}
CALIBRATION = Path(__file__).resolve().parents[1] / "calibration"
PUBLISHED = CALIBRATION / "published"


@dataclass(frozen=True)
class Published:
    """One published file: its runs as the source prints them, and how simcluster uses it."""

    path: Path
    kind: str
    system: dict
    runs: list
    usage: dict                       # the `simcluster:` block

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def source_group(self) -> str:
        """The unit the error bands and the family read-outs count as one source: the block's `source_group`, else the
        file itself. Files name one group when a systematic error not the model's could be common to them (session 53's
        rule, docs/models/llm-findings.md 'Session 53: pubmix53'): R1 one document (a page at other commits / releases,
        one table split), R2 one team's pages (one repository's docs by one measuring team, or a successor page), R3 one
        measurement pipeline (one team's recipes at its release, published and measured on the same organisation's own
        systems, whoever ran them), R4 one named cluster; not the company or the trainer alone."""
        return str(self.usage.get("source_group") or self.name)

    @property
    def nics_assumed(self) -> str:
        """Which NIC facts the source does not state, so the scenario's are assumed: a published nccl file's
        `system.nics_per_node` / `system.nic_rate` given as null ('count', 'rate', 'count, rate'); "" where both are stated
        or the file has no such keys. Printed beside the rows that cross nodes (review A54 item 5)."""
        return ", ".join(w for k, w in (("nics_per_node", "count"), ("nic_rate", "rate")) if k in self.system and self.system[k] is None)

    @property
    def shared_group(self) -> str:
        """source_group where it names a group of files (ReferenceRow.source_group), else "" (the file is its own)."""
        return "" if self.source_group == self.name else self.source_group

    def held_out(self, run: int) -> bool:
        return bool(self.usage["held_out"]) and run not in (self.usage.get("runs_not_held_out") or {})

    def development_for(self, check: str) -> str:
        """Why the file is development for a whole-file check (`development_for`: held_out_systems, the rows prompted
        that check's own terms or bounds), else ""."""
        return str((self.usage.get("development_for") or {}).get(check) or "")

    @property
    def excluded_why(self) -> str:
        """Why no row of the file is compared (`excluded_why`: the source states its run was degraded in a way the model
        has no physical knob for, quoted), else ""."""
        return str(self.usage.get("excluded_why") or "")

    def why(self, run: int) -> str:
        return (self.usage.get("runs_not_held_out") or {}).get(run) or str(self.usage.get("why") or "")

    def summary_why(self) -> str:
        """Why the file is (not) held out, each run that is an exception, and its note; first, where the file is out of
        the model's scope, why (`excluded_why`)."""
        parts = [f"EXCLUDED, not compared (out of the model's scope): {self.excluded_why}"] if self.excluded_why else []
        parts += [str(self.usage.get("why") or "")]
        parts += [f"run {i}: {why}" for i, why in (self.usage.get("runs_not_held_out") or {}).items()]
        return "; ".join(x for x in parts + [str(self.usage.get("note") or "")] if x)

    def file(self, key: str) -> Path | None:
        """A path of the `simcluster:` block, relative to this file."""
        value = self.usage.get(key)
        return None if value is None else (self.path.parent / str(value)).resolve()


def read_published(path: str | Path, kind: str) -> Published:
    """A published file of `kind` (published-nccl-run, published-llm-run), checked for what the comparison reads."""
    where = str(path)
    doc = load_yaml(path, SimclusterError, "published reference", schema=documents.PUBLISHED)
    if field(doc, "kind", where) != kind:
        raise SimclusterError(f"kind {doc['kind']!r}, expected {kind}", where=where)
    usage = known_keys(field(doc, "simcluster", where), BLOCK_KEYS, f"{where}: simcluster")   # the types, and the run
    runs, system = field(doc, "runs", where), field(doc, "system", where)                   # indexes: documents.PUBLISHED
    return Published(Path(path), kind, system, runs, usage)


def checked(doc, key: str, where: str, parse):
    """strict.field for the reference readers, with the parse's own words for a refused value (flag, text, one_of,
    strict.count: "expected true or false")."""
    raw = field(doc, key, where)
    try:
        return parse(raw)
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise SimclusterError(f"key '{key}': {short(raw)} is not a valid value: {exc}", where=where) from None


def flag(value) -> bool:
    """A `parse` for strict.field: true or false (YAML's booleans, not a text such as "no")."""
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def text(value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a text")
    return value


def one_of(options):
    """A `parse` for strict.field: the value if it is one of `options`."""
    def parse(value):
        if isinstance(value, bool) or value not in options:
            raise ValueError(f"expected one of {', '.join(map(str, options))}")
        return value
    return parse


def published_files(path: str | Path | None, prefix: str) -> list[Path]:
    """The reference files a comparison reads: one file, or every `prefix`*.yaml of a folder (default
    calibration/published/ of this checkout)."""
    path = Path(path) if path else PUBLISHED
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise SimclusterError("no such file or folder of published references", where=str(path),
                              hint="give calibration/published or one of its files")
    files = sorted(path.glob(f"{prefix}*.yaml"))
    if not files:
        raise SimclusterError(f"no {prefix}*.yaml reference in the folder", where=str(path))
    return files
