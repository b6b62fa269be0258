"""Every tutorial in docs/tutorials/ executes: converted with jupytext, run with nbclient on a python3 kernel, in
under a minute each, and every figure it announces is written. A tutorial that stops matching the code fails here."""

from __future__ import annotations

import re
import time
from pathlib import Path

import jupytext  # in the test extra: a missing one is an error, not a skip
import nbclient
import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "docs/tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("[0-9][0-9]-*.md"))
LIMIT_S = 60.0


def test_the_eight_tutorials_are_there():
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(1, 9)]


# the five longest (10-17 s each on 2 cores) run with the slow set (`pytest -q -m slow`)
SLOW = {"04-storage-critical-path", "05-collectives-and-topology", "06-calibrate-your-lab", "07-llm-parallelism",
        "08-moe-racks-and-days"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW else p for p in NOTEBOOKS],
                         ids=lambda p: p.stem)
def test_tutorial_runs(path, tmp_path, monkeypatch):
    monkeypatch.setenv("SIMCLUSTER_TUTORIAL_BUILD", str(tmp_path))
    notebook = jupytext.read(path)
    client = nbclient.NotebookClient(notebook, timeout=LIMIT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(TUTORIALS)}})
    start = time.perf_counter()
    client.execute()
    took = time.perf_counter() - start
    assert took < LIMIT_S, f"{path.name} took {took:.1f} s"
    printed = "".join(o.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", []))
    announced = re.findall(r"^figure: (\S+\.png)$", printed, flags=re.M)
    assert announced, f"{path.name} draws no figure"
    folder = tmp_path / path.stem
    for name in announced:
        figure = folder / Path(name).name
        assert figure.is_file() and figure.stat().st_size > 5000, f"{path.name}: {figure} not written"
