"""Transcription checks of dgxc-benchmarking v24.11.1's Grok-1 file (session 47 moefix, issue 44): the same layout table
as v25.02's (README L9-19 identical), every printed tokens/s the printed step's arithmetic, the series' order."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT
from test_published_session47_records import GROK as GROK_V25
from test_published_session47_records import GROK_LAYOUT

PUBLISHED = ROOT / "calibration" / "published"
GROK = yaml.safe_load((PUBLISHED / "llm-dgxc-benchmarking-v24.11.1-grok1-h100.yaml").read_text())
# README_314b.md at v24.11.1, L66 / L73: the training step time per GPU-count column (BF16, FP8)
STEPS = {"BF16": (24.03, 21.52, 10.64, 20.64, 20.64, 20.7, 20.83, 21, 21.09),
         "FP8": (19.89, 17.08, 8.3, 16.21, 16.48, 16.55, 16.69, 16.89, 17.04)}


@pytest.mark.parametrize("i", range(18))
def test_grok1_v24_column(i):
    run = GROK["runs"][i]
    par, batch, meas, seq = run["parallel"], run["batch"], run["measured"], run["model"]["seq"]
    layout = (seq, run["model"]["layers"], par["tp"], par["pp"], par["cp"], par["ep"], par["virtual_stages"], batch["global_batch"])
    assert layout == GROK_LAYOUT[run["gpus"]]
    assert par["dp"] * par["tp"] * par["pp"] * par["cp"] == run["gpus"]
    assert meas["step_time_s"] == STEPS[batch["precision"]][i % 9]
    assert abs(batch["global_batch_tokens"] / meas["step_time_s"] / meas["tokens_per_s"] - 1) < 2e-4


def test_grok1_v24_same_layout_and_assumptions_as_v25():
    """Only the measured numbers, the citation and the record's words differ from v25.02's file."""
    for a, b in zip(GROK["runs"], GROK_V25["runs"], strict=True):
        assert {k: v for k, v in a.items() if k != "measured"} == {k: v for k, v in b.items() if k != "measured"}
    def spec(f):
        return {k: v for k, v in f["simcluster"]["assumptions"]["models"]["Grok-1 314B"].items() if k != "from"}
    assert spec(GROK) == spec(GROK_V25)
    # both development for the EP-bytes change: v25.02 named it, v24.11.1 is its twin (cold review A47 item 3)
    assert GROK["simcluster"]["held_out"] is False and GROK_V25["simcluster"]["held_out"] is False
    assert "twin of the development source" in GROK["simcluster"]["why"]


@pytest.mark.parametrize("argv, expected", [
    ([], "usage: python studies/moe_file_rows.py STEM"),
    (["no-such-file.yaml"], "moe_file_rows: "),
])
def test_moe_file_rows_bad_input_is_one_line(argv, expected):
    """Cold review C47 item 8: no argument, or a stem no file has, is one line on stderr, not a traceback."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "studies" / "moe_file_rows.py"), *argv], capture_output=True,
                          text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 1 and done.stderr.startswith(expected) and done.stderr.count("\n") == 1, done.stderr
    assert "no-such-file.yaml.yaml" not in done.stderr
