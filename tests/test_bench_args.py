"""Every benchmark script refuses a bad argument in ONE line, before it runs (the brief: bad input is a clear one-line
error, never a traceback): an unknown option, and for the scripts that read a file, a missing one. The second read of
session 53 found plan_points.py and llm_calls.py printing tracebacks, fuzz.py a ValueError, four argparse scripts two
lines and six scripts ignoring an unknown argument and running the whole benchmark."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

BENCH = sorted((ROOT / "bench").glob("*.py"))


def _run(script, *args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


@pytest.mark.parametrize("script", BENCH, ids=lambda p: p.name)
def test_an_unknown_option_is_one_line_and_nothing_runs(script):
    done = _run(script, "--bogus-option")
    assert done.returncode != 0 and not done.stdout, (script.name, done.stdout[-300:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--bogus-option" in lines[0] and "Traceback" not in done.stderr, done.stderr[-500:]


@pytest.mark.parametrize("name, args", [("plan_points.py", ["no-such-plan.yaml"]), ("llm_calls.py", ["no-such.yaml"]),
                                        ("llm_calls.py", []), ("fuzz.py", ["ten"])])
def test_a_missing_file_or_bad_value_is_one_line(name, args):
    done = _run(ROOT / "bench" / name, *args)
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-500:]
