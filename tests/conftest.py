from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "calibration" / "h200x2-nvlink-2026-11-22"
SEED002 = ROOT / "calibration" / "oci-bm-gpu-h100-8x2" / "nccl-tests" / "all_reduce.txt"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")


@pytest.fixture
def h200_log():
    return lambda op: H200 / "nccl-tests" / f"{op}.txt"
