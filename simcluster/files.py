"""Writing result files: the one writer behind every CLI path that writes a card, a trace or a figure's data.

The library returns documents (file name -> text); only the CLI writes them, through this module:

- `safe_name(value, what)`: a user or trace value that becomes a file or folder name must be a plain name
  (letters, digits, `._+-`, not starting with `.` or `-`); anything else is a one-line error naming the value.
- `file_stem(value)`: a name derived from input data made into a plain file-name stem (never refused).
- `inside(root, path)`: whether `path`, symlinks resolved, stays under `root`.
- `write_documents(folder, {name: text})`: every document under `folder` (a name may hold one subfolder),
  confined to it, while holding the folder's lock (`.simcluster.lock`, created with O_EXCL, holding the
  writer's pid; a lock whose process is gone on this host is stale and taken over). Every document is first
  written to a temporary file in its own folder and fsynced; only when all are on disk are they renamed over
  the old files (os.replace), so a failure mid-way (full disk, read-only folder) leaves every old file whole.
- `write_document(path, text)`: one file the same way, locked on its own name (`.NAME.simcluster.lock`).
- `lock(folder)` + `atomic_write(path, text)`: for a writer that holds a folder for longer (`collect --out`).
An OSError (read-only, full disk, a folder where a file is expected) is one line: `OutputError`.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from simcluster.errors import SimclusterError

SAFE_NAME = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9._+-]{0,127}")
FOLDER_LOCK = ".simcluster.lock"
FRESH_LOCK_S = 10.0          # a lock file still without a pid is being created for this long at most


class OutputError(SimclusterError):
    """A result that cannot be written: outside the output folder, the folder in use, or an OSError."""


def safe_name(value: str, what: str) -> str:
    """`value` if it can name a file or folder as it is; else a one-line error naming it."""
    if not isinstance(value, str) or not SAFE_NAME.fullmatch(value):
        raise OutputError(f"{what} {value!r} cannot name a file or folder",
                          hint="letters, digits and ._+- only, not starting with . or -")
    return value


def file_stem(value, limit: int = 80, default: str = "out") -> str:
    """A file-name stem made from data (a workload's model name, a label): every character outside `A-Za-z0-9._+-`
    becomes '_', leading dots and dashes go, and it is cut to `limit` characters, so '../x' or a 300-character
    name can neither leave the folder nor be refused by the file system; `default` when nothing is left."""
    stem = re.sub(r"[^A-Za-z0-9._+-]+", "_", str(value)).lstrip(".-")[:limit]
    return stem if SAFE_NAME.fullmatch(stem) else default


def inside(root: str | Path, path: str | Path) -> bool:
    """Whether `path` (symlinks resolved) is `root` or under it."""
    root, path = Path(root).resolve(), Path(path).resolve()
    return path == root or root in path.parents


def os_error(exc: OSError, path: Path) -> OutputError:
    reason = {errno.EISDIR: "a folder is in the way of the file", errno.ENOTDIR: "a file is in the way of the folder",
              errno.EEXIST: "a file is in the way of the folder"}.get(exc.errno, exc.strerror or str(exc))
    return OutputError(f"cannot write: {reason}", where=str(path))


def _relative(folder: Path, name: str) -> Path:
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or len(parts) > 2:
        raise OutputError(f"output name {name!r} must be a file name, or one folder and a file name", where=str(folder))
    for part in parts:
        safe_name(part, "output name")
    target = folder.joinpath(*parts)
    if not inside(folder, target):
        raise OutputError(f"output name {name!r} leads outside the output folder", where=str(folder))
    return target


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale(lock: Path) -> bool:
    """A lock left by a simcluster process of this host that is gone (or one that never got its pid)."""
    try:
        text = lock.read_text()
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return True
    except OSError:
        return False
    fields = text.split()
    if len(fields) < 2 or not fields[0].isdigit():
        return age > FRESH_LOCK_S
    return fields[1] == socket.gethostname() and not _pid_alive(int(fields[0]))


@contextmanager
def lock(folder: str | Path, name: str = FOLDER_LOCK):
    """Hold `folder/name` (O_EXCL) while writing; refuse if another live simcluster process holds it. A stale
    lock is removed and taken once; two processes that find the same stale lock at the same instant can both
    take it (a narrow race this pid-file scheme does not close)."""
    path = Path(folder) / name
    mine = f"{os.getpid()} {socket.gethostname()}\n"
    for attempt in (1, 2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:
            if attempt == 1 and _stale(path):
                path.unlink(missing_ok=True)
                continue
            try:
                holder = path.read_text(errors="replace").split()[:1]
            except OSError:
                holder = []
            raise OutputError(f"another simcluster process{' (pid ' + holder[0] + ')' if holder else ''} is writing here",
                              where=str(folder), hint=f"wait for it, or delete {path} if no such process runs") from None
        except OSError as exc:
            raise os_error(exc, path) from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(mine)
        yield path
    finally:
        try:
            if path.read_text() == mine:
                path.unlink()
        except OSError:
            pass


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _stage(target: Path, text: str | bytes, mode: int) -> Path:
    """`text` in a temporary file beside `target`, flushed and fsynced; its path."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _commit(targets: dict[Path, str | bytes]) -> list[Path]:
    """Stage every document, then rename each over its target; on any error nothing staged is left."""
    mode = 0o666 & ~_umask()
    staged: list[tuple[Path, Path]] = []
    current = None
    try:
        for target, text in targets.items():
            current = target
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir():
                raise IsADirectoryError(errno.EISDIR, "is a directory", str(target))
            staged.append((_stage(target, text, mode), target))
        for tmp, target in staged:
            current = target
            os.replace(tmp, target)
    except OSError as exc:
        raise os_error(exc, current or Path(".")) from None
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
    for folder in {t.parent for t in targets}:
        _sync_folder(folder)
    return list(targets)


def atomic_write(path: str | Path, text: str | bytes) -> Path:
    """One file replaced atomically, for a caller that already holds its folder's lock (collect's manifest)."""
    return _commit({Path(path): text})[0]


def write_documents(folder: str | Path, documents: dict[str, str | bytes]) -> list[Path]:
    """Write every document under `folder` (created if needed) atomically, holding the folder's lock."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(exc, folder) from None
    targets = {_relative(folder, name): text for name, text in documents.items()}
    with lock(folder):
        return _commit(targets)


def write_document(path: str | Path, text: str | bytes) -> Path:
    """Write one result file atomically (its folder created if needed), locked on its own name."""
    path = Path(path)
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(exc, folder) from None
    if not path.name or path.name in (".", ".."):
        raise OutputError("not a file name", where=str(path))
    with lock(folder, f".{path.name}.simcluster.lock"):
        return _commit({path: text})[0]


def scratch_folder(name: str) -> Path:
    """A fresh private folder under the temp directory, removed at exit: for intermediate files (a study's fitted
    cards), never a fixed /tmp path another user may already own."""
    import atexit
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix=f"simcluster-{name}-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def paths_per_label(path: str, labels: list) -> list[str]:
    """One output file per labelled result (a variant's timeline): PATH itself for one, PATH's stem + '-VARIANT' + its suffix for each of several."""
    if len(labels) <= 1:
        return [path]
    p = Path(path)
    if p.is_dir():
        raise OutputError("cannot write the timelines there: a folder is in the way of the file", where=path,
                              hint="--trace names a file; with several variants, FILE-VARIANT.json is written for each")
    suffix = "".join(p.suffixes) or ".json"
    stem = p.name[:len(p.name) - len("".join(p.suffixes))] if p.suffixes else p.name
    safe = [re.sub(r"[^A-Za-z0-9._-]+", "_", str(label or "job")) for label in labels]
    seen: dict[str, int] = {}
    names = []
    for s in safe:   # a variant with several jobs: -LABEL, -LABEL-job2, ...
        seen[s] = seen.get(s, 0) + 1
        names.append(s if seen[s] == 1 else f"{s}-job{seen[s]}")
    return [str(p.with_name(f"{stem}-{s}{suffix}")) for s in names]


def exit_on_sigterm() -> None:
    """The command line's own process: SIGTERM (kill, a CI's timeout) ends it as Ctrl-C does, through every finally
    and atexit on the way (the sweep's Dask scratch folder, a study's scratch cards, a half-written temp file), not
    at once with them left behind."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
