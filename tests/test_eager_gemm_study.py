"""studies/eager_gemm_device.py --read (mendD2): the registered hypotheses' medians and verdicts computed by the reader,
readout.txt is its output, and bad records are one line naming the file and key."""

import json

from conftest import ROOT, load_script

STUDY = load_script("studies/eager_gemm_device.py")
BUNDLE = ROOT / "calibration/h200x1-eager-gemms-2026-11-29"


def test_read_prints_each_hypothesis_verdict_and_is_the_shipped_readout(capsys):
    assert STUDY.main(["--read", str(BUNDLE / "eager-gemms.json")]) == 0
    out = capsys.readouterr().out

    def measured(text: str) -> list[list[str]]:
        """The read-out without what depends on the card (its column, H-small, the last reading): readout.txt was read
        with the card of its day; the session-37 GEMM refit (gemmk) moved the card, not the records."""
        rows = [line.split() for line in text.splitlines() if not line.startswith(("H-small", "last reading"))]
        return [r[:r.index("card") + 1] + r[r.index("card") + 2:] if "card" in r[4:] else r for r in rows]
    assert measured(out) == measured((BUNDLE / "readout.txt").read_text())
    lines = out.splitlines()
    assert "over the 24 records with min(M, N) > 512" in lines[-5]      # the declared filter (the registration said 21)
    assert lines[-4].startswith("H-layout: median(step / nn - 1) = -0.9% -> ruled out")
    assert lines[-3].startswith("H-data: median(step-data / step - 1) = -0.0%, median SM clock step-data - step = +0 MHz -> ruled out")
    # read with the session-35 card: 1.1b +96.1%, 0.5b +10.6%, 2b +6.8% (readout.txt); with the session-37 refit:
    assert "1.1b +58.0%, 0.5b +2.0%, 2b +0.6% -> not met" in lines[-2]
    assert lines[-1].endswith("applies: the step itself, the card stays")


def _row(lin, ps, mnk, nn, step, data, card, clock=(1900, 1900)):
    recs = [{"time_s": t, "sm_MHz": c} for t, c in ((nn, 1900), (step, clock[0]), (data, clock[1]))]
    return ("x", lin, ps, mnk, recs, card)


def test_verdicts_follow_the_declared_thresholds():
    big = (2048, 2048, 2048)
    faster = [_row("q", "fwd", big, 1.0, 0.9, 0.85, 1.0, (1900, 1950))] * 3 + [_row("k", "wgrad", (256, 2048, 2048), 1, 1, 1, 1.1)]
    lines = STUDY.verdicts(faster)
    assert "over the 3 records" in lines[0]                              # the k weight gradient is outside the filter
    assert "-10.0% -> supported" in lines[1] and "-5.6%" in lines[2] and "-> supported" in lines[2]
    assert lines[3].endswith("-> met (every one within 15%)") and "does not apply" in lines[4]
    assert "undecided" in STUDY.verdicts([_row("q", "fwd", big, 1.0, 0.96, 0.96, 1.0)])[1]


def test_bad_records_are_one_line_naming_the_file_and_key(tmp_path, capsys):
    cases = {"empty.json": {}, "nopreset.json": {"records": [{"linear": "q", "pass": "fwd", "variant": "nn"}]},
             "notlist.json": {"records": {"a": 1}}}
    for name, doc in cases.items():
        (tmp_path / name).write_text(json.dumps(doc))
    for name, key in (("empty.json", "'records'"), ("nopreset.json", "'preset'"), ("notlist.json", "'records'"),
                      ("missing.json", "No such file")):
        assert STUDY.main(["--read", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and name in err and key in err and "Traceback" not in err, err
    assert "records[0]" in (STUDY.main(["--read", str(tmp_path / "nopreset.json")]), capsys.readouterr().err)[1]
