"""The command line of a script that parses with argparse (a study, a registered set's read-out through
heldout/registration.set_main, a validation/*.py read-out, `python -m simcluster.fit.*`, runner/gpu_micro): a bad
argument (unknown, missing, of the wrong type) is ONE line on stderr, argparse's own words and then the usage on the
same line, exit 2 -- not argparse's usage line above its error. The `simcluster` command refuses in one line too, through
cli_args (a SimclusterError its main prints). Studies without argparse refuse through studies/study_args.check;
tests/test_study_args.py runs every study and every argparse read-out with an unknown argument."""

from __future__ import annotations

import argparse


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser whose refusal is one line: `PROG: error: MESSAGE; usage: PROG [-h] ...`, exit 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}; {' '.join(self.format_usage().split())}\n")
