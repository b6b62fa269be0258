"""studies/gemm_timing_probe.py's read-out (issue 44, session 36): the registered H-event / H-card verdicts from records,
one line on bad input, and the committed read-out reproduced from the committed run."""

import json

from conftest import ROOT, load_script


def _records(tmp_path, gap: float):
    mod = load_script("studies/gemm_timing_probe.py")
    recs = []
    for label, m, n, k, trace in mod.SHAPES:
        kernel = (trace or 400.0) * 1e-6
        for cond in mod.CONDITIONS:
            recs.append({"shape": label, "mnk": [m, n, k], "condition": cond, "event_s": kernel * (1 + gap),
                         "event_profiled_s": kernel * (1 + gap), "kernel_median_s": kernel, "kernels": 40})
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"records": recs}))
    return mod, path


def test_the_verdicts_follow_the_registered_thresholds(tmp_path, capsys):
    mod, path = _records(tmp_path, 0.10)
    assert mod.main(["--read", str(path)]) == 0
    out = capsys.readouterr().out
    assert "H-event (interleaved): median(event / kernel - 1) = +10.0% over 6 shapes: supported" in out
    mod, path = _records(tmp_path, 0.01)
    assert mod.main(["--read", str(path)]) == 0
    assert "ruled out" in capsys.readouterr().out
    mod, path = _records(tmp_path, 0.05)
    assert mod.main(["--read", str(path)]) == 0
    assert ": undecided" in capsys.readouterr().out


def test_bad_input_is_one_line(tmp_path, capsys):
    mod = load_script("studies/gemm_timing_probe.py")
    for text in ("{}", "not json", json.dumps({"records": [{"shape": "x", "condition": "interleaved"}]})):
        (tmp_path / "bad.json").write_text(text)
        assert mod.main(["--read", str(tmp_path / "bad.json")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "bad.json" in err
    assert mod.main([]) == 2


def test_the_committed_read_out_reproduces(capsys):
    mod = load_script("studies/gemm_timing_probe.py")
    folder = ROOT / "calibration/h200x1-gemm-timing-2026-11-29"
    assert mod.main(["--read", str(folder / "gemm-timing.json")]) == 0

    def measured(text: str) -> list[list[str]]:
        """The read-out without the card's columns (card us, card/event-1) and its H-card line: readout.txt was read
        with the card of its day; the session-37 GEMM refit (gemmk) moved the card, not the measurements
        (studies/gemm_k_check.py reads these shapes against the current card)."""
        rows = [line.split() for line in text.splitlines() if not line.startswith("H-card")]
        return [r[:-4] + r[-3:-2] + r[-1:] if r[0][0].isdigit() else r for r in rows]
    assert measured(capsys.readouterr().out) == measured((folder / "readout.txt").read_text())
