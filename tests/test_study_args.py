"""Every study and every read-out refuses an argument it does not take in ONE line, before it runs: each studies/*.py,
each script in a studies/ subfolder but the device side (DEVICE_SIDE) and each validation/*.py, run as
`python X.py --bogus`, exits 2 with nothing on stdout and one line on stderr: a script without argparse through
simcluster/script_args.check (studies/study_args.check for the studies: the argument named and what the script
accepts), an argparse one through simcluster/script_args.ArgumentParser (argparse's own words: the argument named, or a
required argument missing, which argparse checks first; then the usage, on the same line). No script outside the device
side builds a bare argparse ArgumentParser (`argparse.ArgumentParser(` or `from argparse import ArgumentParser`: its
refusal is two lines)."""

import json
import re
import subprocess
import sys

import pytest
from conftest import ROOT, load_script

# the device scripts of registered sets in studies/ itself: their runs/commit.txt hash them as they ran, so they keep the
# parser they ran with (argparse's two-line refusal) rather than change after the run
DEVICE_RUN = ("moe_router_device.py", "moe_kernel_device.py",
              # session 55's HF sets (calibration/h200x1-hfdev55- / -hfhook55-2026-12-01): their one-line refusal names the
              # usage, not study_args' 'accepted:' form, and hfhook55's names hfdev55's script, whose main it imports
              "hfdev55_device.py", "hfhook55_device.py",
              # session 57's memory sets (-hfmem57- development, -hfmemh57- registered): hfdev55's parser, imported
              "hfmem57_device.py", "hfmemh57_device.py",
              # session 58's loss-bytes measurement (calibration/h200x1-lossbytes58-2026-12-02: a standalone torch script)
              "loss_bytes_device.py")
STUDIES = sorted(p for p in (ROOT / "studies").glob("*.py") if p.name != "study_args.py" and p.name not in DEVICE_RUN)
# the device side of studies/<topic>/: device.py, standalone torch scripts that registered sets ran on the GPU (no
# simcluster there), and megatron_moe's pinning.py and register.py, which the megatron-moe* / moelab49* sets' device_run.sh
# run on the GPU machine (each run's commit.txt hashes the version it ran; register.py has changed between sets, e.g.
# session 49's d8facb0e refusing unknown set / arm names in one line): this test leaves their parsers alone
DEVICE_SIDE = ("megatron_moe/pinning.py", "megatron_moe/register.py")
SUB_STUDIES = sorted(p for p in (ROOT / "studies").glob("*/*.py")
                     if p.name != "device.py" and str(p.relative_to(ROOT / "studies")) not in DEVICE_SIDE)
READOUTS = sorted((ROOT / "validation").glob("*.py"))   # every one is a script (a read-out, a registration, a check)
BARE = re.compile(r"argparse\.ArgumentParser\(|from argparse import [^\n]*\bArgumentParser\b")
# where a bare argparse.ArgumentParser stays: the shared parser itself, the `simcluster` command's (one SimclusterError
# line, printed by cli.main) and the device side (runner/*, studies/*/device.py: run on the GPU machine by registered sets)
BARE_ALLOWED = ("simcluster/script_args.py", "simcluster/cli_args.py", "simcluster/runner/", "studies/cp_attention/device.py",
                "studies/megatron_moe/device.py", "studies/overlap_micro/device.py", *(f"studies/{n}" for n in DEVICE_RUN))

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


def refusals(paths: list) -> dict:
    """{path: [exit code, stdout, stderr]} of each script run as `python X.py --bogus`, all in one process."""
    done = subprocess.run([sys.executable, "-c", DRIVER, *map(str, paths)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def one_line(path, code, out, err) -> bool:
    """The refusal is one line on stderr, exit 2, nothing on stdout: script_args.check's (study_args.check's) or
    script_args.ArgumentParser's (the error, then the usage)."""
    lines = err.strip().splitlines()
    checked = lines[:1] and lines[0].startswith(f"{path.name}: unknown argument '--bogus'; accepted: ")
    parsed = lines[:1] and lines[0].startswith(f"{path.name}: error: ") and f"; usage: {path.name} " in lines[0]
    return len(lines) == 1 and bool(checked or parsed) and code == 2 and out == ""


@pytest.mark.parametrize("kind", ["studies", "read-outs"])
def test_every_study_and_argparse_read_out_refuses_an_unknown_argument_in_one_line(kind):
    paths = STUDIES + SUB_STUDIES if kind == "studies" else READOUTS
    assert len(paths) > (80 if kind == "studies" else 60)
    results = refusals(paths)
    bad = [f"{p.name}: exit {results[str(p)][0]!r}, stdout {results[str(p)][1][:200]!r}, stderr {results[str(p)][2][-300:]!r}"
           for p in paths if not one_line(p, *results[str(p)])]
    assert not bad, "\n".join(bad)


def test_no_script_builds_a_bare_argparse_parser():
    """A new study or read-out that parses with argparse uses simcluster/script_args.ArgumentParser (one-line refusal)."""
    bare = [str(p.relative_to(ROOT)) for d in ("studies", "validation", "simcluster") for p in (ROOT / d).rglob("*.py")
            if BARE.search(p.read_text()) and not str(p.relative_to(ROOT)).startswith(BARE_ALLOWED)]
    assert not bare, bare
    assert BARE.search("from argparse import ArgumentParser\n") and BARE.search("from argparse import Namespace, ArgumentParser")
    assert not BARE.search("from simcluster.script_args import ArgumentParser\n")


def test_the_shared_parser_refuses_each_mistake_in_one_line(capsys):
    from simcluster.script_args import ArgumentParser

    ap = ArgumentParser(prog="x.py")
    ap.add_argument("bundle")
    ap.add_argument("--steps", type=int, default=3)
    assert vars(ap.parse_args(["b", "--steps", "5"])) == {"bundle": "b", "steps": 5}
    for argv, said in ((["b", "--bogus"], "unrecognized arguments: --bogus"),
                       ([], "the following arguments are required: bundle"),
                       (["b", "--steps", "many"], "argument --steps: invalid int value: 'many'")):
        with pytest.raises(SystemExit) as exc:
            ap.parse_args(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err == f"x.py: error: {said}; usage: x.py [-h] [--steps STEPS] bundle\n", err


@pytest.mark.parametrize("argv", [["validate", "--bogus"], ["parse", "calibration/h200x2-nvlink-2026-11-22/nccl-tests/"
                                  "all_reduce.txt", "--bogus"], ["predict", "collective", "--bogus"], ["--bogus"]])
def test_the_simcluster_command_refuses_in_one_line_too(capsys, argv):
    """`simcluster` refuses through cli_args (a SimclusterError line from cli.main, the command's --help named): an unknown
    argument after a command is named; before one (or with a required option missing) argparse names what is required."""
    from simcluster.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    said = "unrecognized arguments: --bogus" if argv[0] in ("validate", "parse") else "the following arguments are required: "
    assert err.count("\n") == 1 and err.startswith("simcluster: error: ") and said in err and "(see simcluster" in err, err


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
