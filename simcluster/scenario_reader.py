"""The scenario's strict reader: a section or job read through its declaration (`declared`: machine_document.py,
job_documents.py), a job's kind, a card path resolved to a file; every refusal is a ScenarioError naming the file, the
line and the dotted key, with what was expected. Used by the scenario loader (scenario.py), the job readers
(scenario_jobs.py, llm/job.py), sweeps and plans."""

from __future__ import annotations

from pathlib import Path

from simcluster import schema, strict
from simcluster.errors import ScenarioError


def _prefixes(key: str) -> list[str]:
    """'jobs[0].parallel.tp' -> the key, then each shorter dotted key above it: jobs[0].parallel, jobs[0], jobs."""
    out, cut = [key], key
    while True:
        i = max(cut.rfind("."), cut.rfind("["))
        if i <= 0:
            return out
        cut = cut[:i]
        out.append(cut)


class ScenarioReader:
    def __init__(self, path: Path, lines: dict[str, int]):
        self.path, self.lines = path, lines
        self.variant = ""           # the what-if variant being read (scenario.load_variants): its own keys' lines

    def locate(self, key: str) -> tuple[str, str]:
        """(file:line, the dotted key as the file spells it): a key a variant sets (`set:`, applied last: the key or the
        nearest key above it there) or overrides is found under variants.LABEL."""
        if self.variant:
            here = f"variants.{self.variant}"
            for prefix in _prefixes(key):
                if f"{here}.set.{prefix}" in self.lines:
                    return f"{self.path}:{self.lines[f'{here}.set.{prefix}']}", f"{here}.set.{prefix}" + key[len(prefix):]
            if f"{here}.{key}" in self.lines:
                key = f"{here}.{key}"
        line = self.lines.get(key)
        return (f"{self.path}:{line}" if line else str(self.path)), key

    def fail(self, key: str, message: str, hint: str | None = None):
        where, key = self.locate(key)
        if self.variant and not key.startswith(f"variants.{self.variant}"):   # the variant's keys made the base key wrong
            message += f" (while reading variant '{self.variant}')"
        raise ScenarioError(f"{key}: {message}" if key else message, where=where, hint=hint)

    def mapping(self, doc, key: str, required: set[str], optional: set[str]) -> dict:
        if not isinstance(doc, dict):
            self.fail(key, f"expected a mapping, got {type(doc).__name__}")
        for name in doc:
            if name not in required | optional:
                dotted = f"{key}.{name}" if key else str(name)
                self.fail(dotted, f"unknown key '{name}'", hint=f"expected one of: {', '.join(sorted(required | optional))}")
        for name in sorted(required):
            if name not in doc:
                self.fail(key, f"missing key '{name}'")
        return doc

    def declared(self, declaration, doc, key: str, **vocabulary):
        """The job or section at `key` read through its declaration (job_documents.py): its typed fields with their
        defaults; the first key that does not fit is this reader's one-line error (`vocabulary`: the Choice fields'
        names, from the model that owns them)."""
        try:
            return schema.read(declaration, doc, vocabulary)
        except schema.Refusal as exc:
            self.fail(f"{key}.{exc.key}" if key and exc.key else key or exc.key, exc.why, hint=exc.hint)

    def choice(self, doc, key: str, name: str, choices, default=None) -> str:
        value = doc.get(name, default)
        if value not in choices:
            self.fail(f"{key}.{name}", f"expected one of {', '.join(map(str, choices))}, got {strict.short(value)}")
        return value

    def card(self, doc, key: str, name: str = "card") -> Path:
        if not isinstance(doc[name], str) or not doc[name]:
            self.fail(f"{key}.{name}", f"expected the path of a model card, got {strict.short(doc[name])}")
        card = resolve(self.path, doc[name])
        if not card.is_file():
            self.fail(f"{key}.{name}", f"model card {doc[name]!r} not found", hint="run 'simcluster calibrate' to make one, "
                      "or point to a file under models/")
        return card

    def existing(self, doc, key: str, name: str, what: str) -> Path:
        path = resolve(self.path, str(doc[name]))
        if not path.exists():
            self.fail(f"{key}.{name}", f"{doc[name]!r} not found", hint=f"expected {what}")
        return path


def resolve(scenario_path: Path, ref: str) -> Path:
    """A card path is relative to the scenario's folder, else to the working directory."""
    candidate = scenario_path.parent / str(ref)
    return candidate if candidate.exists() else Path(str(ref))
