"""The command line of a script that parses with argparse (a study, a registered set's read-out through
heldout/registration.set_main, a validation/*.py read-out, `python -m simcluster.fit.*`, runner/gpu_micro): a bad
argument (unknown, missing, of the wrong type) is ONE line on stderr, argparse's own words and then the usage on the
same line, exit 2 -- not argparse's usage line above its error. The `simcluster` command refuses in one line too, through
cli_args (a SimclusterError its main prints). Studies without argparse refuse through studies/study_args.check;
tests/test_study_args.py runs every study and every read-out with an unknown argument. A script that takes no or few
arguments without argparse (a validation/*.py read-out with its own argv grammar, a study through studies/study_args)
calls `check` first: an argument it does not take is one line naming it and what the script accepts, exit 2."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser whose refusal is one line: `PROG: error: MESSAGE; usage: PROG [-h] ...`, exit 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}; {' '.join(self.format_usage().split())}\n")


def check(options: tuple[str, ...] = (), names: tuple[str, ...] = (), words: int | None = 0, usage: str = "",
          argv: list[str] | None = None) -> list[str]:
    """`argv` (default sys.argv[1:]) when every argument is accepted: one of `options` (flags), one of `names` (words
    the study knows: variants, commands; any number of them), or one of at most `words` other words not starting with
    '-' (paths, an option's value; None: any number). Else the one-line refusal naming the first argument not accepted
    and what is accepted (`usage`, or one made from options, names and words), exit 2."""
    argv = sys.argv[1:] if argv is None else argv
    free = 0
    for arg in argv:
        if arg in options or arg in names:
            continue
        if not arg.startswith("-") and (words is None or free < words):
            free += 1
            continue
        print(f"{Path(sys.argv[0]).name}: unknown argument {arg!r}; accepted: {usage or accepted(options, names, words)}",
              file=sys.stderr)
        raise SystemExit(2)
    return argv


def accepted(options: tuple[str, ...], names: tuple[str, ...], words: int | None) -> str:
    """What `check` accepts, in words: 'no arguments', or the flags, the names and the count of other words."""
    parts = [f"[{o}]" for o in options]
    if names:
        parts.append("any of " + " | ".join(names))
    if words is None:
        parts.append("PATH ...")
    elif words:
        parts.append(f"up to {words} path{'s' if words > 1 else ''}")
    return " ".join(parts) or "no arguments"
