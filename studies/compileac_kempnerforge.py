"""What session 46's compileac fixes (framework.casts_in_block: off, kept by rule A; loss_in_graph: on since rule AM
read ADOPT) move on KempnerForge's compiled FSDP2 rows (calibration/published/llm-kempnerforge-h200-fsdp2.yaml): the
published LLM validation of that file printed twice, the product's frameworks as shipped (casts off, loss on) and with
both fields on in every framework of FRAMEWORKS (the flags' adoption, as /work/device-requests/compileac.md's one-line
switches would ship it).
These rows were seen before the fixes (validation/kempnerforge-compiled-predicted-once.txt): if the fixes are adopted
they are development for them, not held out. They did not steer the fixes (chosen on the compilefsdp set's runs).

    PYTHONPATH=. python studies/compileac_kempnerforge.py > studies/compileac_kempnerforge-session46.txt
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCE = "calibration/published/llm-kempnerforge-h200-fsdp2.yaml"


def validate() -> list[str]:
    """The compared rows' lines of `simcluster validate --published llm SOURCE`."""
    from simcluster.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["validate", "--published", "llm", str(ROOT / SOURCE)])
    return [line for line in out.getvalue().splitlines() if "tokens/s" in line or "mean |error|" in line]


def main() -> int:
    from simcluster.llm import framework

    kept = dict(framework.FRAMEWORKS)
    before = validate()
    framework.FRAMEWORKS.update({k: replace(f, casts_in_block=True, loss_in_graph=True) for k, f in kept.items()})
    try:
        after = validate()
    finally:
        framework.FRAMEWORKS.clear()
        framework.FRAMEWORKS.update(kept)
    k = kept["kempnerforge-fsdp2-compile"]
    print(f"# {SOURCE}: the compiled rows as shipped (casts_in_block off, loss_in_graph on) and with both on; seen before the fixes "
          "(development for them if adopted), not held out")
    print(f"# kempnerforge-fsdp2-compile: cast_bytes {k.cast_bytes} (FSDP2's bf16 parameters: no autocast weight casts "
          f"priced), host_kernel_s {k.host_kernel_s}, bf16_param_block {k.bf16_param_block} (loss_in_graph acts on the "
          "llm-step runner's FSDP2 only)")
    print("## shipped: casts off, loss on")
    print("\n".join(before))
    print("## both on")
    print("\n".join(after))
    print(f"moved: {'nothing' if before == after else 'see the lines above'}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
