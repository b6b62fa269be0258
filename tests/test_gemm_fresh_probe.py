"""The fresh GEMM set (calibration/h200x1-gemm-fresh-2026-11-29): its shapes are new to every GEMM set the project held
when it was registered, and the committed read-out's verdict follows from the committed numbers."""

import json

from conftest import ROOT, load_script

probe = load_script(ROOT / "studies" / "gemm_fresh_probe.py")
BUNDLE = ROOT / "calibration" / "h200x1-gemm-fresh-2026-11-29"


def _gemm_shapes(node, out: set) -> None:
    """Every (m, n, k) a JSON document names: {m, n, k} objects and "mnk" lists, at any depth."""
    if isinstance(node, dict):
        if all(isinstance(node.get(a), int) for a in ("m", "n", "k")):
            out.add((node["m"], node["n"], node["k"]))
        if isinstance(node.get("mnk"), list) and len(node["mnk"]) == 3:
            out.add(tuple(node["mnk"]))
        for value in node.values():
            _gemm_shapes(value, out)
    elif isinstance(node, list):
        for value in node:
            _gemm_shapes(value, out)


def test_the_fresh_shapes_were_new_and_distinct():
    """New to every GEMM set under calibration/ (any JSON document or gpu-micro stdout), this set's own files aside."""
    seen: set = set()
    for path in [*ROOT.glob("calibration/**/*.json"), *ROOT.glob("calibration/**/stdout.txt")]:
        if BUNDLE in path.parents:
            continue
        try:
            _gemm_shapes(json.loads(path.read_text()), seen)
        except (ValueError, UnicodeDecodeError):
            continue
    assert len(seen) > 100   # the scan reached the GEMM sets
    shapes = [tuple(r["mnk"]) for r in json.loads((BUNDLE / "registered.json").read_text())["rows"]]
    assert len(shapes) == len(set(shapes)) == 18 and not set(shapes) & seen
    assert [tuple(p[3]) for p in probe.planned()] == shapes


def test_the_read_out_verdict(capsys):
    assert probe.read(str(BUNDLE / "gemm-fresh.json"), str(BUNDLE / "registered.json")) == 0
    out = capsys.readouterr().out
    assert "session-36 card mean |error| 7.4%, refit 4.4%: H-fresh met" in out


def test_a_missing_measurement_is_no_verdict(tmp_path, capsys):
    doc = json.loads((BUNDLE / "gemm-fresh.json").read_text())
    doc["records"] = doc["records"][:-1]
    (tmp_path / "m.json").write_text(json.dumps(doc))
    assert probe.read(str(tmp_path / "m.json"), str(BUNDLE / "registered.json")) == 1
    assert "no verdict" in capsys.readouterr().err
