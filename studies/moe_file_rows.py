"""Every row of one published MoE file as the validation predicts it, with the predicted step's breakdown
(studies/moe_rows.summary): the print behind session 47 moefix's Grok-1 development and held-out files.

    PYTHONPATH=. python studies/moe_file_rows.py llm-dgxc-benchmarking-v25.02-grok1-h100
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from moe_rows import PUBLISHED, read_published, summary  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402

USAGE = "usage: python studies/moe_file_rows.py STEM (a file of calibration/published, with or without .yaml)"


def main(stem: str) -> None:
    stem = stem.removesuffix(".yaml")
    rows = len(read_published(PUBLISHED / f"{stem}.yaml", "published-llm-run").runs)
    summary([(stem, range(rows))], stem)


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=1, usage="STEM (a file of calibration/published, with or without .yaml)")
    if len(sys.argv) != 2:
        sys.exit(USAGE)
    given = Path(sys.argv[1])
    if given.parent != Path(".") and given.resolve().parent != PUBLISHED.resolve():   # a path elsewhere: not read silently
        sys.exit(f"moe_file_rows: {given}: expected a file of {PUBLISHED} (or its stem)")
    try:
        main(given.name)
    except SimclusterError as exc:
        sys.exit(f"moe_file_rows: {exc}")
