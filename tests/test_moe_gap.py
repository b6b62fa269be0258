"""studies/moe_gap.py's candidate terms for the MoE rows' misses (issue 44, session 37 moe): the load imbalance and the
grouped GEMM's tile excess under Megatron-Core's force-balanced benchmark routing (normal random logits per token, top-k
of E experts, independent across ranks) against a Monte Carlo draw of that routing."""

from types import SimpleNamespace

import numpy as np
import pytest
from conftest import load_script

GAP = load_script("studies/moe_gap.py")
EP, TOKENS, EXPERTS, TOP_K, TILE = 8, 512, 64, 4, 128


def _draw(trials: int, seed: int = 0) -> np.ndarray:
    """(trials, experts) rows each expert receives over the EP group's EP x TOKENS tokens, force-balanced routing."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((trials, EXPERTS))
    for t in range(trials):
        logits = rng.standard_normal((EP * TOKENS, EXPERTS))
        picks = np.argpartition(-logits, TOP_K, axis=1)[:, :TOP_K]
        counts[t] = np.bincount(picks.ravel(), minlength=EXPERTS)
    return counts


@pytest.fixture(scope="module")
def counts() -> np.ndarray:
    return _draw(300)


MODEL = SimpleNamespace(top_k=TOP_K, experts=EXPERTS)
PAR = SimpleNamespace(ep=EP)


def test_the_slowest_gpus_excess_rows_match_the_draw(counts):
    per_gpu = counts.reshape(len(counts), EP, EXPERTS // EP).sum(axis=2)
    drawn = float((per_gpu.max(axis=1) / per_gpu.mean(axis=1)).mean() - 1)
    formula = GAP.imbalance(MODEL, PAR, TOKENS)
    assert drawn > 0.01   # a few % at this size: not the balanced routing's 0
    assert formula == pytest.approx(drawn, rel=0.15)


def test_the_tile_excess_matches_the_draw(counts):
    drawn = float(np.ceil(counts / TILE).mean() / np.ceil(counts.mean() / TILE) - 1)
    assert drawn > 0.1    # mean 256 rows = 2 tiles exactly: about half the experts spill into a third
    assert GAP.tile_excess(MODEL, PAR, TOKENS, TILE) == pytest.approx(drawn, rel=0.1)


def test_one_gpu_has_no_imbalance():
    assert GAP.imbalance(MODEL, SimpleNamespace(ep=1), TOKENS) == 0.0
    assert GAP.expected_max_z(2) == pytest.approx(1 / np.sqrt(np.pi), rel=1e-6)
