"""Activation checkpointing in eager PyTorch on one H200: two more registered sets (issue 44, session 35; not a test).

The sac set (calibration/h200x1-llm-sac-2026-11-29, validation/llm_sac.py) is the only source of the `single+ckpt-every2`
regime (3 rows, one source: unvalidated, trust.md). These two sets run the same three modes (none, full, every:2) on
shapes no earlier llm-step document measured in any mode, each registered before its run and run on its own lease, so
that the regime has three sources. Prediction, rule and read-out are the sac set's (llm_sac.predict: framework torch,
llm/eager_ac.py, the H200 interleaved card, the ckpt-host fits; met = mean |step error| <= 8% per mode and every run's
memory within 10%).

    python validation/llm_ac6.py --register ac6a|ac6b|eager7|eager8     # the predictions now -> SET/registered.json (never overwritten)
    python validation/llm_ac6.py ac6a|ac6b|eager7|eager8 BUNDLE          # the read-out: BUNDLE/runs/<preset>-<mode>.json

eager7 (issue 44, session 35, engineer eagerbias): the same three modes on three more never-measured shapes, registered
with the runner's autocast block (llm/autocast_block.py: its saved casts and fp32 rotary), the test of that change
(calibration/h200x1-llm-eager7-2026-11-29/README.md declares its rule, the sac rule plus the none memory sign check).
eager8 (issue 44, session 35, engineer gemm): the same three modes on three more never-measured shapes, registered with
the interleaved card's split-K (hardware/gpu.py gemm_split_k; calibration/h200x1-llm-eager8-2026-11-29/README.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llm_sac  # noqa: E402  (the sac set's prediction, registration and read-out, reused)

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import refuse_existing  # noqa: E402
from simcluster.script_args import check  # noqa: E402

ROOT = llm_sac.ROOT
MODES = ("none", "full", "every:2")
# preset, seq, micro-batch: three shapes per set, none of them measured before in any mode (tests/test_llm_ac6.py);
# a set registered from now on also needs new (preset, tokens = seq x micro-batch): the allocated peak follows tokens,
# so ac6b, eager7 and eager8 repeat some earlier tokens (test_llm_ac6.REPEATED_TOKENS: development evidence for memory)
SETS = {"ac6a": (ROOT / "calibration/h200x1-llm-ac6a-2026-11-29", (("0.5b", 4096, 8), ("1.1b", 2048, 8), ("2b", 2048, 8))),
        "ac6b": (ROOT / "calibration/h200x1-llm-ac6b-2026-11-29", (("1.1b", 4096, 4), ("0.8b", 2048, 16), ("1b", 1024, 16))),
        "eager7": (ROOT / "calibration/h200x1-llm-eager7-2026-11-29", (("3.1b", 4096, 2), ("0.8b", 4096, 4), ("0.3b", 1024, 32))),
        "eager8": (ROOT / "calibration/h200x1-llm-eager8-2026-11-29", (("1.1b", 1024, 16), ("0.5b", 2048, 16), ("2b", 1024, 16)))}
USAGE = ("expected --register ac6a|ac6b|eager7|eager8, or ac6a|ac6b|eager7|eager8 BUNDLE (BUNDLE/runs/<preset>-<mode>.json, "
         "the device tarball unpacked)")


def main(argv: list[str]) -> int:
    check(options=("--register",), words=2, usage=USAGE, argv=argv)
    register = argv[:1] == ["--register"]
    args = argv[1:] if register else argv
    if len(args) != (1 if register else 2) or args[0] not in SETS:
        print(f"llm_ac6: {USAGE}", file=sys.stderr)
        return 2
    folder, plan = SETS[args[0]]
    if register:
        try:
            llm_sac.register(refuse_existing(folder / "registered.json"), plan, MODES)
        except SimclusterError as exc:
            print(f"llm_ac6: {exc}", file=sys.stderr)
            return 2
        return 0
    if not (Path(args[1]) / "runs").is_dir():
        print(f"llm_ac6: {args[1]}: no runs/ folder; {USAGE}", file=sys.stderr)
        return 2
    return llm_sac.read_out(Path(args[1]), folder / "registered.json", MODES, "llm_ac6")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
