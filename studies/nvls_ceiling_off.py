"""The NVLS-domain ceiling's counterfactual on OCI's GB200 rack (issue 41, session 49 nccl49; review A49 finding 8):
each all_reduce row of calibration/published/nccl-oci-gb200-quickstart-rack.yaml predicted as the product prices it
(the fitted ceiling channels x a_ch, collectives/nvls_domain.CHANNEL_ALGBW_Bps, binding) and with the ceiling removed
(a_ch priced as infinity inside nvls_domain.channel_algbw_as, this study's calls only: the card's law carried from 8 GPUs, the fill kept). Descriptive: nothing
is fitted or adopted from it (docs/models/collectives.md, collectives-findings.md session 49).
    python studies/nvls_ceiling_off.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.collectives import nvls_domain  # noqa: E402
from simcluster.reference.nccl import validate_published_nccl  # noqa: E402

RACK = ROOT / "calibration" / "published" / "nccl-oci-gb200-quickstart-rack.yaml"


def all_reduce_rows(a_ch: float) -> list:
    """The rack file's compared all_reduce rows with a_ch priced as `a_ch` (nvls_domain.channel_algbw_as)."""
    with nvls_domain.channel_algbw_as(a_ch):
        rows = validate_published_nccl(RACK).rows
    return [r for r in rows if r.error is not None and "all_reduce" in r.configuration]


def main() -> None:
    with_ceiling = all_reduce_rows(nvls_domain.CHANNEL_ALGBW_Bps)
    without = all_reduce_rows(math.inf)
    print(f"{RACK.name}: all_reduce rows, the NVLS-domain ceiling (a_ch {nvls_domain.CHANNEL_ALGBW_Bps / 1e9:g} GB/s a "
          "channel) as shipped and removed; + = predicted faster")
    print(f"{'configuration':<64} {'metric':<16} {'measured':>10} {'ceiling':>10} {'error':>7} {'no ceiling':>10} {'error':>7}")
    for a, b in zip(with_ceiling, without, strict=True):
        print(f"{a.configuration[:64]:<64} {a.metric:<16} {a.measured:>10.4g} {a.predicted:>10.4g} {a.error * 100:>+6.1f}% "
              f"{b.predicted:>10.4g} {b.error * 100:>+6.1f}%")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
