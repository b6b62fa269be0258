"""What the opt-in `machine.nccl_tables: stated` gives on the published nccl files (issue 41, session 51, tuner51 /
tunoff51): every file priced with NCCL's tuner tables of the release it states (collectives/nccl_versions.py), printed
as `simcluster validate --published nccl [--held-out-systems]` prints the default (2.28.3's tables for every run).
Descriptive: the product's default does not read it (docs/models/fabric.md, "NCCL's tables by release").
    python studies/nccl_tables_stated.py published          > studies/nccl-published-session51-tuner51-optin.txt
    python studies/nccl_tables_stated.py held-out-systems   > studies/nccl-heldout-systems-session51-tuner51-optin.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.collectives.nccl_versions import TABLES_STATED  # noqa: E402
from simcluster.reference.nccl import validate_published_nccl  # noqa: E402
from simcluster.reference.nccl_held_out import excluded_systems, held_out_systems, load_systems, text  # noqa: E402
from simcluster.report.validation import render  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402


def main(what: str) -> None:
    """Print `what` ('published' or 'held-out-systems') with the opt-in."""
    if what == "published":
        sys.stdout.write(render(validate_published_nccl(None, TABLES_STATED)))
    else:
        sys.stdout.write(text(held_out_systems(systems=load_systems(None, TABLES_STATED)), excluded_systems()))


if __name__ == "__main__":
    parser = ArgumentParser(prog="nccl_tables_stated.py")
    parser.add_argument("what", choices=["published", "held-out-systems"])
    main(parser.parse_args().what)
