"""A second lease for the compiled and op regimes on one H200 (issue 44, session 33, engineer lease3; not a test): the
set calibration/h200x1-llm-lease3-2026-11-29, registered before its run, in compile2's format and under compile2's
rule (validation/llm_compile2.py: the same prediction, registration and read-out; only the plan differs).

    python validation/llm_lease3.py --register [PATH]   # the predictions now -> a new registered.json (the set's by
                                                        # default; an existing one is refused, never overwritten)
    python validation/llm_lease3.py BUNDLE              # the read-out: BUNDLE/runs/<run>.json and <run>-<i>.json

Plan (shapes no earlier run measured in these modes: the compile, compile2, sac, ophost and ophost2 sets): compiled
(llm-step --compile) one launch each, op (--ac-mode op) three launches each. Today's model: the compiled block's
saved set (llm/compiled.py) with the compile host fit of calibration/h200x1-llm-compile-2026-11-29/host; op with the
per-phase host cost (eager.op_phase_factors on the op fit of calibration/h200x1-llm-diag-2026-11-29/host), as ophost2.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llm_compile2  # noqa: E402  (compile2's prediction, registration and read-out, reused)

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import refuse_existing  # noqa: E402
from simcluster.llm import eager  # noqa: E402
from simcluster.script_args import check  # noqa: E402

ROOT = llm_compile2.ROOT
SET = ROOT / "calibration/h200x1-llm-lease3-2026-11-29"
# preset, layers (None: the preset's), seq, micro-batch
COMPILED = (("0.3b", None, 4096, 4), ("1.1b", None, 2048, 4), ("2b", None, 1024, 4), ("3.1b", None, 1024, 4))
OP = (("0.8b", None, 2048, 4), ("3b", None, 1024, 4))


def provenance() -> dict:
    f_fwd, f_bwd = eager.op_phase_factors()
    return {"set": str(SET.relative_to(ROOT)), "op_phases": str(eager.OP_PHASES.relative_to(ROOT)),
            "op_phase_factors": {"forward": round(f_fwd, 4), "backward": round(f_bwd, 4)},
            "host_folders": {"compile": str(llm_compile2.COMPILE_HOST.relative_to(ROOT)),
                             "op": str(llm_compile2.OP_HOST.relative_to(ROOT))}}


def main(argv: list[str]) -> int:
    check(options=("--register",), words=1, usage="BUNDLE | --register [PATH]", argv=argv)
    if argv[:1] == ["--register"] and len(argv) <= 2:
        try:
            out = refuse_existing(Path(argv[1]) if len(argv) > 1 else SET / "registered.json")
            llm_compile2.register(out, COMPILED, OP, provenance())
        except SimclusterError as exc:
            print(f"llm_lease3: {exc}", file=sys.stderr)
            return 2
        return 0
    if len(argv) != 1 or not (Path(argv[0]) / "runs").is_dir():
        print("llm_lease3: expected BUNDLE with runs/<run>.json (device_run.sh's lease3.tgz, unpacked) or --register [PATH]",
              file=sys.stderr)
        return 2
    bundle = Path(argv[0])
    try:
        return llm_compile2.read_bundle(bundle, SET)
    except SimclusterError as exc:
        print(f"llm_lease3: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
