"""studies/gemm_l2_probe.py's read-out (issue 44, session 35): the registered H-L2 / H-trace verdicts from records, and
one line on bad input."""

import json

from conftest import load_script


def _records(tmp_path, warm_scale: float):
    mod = load_script("studies/gemm_l2_probe.py")
    recs = []
    for label, m, n, k, trace in mod.SHAPES:
        cold = (trace or 400.0) * 1e-6 * 1.12
        for cond, scale in (("cold", 1.0), ("warm", warm_scale), ("b2b", warm_scale)):
            recs.append({"shape": label, "mnk": [m, n, k], "condition": cond, "calls": 40, "median_s": cold * scale})
    path = tmp_path / "l2.json"
    path.write_text(json.dumps({"records": recs}))
    return mod, path


def test_the_verdicts_follow_the_registered_thresholds(tmp_path, capsys):
    mod, path = _records(tmp_path, 1 / 1.12)      # warm = the traced kernel, 10.7% under cold
    assert mod.main(["--read", str(path)]) == 0
    out = capsys.readouterr().out
    assert "H-L2: median(warm / cold - 1) = -10.7%" in out and ": supported" in out
    assert "H-trace: median(warm / the step's traced kernel - 1) = +0.0%" in out and "met (registered" in out
    mod, path = _records(tmp_path, 1.0)
    assert mod.main(["--read", str(path)]) == 0
    assert "ruled out" in capsys.readouterr().out


def test_bad_input_is_one_line(tmp_path, capsys):
    mod = load_script("studies/gemm_l2_probe.py")
    for text in ("{}", "not json", json.dumps({"records": [{"shape": "x"}]})):
        (tmp_path / "bad.json").write_text(text)
        assert mod.main(["--read", str(tmp_path / "bad.json")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "bad.json" in err
    assert mod.main([]) == 2


def test_the_committed_read_out_reproduces(capsys):
    from conftest import ROOT

    mod = load_script("studies/gemm_l2_probe.py")
    folder = ROOT / "calibration/h200x1-gemm-l2-2026-11-29"
    assert mod.main(["--read", str(folder / "gemm-l2.json")]) == 0

    def measured(text: str) -> list[list[str]]:
        """The read-out without the card's column: readout.txt was read with the card of its day; the session-37 GEMM
        refit (gemmk) moved the card, not the measurements (studies/gemm_k_check.py reads the current card)."""
        rows = [line.split() for line in text.splitlines()]
        return [r[:-4] + r[-3:] if r[0][0].isdigit() else r for r in rows]
    assert measured(capsys.readouterr().out) == measured((folder / "readout.txt").read_text())
