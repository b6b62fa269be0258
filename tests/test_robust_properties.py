"""Issue 45, property-based: for any input, the JSON reader, the schema layer, the output check and the tool-output
parsers either answer with finite numbers or refuse with their one error type, never another exception."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster import output, strict
from simcluster import schema as S
from simcluster.errors import AnswerError, SimclusterError

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

numbers = st.one_of(st.integers(min_value=-10**40, max_value=10**40), st.floats(allow_nan=True, allow_infinity=True))
scalars = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=8))
documents = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                         max_leaves=30)


def _depth(doc) -> int:
    """Levels of lists and objects (a scalar is none)."""
    if isinstance(doc, dict):
        return 1 + max((_depth(v) for v in doc.values()), default=0)
    if isinstance(doc, list):
        return 1 + max((_depth(v) for v in doc), default=0)
    return 0


def _finite(doc) -> bool:
    if isinstance(doc, dict):
        return all(_finite(v) for v in doc.values())
    if isinstance(doc, list):
        return all(_finite(v) for v in doc)
    return not isinstance(doc, float) or math.isfinite(doc)


@FAST
@given(documents, st.integers(min_value=0, max_value=200))
def test_loads_json_answers_finite_and_shallow_or_refuses(doc, extra_depth):
    text = "[" * extra_depth + json.dumps(doc) + "]" * extra_depth     # json.dumps writes NaN / Infinity as given
    try:
        value = strict.loads_json(text)
    except json.JSONDecodeError:
        return
    assert _finite(value) and _depth(value) <= strict.MAX_DEPTH
    assert all(abs(n) < 10**20 for n in _ints(value))


def _ints(doc):
    if isinstance(doc, dict):
        doc = list(doc.values())
    if isinstance(doc, list):
        return [n for v in doc for n in _ints(v)]
    return [doc] if isinstance(doc, int) and not isinstance(doc, bool) else []


@FAST
@given(st.binary(max_size=200))
def test_loads_json_on_any_bytes_refuses_with_json_decode_error_only(data):
    try:
        strict.loads_json(data.decode("utf-8", errors="replace"))
    except json.JSONDecodeError:
        pass


@FAST
@given(documents)
def test_output_check_passes_only_what_json_can_write_strictly(doc):
    try:
        checked = output.check({"answer": doc}, "x")
    except AnswerError as exc:
        assert "\n" not in exc.one_line()
        return
    json.dumps(checked, allow_nan=False)     # nothing non-finite got past it


RECORD = S.Record({"t_s": S.ListOf(S.Seconds(), min_len=1), "n": S.Count()}, {"name": S.Text(20)})


@FAST
@given(documents)
def test_a_schema_check_fits_or_is_one_line(doc):
    try:
        RECORD.check(doc, "f.json:1")
    except SimclusterError as exc:
        assert exc.one_line().startswith("f.json:1: ") and "\n" not in exc.one_line()
        return
    assert all(0 < t <= 86400 for t in doc["t_s"]) and 1 <= doc["n"] <= 2**31


@pytest.mark.parametrize("module", ["nccl_tests", "qperf", "fio", "gpu_micro", "perf_stat"])
@FAST
@given(lines=st.lists(st.one_of(st.text(max_size=40), st.sampled_from(
    ["#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong", "tcp_bw:", "    bw = 1.5 GB/sec",
     "    latency = 0 us", "1048576 262144 float sum -1 12.5 83.9 147 0 12.1 86.6 152 0", '{"fio version": "fio-3.36", "jobs": [',
     "nan", "1e999", "-1", '{"sections": {}}'])), max_size=12))
def test_a_tool_output_parser_answers_finite_rows_or_refuses(tmp_path_factory, module, lines):
    import importlib

    from simcluster.errors import TraceFormatError

    parser = importlib.import_module(f"simcluster.traces.{module}")
    path = tmp_path_factory.mktemp("p") / "out.txt"
    path.write_text("\n".join(lines), errors="replace")
    try:
        trace = parser.parse(path)
    except (TraceFormatError, SimclusterError):
        return
    import dataclasses

    output.check(trace.as_json() if hasattr(trace, "as_json") else dataclasses.asdict(trace), str(path))
