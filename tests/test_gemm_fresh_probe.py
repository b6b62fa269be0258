"""The fresh GEMM set (calibration/h200x1-gemm-fresh-2026-11-29): its shapes are new to every GEMM set the project held
when it was registered, and the committed read-out's verdict follows from the committed numbers."""

import json

from conftest import ROOT, load_script

probe = load_script(ROOT / "studies" / "gemm_fresh_probe.py")
BUNDLE = ROOT / "calibration" / "h200x1-gemm-fresh-2026-11-29"


def test_the_fresh_shapes_were_new_and_distinct():
    seen = set()
    for path in ROOT.glob("calibration/h*x1-gpu-interleaved-2026-11-23/gpu-micro/gpu-micro/stdout.txt"):
        seen |= {(g["m"], g["n"], g["k"]) for g in json.loads(path.read_text())["gemm"]}
    for name in ("h200x1-gemm-timing-2026-11-29/gemm-timing.json", "h200x1-eager-gemms-2026-11-29/eager-gemms.json"):
        seen |= {tuple(r["mnk"]) for r in json.loads((ROOT / "calibration" / name).read_text())["records"]}
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
