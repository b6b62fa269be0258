"""Writing a registered predictions file (issue 44): once. A held-out set's predictions are registered (committed)
before its runs and read against them after; writing over an existing one would put today's model where the
registration was. `validation/*.py --register` writes through `write_registration`, which refuses a path that exists
with one line; a registration not yet run is redone by deleting its file first (`git rm`), in the open."""

from __future__ import annotations

from pathlib import Path

from simcluster.errors import SimclusterError


def refuse_existing(path: Path) -> Path:
    """`path` if nothing is there yet; else one line (a script calls it before predicting anything)."""
    path = Path(path)
    if path.exists():
        raise SimclusterError("a registered predictions file exists; registrations are never overwritten",
                              where=str(path), hint="delete it first if its set has not run, or register to a new path")
    return path


def write_registration(path: Path, text: str) -> None:
    """`text` into `path`, a new file; an existing one (registered, maybe already run) is refused, never overwritten."""
    path = refuse_existing(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as f:     # "x": fails, never truncates, if the file appeared meanwhile
        f.write(text)
