import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "calibration" / "h200x2-nvlink-2026-11-22"
SEED002 = ROOT / "calibration" / "oci-bm-gpu-h100-8x2" / "nccl-tests" / "all_reduce.txt"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")


def load_script(relative: str):
    """A script outside the package (validation/, studies/) loaded as a module, by its path under the repository."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def h200_log():
    return lambda op: H200 / "nccl-tests" / f"{op}.txt"


def _numbers_only(expected, where="expected"):
    """pytest.approx compares numbers; a label (str, bytes, None, bool) inside it is a test bug that a pytest
    release may stop tolerating (pytest 9.2 did, for `(float, 'LL')`): compare labels with == instead."""
    if isinstance(expected, (str, bytes, bool)) or expected is None:
        raise TypeError(f"pytest.approx given a non-number at {where}: {expected!r} (compare labels with ==)")
    if isinstance(expected, dict):
        for key, value in expected.items():
            _numbers_only(value, f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        for i, value in enumerate(expected):
            _numbers_only(value, f"{where}[{i}]")


_approx = pytest.approx


def _strict_approx(expected, *args, **kwargs):
    _numbers_only(expected)
    return _approx(expected, *args, **kwargs)


pytest.approx = _strict_approx     # every test module's `pytest.approx` goes through the check above
