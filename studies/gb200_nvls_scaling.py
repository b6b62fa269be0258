"""NVLS all_reduce from 8 GPUs to a 72-GPU GB200 NVL72 domain: which carry law the published figures allow (issue 41,
session 34, engineer gb200). A diagnostic on DEVELOPMENT rows: nothing here is adopted by the model.

The GB200 NVLS card (models/nvswitch/gb200-nvl72-nvls-derived.yaml) is the B200 card's 8-GPU algbw (466 GB/s, derived
from the H100 figures) carried to n GPUs. Three carry laws, each anchored at an 8-GPU figure A8:

    bytes     algbw(n) = A8 (1 + 1/8) / (1 + 1/min(n, 32))     a head GPU's NVLink bytes S (1 + 1/H) (the card's law)
    busbw     algbw(n) = A8 (2 x 7/8) / (2 (n - 1) / n)        busbw constant in n (no mechanism found in a source)
    adder     algbw(n) = A8 (7 / chips8) / ((n - 1) / chips)   each switch chip's adds per element (session 32)

Checked against (a) the H100 card's published 5-8 GPU figures (258 / 265 / 270 / 275 GB/s algbw, the card's own
source; each law anchored at its 8-GPU 275), (b) the one-rack CoreWeave rows at 4-8 GiB (72 ranks, the plateau) and
(c) the 2-rack rows' 16 GiB row (128 ranks over two 64-GPU domains, NVLS tree; its NVLS term is the 64-GPU rate).
Anchors: the B200 card's 466 GB/s and one measured 8 x B200 figure, NVIDIA/nccl#1807 (2025-08-13, NCCL 2.27.1,
'the all_reduce_perf performance of 8 B200s in a single machine ... Ours is 830+'; no size, algorithm or in/out-of-place
column stated: ASSUMED to be the busbw of an NVLS all_reduce at a large size, algbw 830 / 1.75 = 474.3).
Switch chips: 4 on HGX H100, 2 on HGX B200, 18 in an NVL72 (session 32's sources).

    python studies/gb200_nvls_scaling.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.cards import load_nvls  # noqa: E402
from simcluster.collectives.nccl_constants import NVLS_ARITY  # noqa: E402

PUBLISHED = ROOT / "calibration" / "published"
H100_CARD = ROOT / "models" / "nvswitch" / "h100-nvls.yaml"
B200_CARD = ROOT / "models" / "nvswitch" / "b200-nvls-derived.yaml"
B200_MEASURED_BUSBW = 830e9      # NVIDIA/nccl#1807: 8 x B200, one machine, NCCL 2.27.1, '830+' (prose; assumed NVLS busbw, large size)
CHIPS = {"h100": 4, "b200": 2, "nvl72": 18}


def bus_factor(n: int) -> float:
    return 2 * (n - 1) / n


def carry(law: str, a8: float, n: int, chips8: int, chips: int) -> float:
    """algbw at n GPUs from the 8-GPU algbw a8 under one carry law."""
    if law == "bytes":
        return a8 * (1 + 1 / 8) / (1 + 1 / min(n, NVLS_ARITY))
    if law == "busbw":
        return a8 * bus_factor(8) / bus_factor(n)
    if law == "adder":
        return a8 * (7 / chips8) / ((n - 1) / chips)
    raise ValueError(law)


def rows(name: str) -> list[dict]:
    return yaml.safe_load((PUBLISHED / name).read_text())["runs"]


def main() -> None:
    h100 = load_nvls(H100_CARD)[0]
    b200_card = load_nvls(B200_CARD)[0][8]
    one_rack = [r for r in rows("nccl-gb200-nvl72-coreweave.yaml") if r["bytes"] >= 4 * 2**30]
    two_racks = [r for r in rows("nccl-gb200-nvl72-2racks-coreweave.yaml") if r["bytes"] == 16 * 2**30]
    plateau72 = sum(r["algbw_GBps"] for r in one_rack) / len(one_rack) * 1e9
    plateau64 = two_racks[0]["algbw_GBps"] * 1e9
    print(f"8 x B200 NVLS algbw: card {b200_card / 1e9:.1f} GB/s, nccl#1807 ('830+', assumed NVLS busbw at a large size) "
          f"{B200_MEASURED_BUSBW / bus_factor(8) / 1e9:.1f} GB/s: card {b200_card / (B200_MEASURED_BUSBW / bus_factor(8)) - 1:+.1%}")
    print(f"measured algbw: one rack (72 ranks, 4-8 GiB mean) {plateau72 / 1e9:.1f} GB/s; "
          f"2 racks (128 ranks, 16 GiB, NVLS tree) {plateau64 / 1e9:.1f} GB/s\n")
    print(f"{'law':6s} {'H100 5 / 6 / 7 GPUs vs published':34s} {'72-GPU rack, anchor: card / measured':38s} "
          f"{'2 racks 16 GiB (64-GPU term)':28s}")
    for law in ("bytes", "busbw", "adder"):
        h = [carry(law, h100[8], n, CHIPS["h100"], CHIPS["h100"]) / h100[n] - 1 for n in (5, 6, 7)]
        racks = []
        for a8 in (b200_card, B200_MEASURED_BUSBW / bus_factor(8)):
            racks.append(carry(law, a8, 72, CHIPS["b200"], CHIPS["nvl72"]) / plateau72 - 1)
        two = carry(law, b200_card, 64, CHIPS["b200"], CHIPS["nvl72"]) / plateau64 - 1
        print(f"{law:6s} {' / '.join(f'{x:+.1%}' for x in h):34s} {' / '.join(f'{x:+.1%}' for x in racks):38s} "
              f"{two:+.1%} (upper bound: the NVLS tree adds network and fill)")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
