"""studies/attention_gqa_read.py: the GQA probe read against the README's registered block, not today's model."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, load_script

read = load_script(ROOT / "studies" / "attention_gqa_read.py")


def test_the_registered_block_is_read_as_registered(tmp_path):
    model = read.registered(read.BUNDLE / "README.md")
    assert len(model) == 12
    assert model[(32, 8, 64, 16384)] == pytest.approx({"fwd_s": 4.121e-3, "bwd_s": 10.944e-3})
    readme = tmp_path / "README.md"   # an edited registered number moves the read: it is not recomputed
    readme.write_text((read.BUNDLE / "README.md").read_text().replace("fwd    4.121 ms  bwd   10.853", "fwd    3.000 ms  bwd   10.853"))
    assert read.registered(readme)[(32, 32, 64, 16384)]["fwd_s"] == pytest.approx(3.0e-3)


def test_the_rules_verdicts(capsys):
    assert read.main([]) == 0
    out = capsys.readouterr().out
    for seq in (16384, 32768):
        assert f"seq {seq}: rule 1" in out and f"seq {seq}: rule 3 (the control >= 8% under the model): not met; forward only" in out
    assert "MET" not in out   # no rule fully fires on this run


def test_a_shape_the_registration_lacks_is_a_one_line_error(tmp_path, capsys):
    doc = json.loads((read.BUNDLE / "gqa.json").read_text())
    doc["records"].append(dict(doc["records"][0], seq=65536))
    path = tmp_path / "gqa.json"
    path.write_text(json.dumps(doc))
    assert read.main([str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not in the registration" in err[0] and "seq 65536" in err[0]
