"""Measured fidelity of the collective model on 2 x H200 (calibration/h200x2-nvlink-2026-11-22).

The card is fitted on the all_reduce log alone; the six other collectives are held out. The
bounds below are the errors measured when this test was written, plus a small margin: the test
fails if the model or the fit regresses. They are NOT the product target (<= 5% held out); see
docs/models/collectives-findings.md for why the held-out collectives miss it.
"""

import pytest
from conftest import OPS

from simcluster.fit import collective as fit_collective
from simcluster.fit.validate import summary, validate
from simcluster.traces import nccl_tests

# op -> max allowed mean |error| (%) over sizes >= 1 KiB; measured values in the comments
BOUNDS = {
    "all_reduce": 6.5,  # 5.8 in-sample
    "all_gather": 16.0,  # 14.7
    "reduce_scatter": 28.0,  # 26.6
    "broadcast": 25.0,  # 23.3
    "reduce": 27.0,  # 25.1
    "sendrecv": 23.5,  # 21.9
    "alltoall": 9.5,  # 8.0
}


@pytest.fixture(scope="module")
def card_params(request):
    from conftest import H200

    params, _ = fit_collective.fit([nccl_tests.parse(H200 / "nccl-tests" / "all_reduce.txt")])
    return fit_collective.rounded(params)


@pytest.mark.parametrize("op", OPS)
def test_error_does_not_regress(op, card_params, h200_log):
    stats = summary(validate(card_params, nccl_tests.parse(h200_log(op))))["sizes_ge_1024B"]
    assert stats["sizes"] == 24
    assert stats["mean_abs_error_pct"] <= BOUNDS[op]


def test_large_message_bandwidth_of_all_reduce(card_params, h200_log):
    """Above 64 MiB the all_reduce prediction stays within 10% of every measured size."""
    rows = [r for r in validate(card_params, nccl_tests.parse(h200_log("all_reduce"))) if r.size_bytes >= 2**26]
    assert max(abs(r.error) for r in rows) < 0.10
