"""What ZeRO-2's per-micro-batch wait (llm/grad_sync.py zero2_waits, FrameworkSpec.zero2_wait) would move where the
product leaves it off: the Llama 3 405B rows of table 4 (calibration/published/llm-llama3-405b-table4.yaml) and the
llama405b-16k scenario, both zero 2 under framework megatron (standing for Meta's FSDP, which is not public), 16 or
more micro-batches a step (issue 44, session 46 zero2). Before: the product (the reduce-scatter of each micro-batch
runs into the next forward); after: the same with the wait forced on for every framework (each backward finalized as
the last one is). Read-only: no model change, nothing fitted. These rows prompted the change (docs/models/llm.md
"Missing", session 45): development for it, never held out for it.
    python studies/zero2_wait.py > studies/zero2_wait-session46.txt
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster import cli  # noqa: E402
from simcluster.llm import grad_sync  # noqa: E402

COMMANDS = (["validate", "--published", "llm", "calibration/published/llm-llama3-405b-table4.yaml"],
            ["run", "scenarios/llm/llama405b-16k.yaml"])
KEEP = ("llama3-405b-table4 ", "  llama3-405b-table4", "  step time", "  throughput", "  memory per GPU", "  breakdown")


def printed(argv: list[str], wait: bool) -> list[str]:
    """The command's lines that carry its numbers, with the wait forced on (wait) or the product's (not)."""
    kept = grad_sync.zero2_waits
    forced = (lambda par, _on, m: kept(par, True, m)) if wait else kept
    out = io.StringIO()
    with mock.patch.object(grad_sync, "zero2_waits", forced), contextlib.redirect_stdout(out):
        cli.main(argv)
    return [line for line in out.getvalue().splitlines() if line.startswith(KEEP)]


def main() -> None:
    print(__doc__.split("\n    python")[0].strip())
    for argv in COMMANDS:
        print(f"\n$ simcluster {' '.join(argv)}")
        for label, wait in (("before (product: no wait for framework megatron)", False), ("after (the wait on)", True)):
            print(f"-- {label}")
            for line in printed(argv, wait):
                print(line)


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
