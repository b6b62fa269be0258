"""The command line of a study that takes no or few arguments (not a study): an argument the study does not take is one
line on stderr naming it and what the study accepts, exit 2, before the study runs. A study calls `check` first in its
`if __name__ == "__main__":` block (studies/ is then the script's folder on sys.path); tests/test_study_args.py runs every
study with an unknown argument. Studies that parse with argparse build simcluster/script_args.ArgumentParser
instead, whose refusal is one line too."""

from __future__ import annotations

import sys
from pathlib import Path


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
