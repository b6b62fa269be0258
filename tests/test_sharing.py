"""The max-min solver against textbook progressive-filling cases."""

import numpy as np
import pytest

from simcluster.network.sharing import max_min_rates


def test_two_links_three_flows():
    # f0: link0; f1: link0+link1; f2: link1. cap0 = 10, cap1 = 4 -> f1 = f2 = 2, f0 = 8
    rates = max_min_rates([0, 1, 1, 2], [0, 0, 1, 1], np.array([10.0, 4.0]), 3)
    assert rates == pytest.approx([8, 2, 2])


def test_equal_share_on_one_link():
    rates = max_min_rates([0, 1, 2, 3], [0, 0, 0, 0], np.array([12.0]), 4)
    assert rates == pytest.approx([3, 3, 3, 3])


def test_rate_cap_frees_capacity_for_others():
    rates = max_min_rates([0, 1], [0, 0], np.array([10.0]), 2, caps=np.array([2.0, np.inf]))
    assert rates == pytest.approx([2, 8])


def test_parking_lot():
    # classic parking lot: long flow over links 0,1,2; one short flow per link, all caps 1
    flows = [0, 0, 0, 1, 2, 3]
    links = [0, 1, 2, 0, 1, 2]
    rates = max_min_rates(flows, links, np.ones(3), 4)
    assert rates == pytest.approx([0.5, 0.5, 0.5, 0.5])


def test_bertsekas_gallager_example():
    # links A(cap 1): f0,f1,f2; B(cap 2): f2,f3 -> f0=f1=f2=1/3, f3 = 5/3
    rates = max_min_rates([0, 1, 2, 2, 3], [0, 0, 0, 1, 1], np.array([1.0, 2.0]), 4)
    assert rates == pytest.approx([1 / 3, 1 / 3, 1 / 3, 5 / 3])
