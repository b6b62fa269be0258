"""Issue 45: NCCL's logs as parsed are declared (simcluster/traces/nccl_documents.py): an nccl-tests run whose sizes
leave the sweep's order, or whose printed bandwidths are not size / time (x the bus factor), an NCCL_DEBUG=INFO call
on no channel, a tuning table with an absurd latency: one line FILE:LINE: KEY at the log line; every log of the
repository still reads."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster.errors import TraceFormatError
from simcluster.traces import nccl_info, nccl_tests, nccl_tuning

ROOT = Path(__file__).resolve().parents[1]
TEXT = ROOT / "calibration/h200x2-graph2-2026-11-22/nccl-tests/broadcast-r3/stdout.txt"
JSON = ROOT / "calibration/h200x2-nvlink-2026-11-22/nccl-tests/all_reduce_J.json"
TUNING = ROOT / "calibration/h200x2-graph2-2026-11-22/nccl-tests/all_reduce-tuning/stdout.txt"
INFO = ROOT / "calibration/published/nccl-decisions-h100x8-nccl1595/log.txt"


def _data_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if line.strip() and line.strip()[0].isdigit()]


def _refused(path: Path, parse=nccl_tests.parse, **kw) -> str:
    with pytest.raises(TraceFormatError) as err:
        parse(path, **kw)
    text = err.value.one_line()
    assert "\n" not in text and str(path) in text
    return text


def test_a_row_out_of_the_sweeps_order_is_refused_at_its_line(tmp_path):
    lines = TEXT.read_text().splitlines()
    data = _data_lines(lines)
    lines[data[5]], lines[data[6]] = lines[data[6]], lines[data[5]]
    path = tmp_path / "swapped.txt"
    path.write_text("\n".join(lines) + "\n")
    assert f"swapped.txt:{data[6] + 1}: rows[6].size_bytes: 256 B breaks the sweep's order" in _refused(path)


def test_a_repeated_sweep_reads_as_nccl_tests_run_cycles_print_it(tmp_path):
    lines = TEXT.read_text().splitlines()
    data = _data_lines(lines)
    path = tmp_path / "cycles.txt"
    path.write_text("\n".join(lines[: data[-1] + 1] + [lines[i] for i in data] + lines[data[-1] + 1:]) + "\n")
    assert len(nccl_tests.parse(path).rows) == 2 * len(data)
    lines_cut = lines[: data[-1] + 1] + [lines[i] for i in data[3:]] + lines[data[-1] + 1:]
    path.write_text("\n".join(lines_cut) + "\n")
    assert "breaks the sweep's order" in _refused(path)


@pytest.mark.parametrize("column,value,key", [(6, "99.00", "algbw_Bps: 99 GB/s is not size / time"),
                                              (7, "200.00", "busbw_Bps: 200 GB/s is not algbw x 1"),
                                              (11, "1.50", "busbw_inplace_Bps: 1.5 GB/s is not algbw x 1")])
def test_a_printed_bandwidth_that_is_not_size_over_time_is_refused(tmp_path, column, value, key):
    lines = TEXT.read_text().splitlines()
    row = _data_lines(lines)[20]
    tokens = lines[row].split()
    tokens[column] = value
    lines[row] = "  ".join(tokens)
    path = tmp_path / "edited.txt"
    path.write_text("\n".join(lines) + "\n")
    assert f"edited.txt:{row + 1}: rows[20].{key}" in _refused(path)


def test_a_json_result_with_a_negative_or_inconsistent_bandwidth_is_refused_at_its_index(tmp_path):
    doc = json.loads(JSON.read_text())
    doc["results"][3]["out_of_place"]["bus_bw"] = -1.0
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    assert "r.json: results[3]: rows[3].busbw_Bps: expected a number from 0 to 1e+15 B/s" in _refused(path)
    doc = json.loads(JSON.read_text())
    doc["results"][4]["out_of_place"]["alg_bw"] *= 3
    path.write_text(json.dumps(doc))
    assert "r.json: results[4]: rows[4].algbw_Bps:" in _refused(path)


def test_an_info_call_on_no_channel_is_refused_at_its_line(tmp_path):
    lines = TUNING.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if "Bytes -> Algo" in line)
    lines[n] = lines[n].replace("channel{Lo..Hi}={0..0}", "channel{Lo..Hi}={5..2}")
    path = tmp_path / "calls.txt"
    path.write_text("\n".join(lines) + "\n")
    assert "calls[0]: 8 bytes on -2 channels (bytes >= 0; channel{Lo..Hi} with Hi >= Lo)" in _refused(path, nccl_tuning.parse)
    posted = tmp_path / "posted.txt"
    posted.write_text("\n".join(line for line in lines if "NCCL INFO" in line and "Bytes -> Algo" in line) + "\n")
    assert "posted.txt:1: calls[0].channels: expected an integer from 1 to 4,096, got -2" in \
        _refused(posted, nccl_info.parse)


def test_a_tuning_table_latency_of_seconds_is_refused(tmp_path):
    lines = TUNING.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if "NCCL INFO     AllReduce |" in line)
    cells = lines[n].split("|")
    cells[1] = cells[1].replace(cells[1].split("/")[0].strip(), "4000000.0", 1)
    lines[n] = "|".join(cells)
    path = tmp_path / "tuning.txt"
    path.write_text("\n".join(lines) + "\n")
    assert "table.Tree.all_reduce.LL: a latency of 4e+06 us" in _refused(path, nccl_tuning.parse)


@pytest.mark.parametrize("cell", ["   0.\x1f ", " 1..2"])
def test_a_tuning_cell_that_is_no_number_is_refused_at_its_line(tmp_path, cell):
    """Found by session 29's long fuzz run (seed 61): the row's pattern takes a control character for a blank and
    '1..2' for a number, and float() refused them as a ValueError traceback."""
    lines = TUNING.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if "NCCL INFO     AllReduce |" in line)
    cells = lines[n].split("|")
    cells[1] = f"{cells[1].split('/')[0]}/{cell}"          # the bandwidth, as the fuzz case had it
    lines[n] = "|".join(cells)
    path = tmp_path / "tuning.txt"
    path.write_text("\n".join(lines) + "\n")
    assert f"tuning.txt: line {n + 1}: tuning cell" in _refused(path, nccl_tuning.parse)


def test_every_nccl_log_of_the_repository_fits_its_declaration():
    texts = sorted((ROOT / "calibration").glob("**/nccl-tests/**/stdout.txt"))
    assert len(texts) > 100
    for path in texts:
        if "Avg bus bandwidth" in path.read_text(errors="replace"):
            nccl_tests.parse(path)
    for path in sorted((ROOT / "calibration/published").glob("nccl-decisions-*/log.txt")):
        nccl_info.parse(path, op="all_reduce")
    nccl_tuning.parse(TUNING)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=st.integers(0, 30), column=st.integers(0, 12), value=st.sampled_from(
    ["0", "-1", "1e308", "nan", "inf", "0.00", "12.5", "9999999", "N/A", "1e-9"]))
def test_a_mutated_number_reads_consistent_or_is_refused_in_one_line(tmp_path_factory, row, column, value):
    lines = TEXT.read_text().splitlines()
    index = _data_lines(lines)[row]
    tokens = lines[index].split()
    tokens[column] = value
    lines[index] = "  ".join(tokens)
    path = tmp_path_factory.mktemp("m") / "m.txt"
    path.write_text("\n".join(lines) + "\n")
    try:
        trace = nccl_tests.parse(path)
    except TraceFormatError as exc:
        assert "\n" not in exc.one_line()
        return
    sizes = [r.size_bytes for r in trace.rows]
    assert sizes == sorted(sizes) and all(r.busbw_Bps >= 0 and r.time_s >= 0 for r in trace.rows)


def test_a_time_too_small_to_print_is_no_zero_division(tmp_path):
    """Found by the branch's long fuzz run (seed 53): a JSON time of 1e-170 us squared to 0 in the rate check."""
    doc = json.loads(JSON.read_text())
    doc["results"][2]["out_of_place"]["time"] = 1e-170
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(doc))
    trace = nccl_tests.parse(path)     # nothing to compare a rate with below a nanosecond: read as printed
    assert trace.rows[2].time_s < 1e-170
