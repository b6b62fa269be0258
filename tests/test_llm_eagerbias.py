"""validation/llm_eagerbias.py --develop: every checkpointing mode the sets ran is read, sac's op mode included (mendC)."""

from __future__ import annotations

from conftest import load_script


def test_develop_reads_every_mode_of_the_sac_set_op_included():
    eb = load_script("validation/llm_eagerbias.py")
    sac = {(r["run"], r["mode"]) for r in eb.rows() if r["set"] == "sac"}
    assert {m for _, m in sac} == {"none", "full", "every:2", "op"}
    assert {r for r, m in sac if m == "op"} == {"0.3b-op", "1b-op", "3b-op"}
