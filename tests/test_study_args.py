"""Every study refuses an argument it does not take before it runs (studies/study_args.py): each studies/*.py run as
`python studies/X.py --bogus` exits 2 with nothing on stdout; one line on stderr naming the argument and what the study
accepts, or, for a study that parses with argparse, argparse's refusal (its usage line, then its error: the argument
named, or a required argument missing, which argparse checks first)."""

import json
import subprocess
import sys

from conftest import ROOT, load_script

STUDIES = sorted(p for p in (ROOT / "studies").glob("*.py") if p.name != "study_args.py")

# every study in one process (the imports paid once), each as `python studies/X.py --bogus` would run it: its folder
# first on sys.path, its path as argv[0], run as __main__; what it printed and how it ended, as JSON
DRIVER = """
import contextlib, io, json, runpy, sys, traceback
out = {}
for path in sys.argv[1:]:
    stdout, stderr, code = io.StringIO(), io.StringIO(), None
    sys.argv, sys.path[0] = [path, "--bogus"], str(__import__("pathlib").Path(path).parent)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        stderr.write(traceback.format_exc())
        code = "raised"
    out[path] = [code, stdout.getvalue(), stderr.getvalue()]
sys.__stdout__.write(json.dumps(out))
"""


def test_every_study_refuses_an_unknown_argument_first():
    done = subprocess.run([sys.executable, "-c", DRIVER, *map(str, STUDIES)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    assert len(results) == len(STUDIES) > 80
    bad = []
    for path in STUDIES:
        code, out, err = results[str(path)]
        lines = err.strip().splitlines()
        if "study_args.check(" in path.read_text():
            ok = len(lines) == 1 and lines[0].startswith(f"{path.name}: unknown argument '--bogus'; accepted: ")
        else:   # argparse (its own or simcluster/runner/gpu_micro's): the usage line(s), then its error (the argument
            ok = bool(lines) and lines[-1].startswith(f"{path.name}: error: ")   # named, or a required one missing)
        if not (ok and code == 2 and out == ""):
            bad.append(f"{path.name}: exit {code!r}, stdout {out[:200]!r}, stderr {err[-300:]!r}")
    assert not bad, "\n".join(bad)


def test_check_accepts_what_the_study_takes_and_names_the_first_other(capsys):
    args = load_script("studies/study_args.py")
    assert args.check(options=("--live",), argv=["--live"]) == ["--live"]
    assert args.check(names=("steps", "bad"), argv=["bad", "steps", "bad"]) == ["bad", "steps", "bad"]
    assert args.check(options=("--read",), words=1, argv=["--read", "out.json"]) == ["--read", "out.json"]
    assert args.check(words=None, argv=["a", "b", "c"]) == ["a", "b", "c"]
    for kwargs, argv, named, accepted in [
            ({}, ["x"], "'x'", "no arguments"),
            ({"options": ("--live",)}, ["--live", "--bogus"], "'--bogus'", "[--live]"),
            ({"words": 2}, ["a", "b", "c"], "'c'", "up to 2 paths"),
            ({"words": None}, ["a", "-b"], "'-b'", "PATH ..."),
            ({"names": ("steps", "bad")}, ["steps", "other"], "'other'", "any of steps | bad"),
            ({"words": 1, "usage": "[FOLDER]"}, ["a", "b"], "'b'", "[FOLDER]")]:
        try:
            args.check(**kwargs, argv=argv)
        except SystemExit as exc:
            assert exc.code == 2
        else:
            raise AssertionError(f"{argv} accepted under {kwargs}")
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"unknown argument {named}; accepted: {accepted}" in err, err
