"""The flow model against SimGrid's plain max-min (CM02) on a 256-host fabric (validation/simgrid_sharing.py).
Skipped where SimGrid's Python module (Debian's python3-simgrid, or a built `pip install simgrid`) is absent."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "validation"))

import simgrid_sharing  # noqa: E402

HAVE = (any(Path(simgrid_sharing.SIMGRID_PATH).glob(f"simgrid.cpython-{sys.version_info.major}{sys.version_info.minor}-*.so"))
        or importlib.util.find_spec("simgrid") is not None)   # a module built for this Python only


@pytest.mark.skipif(not HAVE, reason="SimGrid's Python module is not installed")
def test_strided_ring_collisions_agree_with_simgrid_max_min():
    row = simgrid_sharing.compare(256, 2.0, "ring-strided", 4 * 2**20)
    assert abs(row["error_vs_CM02_pct"]) < 1.0           # the same max-min on the same hashed routes
    assert -8.0 < row["error_vs_LV08_pct"] < 0.0          # LV08's TCP calibration: 0.97 of the bandwidth


def test_the_case_carries_every_flow_on_its_hashed_route():
    spec = simgrid_sharing.case(256, 1.0, "permutation", 2**20)
    assert spec["flows"] == len(spec["routes"]) == len(spec["src"])
    assert all(str(i) in {str(k) for k in spec["links"]} or i in spec["links"] for r in spec["routes"] for i in r)
    assert spec["model_s"] > 2**20 / 12.5e9
