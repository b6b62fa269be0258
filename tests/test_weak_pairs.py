"""validation/weak_pairs.py's bad input (review A45 item 10): no file, or a file that cannot be read, is one line on
stderr and exit 2, never a traceback or an empty table with exit 0."""

from __future__ import annotations

from conftest import load_script

weak_pairs = load_script("validation/weak_pairs.py")


def test_no_file_is_a_usage_line_and_exit_2(capsys):
    assert weak_pairs.main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage:") and len(err.strip().splitlines()) == 1


def test_a_missing_file_is_one_line_naming_it(capsys, tmp_path):
    missing = str(tmp_path / "absent.yaml")
    assert weak_pairs.main([missing]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and missing in err[0]


def test_a_file_of_another_kind_is_one_line(capsys, tmp_path):
    bad = tmp_path / "card.yaml"
    bad.write_text("kind: gpu\n")
    assert weak_pairs.main([str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0] and "kind" in err[0]
