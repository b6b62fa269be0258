"""Transcription checks of the published files session 49 (publ49, issue 44) recorded: the identities each file's notes
state on its printed numbers, so a number or dimension mistyped later fails here."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT

PUBLISHED = ROOT / "calibration" / "published"
AWSOME = yaml.safe_load((PUBLISHED / "llm-awsome-torchtitan-p5-h100.yaml").read_text())
BLOG = yaml.safe_load((PUBLISHED / "llm-aws-sagemaker-torchtitan-p5-h100-unverified.yaml").read_text())
H100_PEAK = 989e12   # torchtitan tools/utils.get_peak_flops at 031f73f8a, H100 SXM


def torchtitan_flop_per_token(model: dict) -> float:
    """torchtitan's MFU numerator (tools/utils.get_num_flop_per_token at 031f73f8a): 6 N + 12 L h q s, N the parameters
    without the token embedding (untied output head and final norm counted), from the recorded dimensions."""
    d, layers, heads, kv, ffn, vocab = (model[k] for k in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab"))
    head_dim = d // heads
    block = 2 * d * d + 2 * d * kv * head_dim + 3 * d * ffn + 2 * d
    params = layers * block + d + vocab * d
    return 6 * params + 12 * layers * heads * head_dim * model["seq"]


@pytest.mark.parametrize("i", range(len(AWSOME["runs"])))
def test_awsome_row(i):
    """Each logged row: the printed MFU is torchtitan's formula on the recorded 8B dimensions at seq 8192 and the printed
    tps (to the log's two decimals), tokens_per_s = tps x 32, dp x tp x pp x cp = 32 GPUs."""
    run = AWSOME["runs"][i]
    meas, par = run["measured"], run["parallel"]
    mfu = 100 * torchtitan_flop_per_token(run["model"]) * meas["tokens_per_s_per_gpu"] / H100_PEAK
    assert round(mfu, 2) == meas["mfu_percent"]
    assert meas["tokens_per_s"] == meas["tokens_per_s_per_gpu"] * run["gpus"]
    assert par["dp"] * par["tp"] * par["pp"] * par["cp"] == run["gpus"] == 32


def test_awsome_compares_only_the_eager_row():
    """The compile + float8 row has no framework and is not compared; the eager row is (decided before the prediction)."""
    assert set(AWSOME["simcluster"]["runs_not_compared"]) == {1}
    assert AWSOME["simcluster"]["framework"] == "torchtitan-fsdp2"


def test_blog_speedups():
    """The blog's printed speedups over its baseline (+10.67 / +33.19 / +38.23%) follow from its printed throughputs within
    0.01 point (8,950 / 6,475 gives +38.224%, printed 38.23); no row of it is compared. Its own source since session 53
    mendC53 (cold review C53 item 4): another venue and repository than the awsome test case, no cluster named; it
    shares only the company, trainer and instance type, which pubmix53's rule R1-R4 does not count."""
    base = BLOG["runs"][0]["measured"]["tokens_per_s_per_gpu"]
    for run in BLOG["runs"][1:]:
        meas = run["measured"]
        assert abs(100 * (meas["tokens_per_s_per_gpu"] / base - 1) - meas["speedup_percent"]) <= 0.0101
    assert set(BLOG["simcluster"]["runs_not_compared"]) == set(range(len(BLOG["runs"])))
    assert not BLOG["simcluster"].get("source_group") and AWSOME["simcluster"]["source_group"] == "llm-awsome-torchtitan"
