"""The nccl-tests parser on real logs and on bad input."""

import pytest
from conftest import FIXTURES, H200, OPS, ROOT, SEED002

from simcluster.collectives.schedule import bus_factor
from simcluster.errors import TraceFormatError
from simcluster.traces import nccl_tests


@pytest.mark.parametrize("op", OPS)
def test_real_single_process_logs(op, h200_log):
    trace = nccl_tests.parse(h200_log(op))
    assert trace.op == op and trace.nranks == 2 and trace.nodes == 1
    assert trace.nccl_version == "2.28.3" and trace.tool_version == "2.19.6"
    assert trace.complete and len(trace.rows) >= 28
    assert trace.rows[-1].size_bytes == 8 * 2**30


def test_seed002_mpi_two_nodes():
    trace = nccl_tests.parse(SEED002)
    assert (trace.op, trace.nranks, trace.ranks_per_node, trace.nodes) == ("all_reduce", 16, 8, 2)
    assert [round(r.busbw_Bps / 1e9, 2) for r in trace.rows] == [446.28, 456.22, 461.83, 463.90, 464.57]
    assert trace.rows[0].time_s == pytest.approx(4511.2e-6)
    assert "all_reduce_perf -b 1G -e 16G -f 2" in trace.command


def test_info_lines_and_per_iteration_and_timestamp_columns():
    trace = nccl_tests.parse(H200 / "nccl-tests" / "all_reduce_debug_I_S.txt")
    assert len(trace.rows) == 9 and trace.rows[0].time_s == pytest.approx(18.95e-6)
    assert trace.rows[-1].time_inplace_s == pytest.approx(18.26e-6)


TUNING_LOG = ROOT / "calibration" / "h200x2-rounds-2026-11-22" / "nccl-tests" / "all_reduce-tuning" / "stdout.txt"


def test_data_lines_cut_by_nccl_log_messages_are_put_back_together():
    # NCCL_DEBUG=INFO prints between nccl-tests' partial writes: '8 2 float sum -1vm:2062:2080 [1] NCCL INFO ...'
    trace = nccl_tests.parse(TUNING_LOG)
    timing = nccl_tests.parse(TUNING_LOG.parents[1] / "all_reduce-r1" / "stdout.txt")
    assert [r.size_bytes for r in trace.rows] == [r.size_bytes for r in timing.rows] and trace.complete
    first = trace.rows[0]
    assert (first.size_bytes, first.time_s, first.time_inplace_s) == (8, pytest.approx(265.48e-6), pytest.approx(226.50e-6))
    assert TUNING_LOG.read_text().splitlines()[first.line - 1].split()[:5] == ["8", "2", "float", "sum", "-1vm:2062:2080"]


def test_a_log_cut_inside_a_spliced_data_line_keeps_the_rows_before_it(tmp_path):
    lines = TUNING_LOG.read_text().splitlines()
    cut_at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("16 ") and "NCCL INFO" in line)
    path = tmp_path / "cut.txt"
    path.write_text("\n".join(lines[: cut_at + 2]))
    trace = nccl_tests.parse(path)
    assert [r.size_bytes for r in trace.rows] == [8] and not trace.complete
    assert any("truncated" in w for w in trace.warnings)


def _nccl_tests_logs():
    for path in sorted((ROOT / "calibration").rglob("*")):
        if path.suffix in (".txt", "") and path.is_file() and "Collective test starting" in path.read_text(errors="replace")[:4000]:
            yield path


def test_every_bundled_log_parses_and_its_bus_bandwidth_is_nccl_tests_formula():
    """Every nccl-tests log in calibration/ (343 of them, tuning logs with NCCL INFO spliced in included): busbw
    = size / time x the op's bus factor, within the printed rounding."""
    logs, checked = list(_nccl_tests_logs()), 0
    assert len(logs) >= 300
    for path in logs:
        trace = nccl_tests.parse(path)
        factor = bus_factor(trace.op, trace.nranks)
        for row in trace.rows:
            if row.time_s > 0 and row.busbw_Bps > 0:
                expected = row.size_bytes / row.time_s * factor
                assert row.busbw_Bps == pytest.approx(expected, rel=0.01, abs=0.011e9), (path, row.line)
                checked += 1
    assert checked > 4000


def test_json_output_matches_text():
    js = nccl_tests.parse(H200 / "nccl-tests" / "all_reduce_J.json")
    assert js.op == "all_reduce" and js.nranks == 2 and js.nccl_version == "2.28.3"
    assert len(js.rows) == 13 and js.rows[0].size_bytes == 8


def test_na_in_wrong_column(tmp_path):
    text = (H200 / "torch-collectives" / "all_reduce.txt").read_text()
    trace = nccl_tests.parse(H200 / "torch-collectives" / "all_reduce.txt")
    assert "N/A" in text and trace.rows[0].wrong is None and trace.tool == "simcluster-torch"


def test_truncated_last_line_is_dropped_with_a_warning(tmp_path, h200_log):
    lines = h200_log("all_reduce").read_text().splitlines()
    table_end = next(i for i, line in enumerate(lines) if line.startswith("# Out of bounds"))
    cut = lines[: table_end - 1] + [lines[table_end - 1][:40]]
    path = tmp_path / "cut.txt"
    path.write_text("\n".join(cut))
    trace = nccl_tests.parse(path)
    assert len(trace.rows) == 30 and not trace.complete
    assert any("truncated" in w for w in trace.warnings)


def _error(path, op=None):
    with pytest.raises(TraceFormatError) as err:
        nccl_tests.parse(path, op=op)
    message = str(err.value)
    assert str(path) in message and "\n" not in message
    return message


def test_empty_file(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    assert "empty" in _error(tmp_path / "empty.txt")


def test_file_truncated_in_the_header(tmp_path, h200_log):
    path = tmp_path / "head.txt"
    path.write_text("\n".join(h200_log("all_reduce").read_text().splitlines()[:6]))
    assert "line 6" in _error(path)


def test_qperf_output_is_refused():
    assert "line" in _error(FIXTURES / "qperf_seed000.txt", op="all_reduce")


def test_garbage_in_the_table_names_the_line(tmp_path, h200_log):
    lines = h200_log("all_reduce").read_text().splitlines()
    lines.insert(15, "this is not a data line")
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines))
    assert "line 16" in _error(path)


def test_missing_file(tmp_path):
    _error(tmp_path / "nope.txt")
