"""The command line of a study that takes no or few arguments (not a study): an argument the study does not take is one
line on stderr naming it and what the study accepts, exit 2, before the study runs. A study calls `check` first in its
`if __name__ == "__main__":` block (studies/ is then the script's folder on sys.path); tests/test_study_args.py runs every
study with an unknown argument. Studies that parse with argparse build simcluster/script_args.ArgumentParser
instead, whose refusal is one line too. `check` lives in simcluster/script_args (validation/*.py read-outs call it too);
this module keeps the studies' import."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.script_args import accepted, check  # noqa: E402,F401  (re-exported: the studies call study_args.check)
