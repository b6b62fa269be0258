"""A host folder's leases.yaml (issue 44, sessions 43-44): which leases' own host fits a mode's host term is the mean of
(llm/eager.fit_modes). FSDP2's host cost per kernel differs x1.4 between 2 x H200 leases, so the product's fsdp term is
the mean over every lease's own fit; an entry {scaled_to: REF, leases: [...]} takes each lease's fit at the product
folder's host speed (x the folder's pooled REF cost per kernel over the lease's own, docs/models/llm.md "The ckpt and op
host terms at the product's host speed"). Split out of llm/eager.py (cold review C 44, item 9); eager.py re-exports
lease_folders, lease_scaling, lease_fits and leases_unread with the fitting they need."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simcluster import strict
from simcluster.errors import SimclusterError

# a host folder's file naming, per mode, the leases whose own fits the mode's host term is the mean of (lease_folders)
LEASES: str | None = "leases.yaml"
_UNREAD: frozenset[str] = frozenset()   # modes whose leases.yaml entries unread(modes) skips

Fits = dict[str, tuple[float, float, int]]


def read_leases(folder: Path, modes: tuple[str, ...]) -> dict[str, tuple[list[Path], str | None]]:
    """{mode: ([lease folders], the scaled_to mode or None)} of the folder's leases.yaml; `modes`: the runner modes with
    a host fit (eager.MODES). Each mode a list of two or more folders relative to `folder` ('.': itself) or {scaled_to:
    a mode listed as plain leases, leases: [...]}; {} where there is none. A bad file: ValueError naming it and the key."""
    if LEASES is None:   # unread()
        return {}
    path = folder / LEASES
    if not path.is_file():
        return {}
    try:
        doc = strict.load_yaml(path, what="host leases (leases.yaml)")
    except SimclusterError as exc:   # fit_modes' bad input is a ValueError naming the file
        raise ValueError(str(exc)) from None
    if not isinstance(doc, dict) or not doc:
        raise ValueError(f"{path}: expected a mapping of runner mode to a list of host folders")
    out = {}
    for mode, entry in doc.items():
        if mode not in modes:
            raise ValueError(f"{path}: {mode!r} is not a runner mode with a host fit ({', '.join(modes)})")
        ref = entry.get("scaled_to") if isinstance(entry, dict) else None
        folders = entry.get("leases") if isinstance(entry, dict) else entry
        if isinstance(entry, dict) and (set(entry) != {"scaled_to", "leases"} or not isinstance(ref, str)
                                        or ref not in doc or ref == mode or isinstance(doc[ref], dict)):
            raise ValueError(f"{path}: {mode}: expected {{scaled_to: a mode listed here as plain leases, leases: [...]}}")
        if not isinstance(folders, list) or len(folders) < 2 or not all(isinstance(f, str) for f in folders):
            raise ValueError(f"{path}: {mode}: expected a list of two or more host folders")
        dirs = [(folder / f).resolve() for f in folders]
        missing = [f for f, d in zip(folders, dirs, strict=True) if not d.is_dir()]
        if missing:
            raise ValueError(f"{path}: {mode}: {missing[0]!r} is not a folder")
        out[mode] = (dirs, ref)
    return {mode: got for mode, got in out.items() if mode not in _UNREAD}


@contextmanager
def unread(modes: tuple[str, ...] | None = None) -> Iterator[None]:
    """Inside the block no folder's leases.yaml is read (`modes`: only those modes' entries); eager.leases_unread adds
    the clearing of the caches that read the host fits."""
    global LEASES, _UNREAD
    kept = LEASES, _UNREAD
    LEASES, _UNREAD = (None, _UNREAD) if modes is None else (LEASES, frozenset(modes))
    try:
        yield
    finally:
        LEASES, _UNREAD = kept


def own_fits(folder: Path, mode: str, of: str, leases: list[tuple[Path, Fits]]) -> list[tuple[Path, tuple[float, float, int]]]:
    """[(lease, its own fit of mode `of`)] over `leases` ((lease folder, its own fits: eager._fit_folder) of `mode`'s
    entry in the folder's leases.yaml; `of`: the mode itself, or its scaled_to mode). A lease without two layer counts
    of `of`: ValueError naming the file and the lease."""
    out = []
    for lease, fits in leases:
        fit = fits.get(of)
        if fit is None:
            raise ValueError(f"{folder / str(LEASES)}: {mode}: {lease} has fewer than two layer counts of {of}-L<n>.json "
                             f"runs" + ("" if of == mode else " (its scaled_to mode)"))
        out.append((lease, fit))
    return out
