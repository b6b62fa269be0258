"""The registered one-GPU sets' read-outs reproduce their committed readout.txt (cold read D, session 34): every judged
line as it was read once; only the "(model now ... ms)" column, today's model beside the registered step, may move."""

import re

import pytest
from conftest import ROOT, load_script

MODEL_NOW = re.compile(r" +\(model now +[0-9.]+ ms\)")
READOUTS = [("validation/llm_compile2.py", "h200x1-llm-compile2-2026-11-29"),
            ("validation/llm_lease3.py", "h200x1-llm-lease3-2026-11-29"),
            ("validation/llm_compile4.py", "h200x1-llm-compile4-2026-11-29"),
            ("validation/llm_eager5.py", "h200x1-llm-eager5-2026-11-29"),
            ("validation/llm_eager5.py", "h200x1-llm-eager5-lease2-2026-11-29"),
            ("validation/llm_ophost.py", "h200x1-llm-ophost2-2026-11-29")]


@pytest.mark.parametrize("script,folder", READOUTS, ids=[f for _, f in READOUTS])
def test_a_registered_read_out_prints_its_committed_readout(script, folder, capsys):
    bundle = ROOT / "calibration" / folder
    assert load_script(script).main([str(bundle)]) == 0
    printed = MODEL_NOW.sub("", capsys.readouterr().out)
    committed = MODEL_NOW.sub("", (bundle / "readout.txt").read_text())
    assert printed == committed
