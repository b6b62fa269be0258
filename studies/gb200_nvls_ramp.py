"""NVLS all_reduce in one GB200 NVL72 rack: how much of the measured ramp NCCL's NVLS pipeline can explain (issue 41,
session 32, helper gb200nvls). A diagnostic on DEVELOPMENT rows: nothing here is adopted by the model.

Data: calibration/published/nccl-gb200-nvl72-coreweave.yaml (72 ranks, NCCL 2.25.1, NVLS on; out-of-place times).
NCCL's one-node NVLS all_reduce (src/device/all_reduce.h l.388-455 at v2.25.1-1) runs per channel a three-stage
pipeline over loops of H chunks: every GPU scatters its data into the heads' NVLS buffer slots (a local copy), each
head load-reduces its chunk from all GPUs through the switch and multicasts the result, every GPU gathers the result
(a local copy). One loop of all C channels moves L = C H chunk(S) bytes; a pipeline of d = 3 stages adds at most
(d - 1) loops of fill and drain to S / B:

    T = a + S / B + f L(S) / B,    0 <= f <= d - 1 = 2

H = min(n, 32) heads (device.h l.180, search.cc l.992); C = 32 NVLS channels on SM100 in 2.25.1 (nvls.cc l.145,
l.176), 24 on one clique from 2.27 (2.28.3 nvls.cc l.193); chunk(S) from enqueue.cc calcCollChunking (l.1816-1824,
called per channel with the channel's bytes, l.612-620): 128 KiB (NCCL_NVLS_CHUNKSIZE), 64 KiB when the channel's
bytes < 64 C' H chunk with C' = 1, 32 KiB under 8 x, 16 KiB under 2 x. Printed: L per size, three least-squares fits
(a + S/B; a + (S + 2L)/B at the bound f = 2; (S + f L)/B with f free) and the card's rate with f = 0 and f = 2.

    python studies/gb200_nvls_ramp.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.cards import load_nvls  # noqa: E402
from simcluster.collectives.nccl_constants import NVLS_ARITY  # noqa: E402
from simcluster.collectives.nvls_domain import nvls_chunk_bytes  # noqa: E402

ROWS = ROOT / "calibration" / "published" / "nccl-gb200-nvl72-coreweave.yaml"
CARD = ROOT / "models" / "nvswitch" / "gb200-nvl72-nvls-derived.yaml"
STAGES = 3          # scatter, head reduce + multicast, gather (all_reduce.h l.416 / l.428 / l.440)


def loop_bytes(size: float, ranks: int, channels: int) -> int:
    heads = min(ranks, NVLS_ARITY)
    return int(channels * heads * nvls_chunk_bytes(size, channels, heads))


def busbw(size: np.ndarray, time: np.ndarray, ranks: int) -> np.ndarray:
    return size / time * 2 * (ranks - 1) / ranks


def main() -> None:
    runs = yaml.safe_load(ROWS.read_text())["runs"]
    ranks = runs[0]["ranks"]
    size = np.array([r["bytes"] for r in runs], float)
    time = np.array([r["time_us"] for r in runs]) * 1e-6
    measured = busbw(size, time, ranks)
    table, latency = load_nvls(CARD)[:2]
    print(f"{ROWS.name}: {ranks} ranks, measured busbw GB/s", np.round(measured / 1e9, 1))
    for channels, version in ((32, "2.25.1 (ran the rows)"), (24, "2.28 (the model's chooser)")):
        loop = np.array([loop_bytes(s, ranks, channels) for s in size], float)
        print(f"\nNCCL {version}: C = {channels} NVLS channels, H = {min(ranks, NVLS_ARITY)} heads, "
              f"L = {', '.join(f'{x / 2**20:.0f}' for x in loop)} MiB")
        fits = {"a + S/B": np.vstack([np.ones_like(size), size]).T,
                "a + (S + 2L)/B": np.vstack([np.ones_like(size), size + (STAGES - 1) * loop]).T}
        for name, design in fits.items():
            (a, inv_b), *_ = np.linalg.lstsq(design, time, rcond=None)
            worst = np.max(np.abs(design @ np.array([a, inv_b]) - time) / time)
            print(f"  fit {name:15s} a = {a * 1e3:.3f} ms, B = {1 / inv_b / 1e9:.0f} GB/s algbw "
                  f"({busbw(1 / inv_b, 1.0, ranks) / 1e9:.0f} busbw), worst residual {worst:.1%}")
        (inv_b, f_over_b), *_ = np.linalg.lstsq(np.vstack([size, loop]).T, time, rcond=None)
        print(f"  fit (S + f L)/B   f = {f_over_b / inv_b:.2f} loops (the pipeline allows <= {STAGES - 1}), "
              f"B = {1 / inv_b / 1e9:.0f} GB/s algbw")
        for f in (0, STAGES - 1):
            predicted = busbw(size, latency + (size + f * loop) / table[ranks], ranks)
            errors = ", ".join(f"{e:+.1%}" for e in predicted / measured - 1)
            print(f"  card {table[ranks] / 1e9:.1f} GB/s, f = {f}: busbw "
                  f"{', '.join(f'{x / 1e9:.0f}' for x in predicted)}; errors {errors}")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
