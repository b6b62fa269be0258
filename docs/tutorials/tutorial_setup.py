"""What every tutorial needs: the repository root, a figure folder that is not committed, the CLI, a figure saver.

Tutorials import this from docs/tutorials/ (Jupyter and tests/test_tutorials.py both run them there)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def repo_root() -> Path:
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").exists() and (folder / "simcluster").is_dir():
            return folder
    raise RuntimeError(f"run the tutorial inside the simcluster repository (from {here} no pyproject.toml was found)")


ROOT = repo_root()


def build_dir(tutorial: str) -> Path:
    """docs/tutorials/_build/<tutorial>/ (git-ignored): figures and the cards a tutorial writes."""
    folder = Path(os.environ.get("SIMCLUSTER_TUTORIAL_BUILD", ROOT / "docs/tutorials/_build")) / tutorial
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def simcluster(args: str, show: bool = True) -> str:
    """Run `simcluster ARGS` from the repository root, as a user would type it; print and return its stdout.
    A non-zero exit status raises with the command's stderr."""
    argv = [sys.executable, "-m", "simcluster"]     # the kernel's own interpreter: the same install as the API calls
    done = subprocess.run([*argv, *shlex.split(args)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"simcluster {args}: exit {done.returncode}: {done.stderr.strip()}")
    if show:
        print(f"$ simcluster {args}\n{done.stdout}", end="")
    return done.stdout


def save(fig, folder: Path, name: str) -> Path:
    path = folder / name
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    print(f"figure: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    try:  # inline in Jupyter; a plain python run has nothing to show it on
        from IPython import get_ipython
        from IPython.display import Image, display

        if get_ipython() is not None:
            display(Image(filename=str(path)))
    except ImportError:
        pass
    return path
