"""Issue 45: every JSON reader goes through strict.loads_json / load_json: deep nesting, NaN and Infinity, numbers
that overflow and integers too long for any count are one-line errors naming the file, never a RecursionError."""

import json
import re
import shutil

import pytest
from conftest import ROOT

from simcluster import strict
from simcluster.cli import main
from simcluster.errors import SimclusterError

DEEP = "[" * 100000 + "]" * 100000


@pytest.mark.parametrize("text,why", [
    ('{"a": ' + DEEP + "}", "nested more than 64"), ("[" * 65 + "]" * 65, "nested more than 64"),
    ('{"a": NaN}', "NaN is not a measurement"), ('{"a": [1, -Infinity]}', "-Infinity"),
    ('{"a": 1e999}', "1e999 is out of range"), ('{"a": ' + "9" * 30 + "}", "30 digits"),
    ('{"a": ' + "9" * 5000 + "}", "digits"), ("[1] [2]", "Extra data")])
def test_loads_json_refuses_with_a_json_decode_error(text, why):
    with pytest.raises(json.JSONDecodeError, match=why):
        strict.loads_json(text)


def test_a_refused_number_is_located_on_its_line():
    with pytest.raises(json.JSONDecodeError) as info:
        strict.loads_json('{\n "a": 1,\n "b": NaN\n}')
    assert info.value.lineno == 3


def test_loads_json_reads_what_tools_write():
    assert strict.loads_json(' {"a": [1, 2.5e-3, -4, "x", null, true]} \n') == {"a": [1, 2.5e-3, -4, "x", None, True]}
    assert strict.loads_json("[" * 64 + "]" * 64) is not None   # 64 levels: the limit itself


def test_load_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{\n"runs": [\n' + DEEP + "]}")
    with pytest.raises(SimclusterError, match=r"m.json:\d+: not valid JSON \(nested more than 64"):
        strict.load_json(path)
    path.write_bytes(b'{"a": "\x00"}')
    with pytest.raises(SimclusterError, match="NUL byte"):
        strict.load_json(path)


def _one_line(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.startswith("simcluster: error:") and "\n" not in err and "Traceback" not in err
    return err


def test_parse_of_a_deeply_nested_json_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text('{"nThreads": 1, "results": ' + DEEP + "}")
    assert "nested more than 64" in _one_line(capsys, ["parse", str(path)])


def _bundle_with(tmp_path, name, rel, text):
    bundle = tmp_path / name
    shutil.copytree(ROOT / "calibration" / name, bundle)
    (bundle / rel).write_text(text)
    return bundle


def test_a_deep_bundle_manifest_is_one_line(tmp_path, capsys):
    bundle = _bundle_with(tmp_path, "h200x4-collect-2026-11-22", "manifest.json", '{"runs": ' + DEEP + "}")
    err = _one_line(capsys, ["calibrate", str(bundle), "-o", str(tmp_path / "cards")])
    assert "manifest.json:1: not valid JSON (nested more than 64" in err


@pytest.mark.parametrize("rel,text", [
    ("fio/randread-4k-qd16/stdout.txt", '{"fio version": "fio-3.36", "jobs": ' + DEEP + "}"),
    ("fio/randread-4k-qd16/stdout.txt", '{"fio version": "fio-3.36", "jobs": [{"read": {"iops": 1e999}}]}')])
def test_a_bad_fio_json_skips_that_run_only(tmp_path, capsys, rel, text):
    bundle = _bundle_with(tmp_path, "local-2026-11-22", rel, text)
    code = main(["calibrate", str(bundle), "-o", str(tmp_path / "cards")])
    err = capsys.readouterr().err
    assert code == 3 and "Traceback" not in err
    assert "randread-4k-qd16" in err and "malformed fio JSON" in err
    assert (tmp_path / "cards" / "nvme-local.yaml").is_file()   # the other fio runs still make the card


def test_a_profile_summary_with_a_bad_time_is_named(tmp_path):
    from simcluster.errors import TraceFormatError
    from simcluster.training.workload import _profiles

    rel = "ddp-step/resnet50-224-b64/profiler-traces/profile-summary.json"
    doc = json.loads((ROOT / "calibration" / "h200x4-collect-2026-11-22" / rel).read_text())
    first = next(iter(doc))
    doc[first][0]["overlap_s"] = -1
    path = tmp_path / "profiler-traces" / "profile-summary.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match=re.escape(f"profile-summary.json: {first}[0].overlap_s: expected a number from 0 to 3600 s, got -1")):
        _profiles(tmp_path)


@pytest.mark.parametrize("old,new,expect", [("47.8 MB/sec", "0 MB/sec", "bw = '0 MB/sec': not a measurement"),
                                            ("47.8 MB/sec", "1e308 GB/sec", "not a measurement (expected 1 to 1e+15 B/s)"),
                                            ("8.21 us", "1e-300 us", "latency = '1e-300 us': not a measurement")])
def test_a_qperf_measurement_out_of_range_is_refused_at_its_line(tmp_path, capsys, old, new, expect):
    path = tmp_path / "q.txt"
    path.write_text((ROOT / "calibration" / "local-2026-11-22" / "qperf" / "qperf-1" / "stdout.txt").read_text().replace(old, new))
    err = _one_line(capsys, ["validate", str(path), "--scenario", str(ROOT / "scenarios" / "local-lab-qperf.yaml")])
    assert f"{path}:" in err and expect in err


@pytest.mark.parametrize("value,why", [(-0.5, "step_times_s[3]: expected a number > 0 to 3600 s, got -0.5"),
                                       (0, "step_times_s[3]: expected a number > 0 to 3600 s, got 0"),
                                       ('"x"', "step_times_s[3]: expected a number, got 'x'"),
                                       ("null", "step_times_s[3]: expected a number, got None")])
def test_a_ddp_step_record_with_a_bad_step_time_is_named_at_its_line_and_key(tmp_path, value, why):
    from simcluster.errors import TraceFormatError
    from simcluster.training.workload import read_runs

    lines = (ROOT / "calibration" / "h200x4-collect-2026-11-22" / "ddp-step/resnet18-32-b128/stdout.txt").read_text().splitlines()
    doc = json.loads(lines[1])
    doc["step_times_s"][3] = "@"
    lines[1] = json.dumps(doc).replace('"@"', str(value))
    path = tmp_path / "stdout.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError, match=re.escape(f"{path}:2: {why}")):
        read_runs(path)


def test_a_ddp_step_record_with_a_negative_cpu_time_is_refused_at_its_key(tmp_path):
    """cpu_time_per_step_s is read back into answers: a negative one (found by the reader fuzz, seed 46) is refused at
    its line and key instead of reaching an answer."""
    from simcluster.errors import TraceFormatError
    from simcluster.training.workload import read_runs

    lines = (ROOT / "calibration" / "h200x4-collect-2026-11-22" / "ddp-step/resnet18-32-b128/stdout.txt").read_text().splitlines()
    doc = json.loads(lines[0])
    doc["cpu_time_per_step_s"] = -1
    lines[0] = json.dumps(doc)
    path = tmp_path / "stdout.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError, match=re.escape(f"{path}:1: cpu_time_per_step_s: expected a number from 0 to 3600 s")):
        read_runs(path)
