"""Issue 45: nothing non-finite leaves. simcluster.output checks every number printed or written (JSON, cards,
sweep rows, the documents text reports are rendered from): NaN, inf and negative quantities become one line."""

import math

import pytest
import yaml

from simcluster import output
from simcluster.card_document import dump_card
from simcluster.cli import main
from simcluster.errors import AnswerError


@pytest.mark.parametrize("doc,where", [
    ({"a": {"time_s": math.nan}}, "a.time_s = nan"), ({"rows": [{"busbw_Bps": 1.0}, {"busbw_Bps": -2.0}]}, "rows[1].busbw_Bps = -2"),
    ([{"cost_usd": math.inf}], "[0].cost_usd = inf"), ({"host": {"cores": -1}}, "host.cores = -1"),
    ({"x": [1.0, [2.0, -math.inf]]}, "x[1][1] = -inf")])
def test_check_names_the_first_bad_key(doc, where):
    with pytest.raises(AnswerError, match=r"in\.yaml: the answer would hold " + where.replace("[", r"\[").replace("]", r"\]")):
        output.check(doc, "in.yaml")


def test_check_passes_signed_numbers_that_are_not_quantities():
    doc = {"error_pct": -12.5, "delta": -1, "time_s": 0.0, "name": "nan", "ok": True, "rows": [{"size_B": 8}]}
    assert output.check(doc, "x") is doc
    assert output.dumps({"a": 1.5}, "x") == '{"a": 1.5}'


def test_a_card_with_nan_is_never_written():
    with pytest.raises(AnswerError, match="host.cores = nan"):
        dump_card({"kind": "nic", "name": "n", "host": {"cores": math.nan}})
    assert yaml.safe_load(dump_card({"kind": "nic", "name": "n", "host": {"cores": 4}}))["host"]["cores"] == 4


def test_a_nan_answer_is_one_line_naming_the_input(tmp_path, capsys, monkeypatch):
    from simcluster.storage import questions

    real = questions.simulate

    def nan_stall(*args, **kwargs):
        out, run = real(*args, **kwargs)
        return {**out, "storage_stall_per_step_s": math.nan}, run

    monkeypatch.setattr(questions, "simulate", nan_stall)
    from conftest import ROOT

    workload = str(ROOT / "scenarios" / "workloads" / "unet3d_h100.yaml")
    code = main(["storage", "simulate", "--workload", workload, "--nvme", str(ROOT / "models" / "nvme" / "micron-9400-pro-7.68tb.yaml"),
                 "--steps", "2", "--accelerators", "1"])
    captured = capsys.readouterr()
    assert code == 2 and "nan" not in captured.out
    assert captured.err.strip() == (f"simcluster: error: {workload}: the answer would hold storage_stall_per_step_s = nan: the inputs "
                                    "are outside what the model can answer (check the input's counts, sizes and rates)")


@pytest.mark.parametrize("values", [[2, math.inf], [2, math.nan], [{"a": -math.inf}]])
def test_a_sweep_value_that_is_not_finite_is_refused_at_its_key(tmp_path, values):
    from test_sweep_spec import collective_sweep

    from simcluster.errors import ScenarioError
    from simcluster.sweep import spec

    path = collective_sweep(tmp_path, extra={"sweep": {"keys": {"machine.nodes": values}}})
    with pytest.raises(ScenarioError, match=r"sweep.yaml:\d+: sweep.keys.machine.nodes\[\d\](\.a)?: not a finite number"):
        spec.read_sweep(path)


@pytest.mark.parametrize("value", ["0", "1e-300", "-5"])
def test_a_published_busbw_that_cannot_be_measured_is_refused_before_the_prediction(tmp_path, value):
    from conftest import ROOT

    from simcluster.errors import SimclusterError
    from simcluster.published import read_published
    from simcluster.reference.nccl import system_rows

    source = ROOT / "calibration" / "published" / "nccl-aws-p5en-x4.yaml"
    path = tmp_path / "calibration" / "published" / source.name
    path.parent.mkdir(parents=True)
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")      # the file names its scenario relative to itself
    path.write_text(source.read_text().replace("busbw_GBps: 364.87", f"busbw_GBps: {value}", 1))
    refusal = (r"nccl-aws-p5en-x4.yaml:\d+: runs\[0\].busbw_GBps: expected a quantity >= 0, got -5" if value == "-5" else
               rf"runs\[0\]: busbw_GBps '?{value}'?: expected a measured bandwidth > 0")   # a negative one: documents.PUBLISHED
    with pytest.raises(SimclusterError, match=refusal):
        system_rows(read_published(path, "published-nccl-run"))


@pytest.mark.parametrize("value", [0.0, -5, 1e-300, "x"])
def test_a_published_llm_measurement_must_be_a_positive_number(value):
    from simcluster.errors import SimclusterError
    from simcluster.reference.llm import _measured

    with pytest.raises(SimclusterError, match="measured.tokens_per_s: expected a number > 0"):
        _measured({"tokens_per_s": value}, "tokens_per_s")
    assert _measured({"tokens_per_s": 2.5e6}, "tokens_per_s") == 2.5e6


def test_a_report_leaves_out_stored_rows_with_nan_and_says_so(tmp_path):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from test_sweep_spec import collective_sweep

    from simcluster.report.plan import store_report
    from simcluster.sweep import run, spec, store

    run.run(spec.read_sweep(collective_sweep(tmp_path, nodes=(2, 4), per_node=(1,))), tmp_path / "res", workers=0,
            progress=io.StringIO())
    rows = store.rows(tmp_path / "res")
    bad = {**rows[0], "point_hash": "f" * 16, "jobs[0].rows[0].busbw_Bps": math.nan}
    pq.write_table(pa.Table.from_pylist([bad], schema=store.read(tmp_path / "res").schema),
                   tmp_path / "res" / store.parts(tmp_path / "res")[0].name.replace("part-", "part-9"))
    assert len(store.rows(tmp_path / "res")) == 3
    docs = store_report(tmp_path / "res", "figures")
    page = docs["report.html"]
    assert "1 stored points left out: a number that is not finite or is negative (first: jobs[0].rows[0].busbw_Bps = nan)" in page
    from test_plan_search import _Page

    parsed = _Page()
    parsed.feed(page)
    assert parsed.rows == 2          # the two good points drawn and tabled; the NaN row is not


@pytest.mark.parametrize("key,value", [("ranks: 32", "ranks: 32, nodes: .inf"), ("ranks: 32", "ranks: .nan")])
def test_a_published_run_with_an_infinite_count_is_one_line(tmp_path, key, value):
    from conftest import ROOT

    from simcluster.errors import SimclusterError
    from simcluster.published import read_published
    from simcluster.reference.nccl import system_rows

    source = ROOT / "calibration" / "published" / "nccl-aws-p5en-x4.yaml"
    path = tmp_path / "calibration" / "published" / source.name
    path.parent.mkdir(parents=True)
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    path.write_text(source.read_text().replace(key, value, 1))
    with pytest.raises(SimclusterError, match=r"nccl-aws-p5en-x4.yaml:\d+: runs\[0\].(nodes|ranks): not a finite number"):
        system_rows(read_published(path, "published-nccl-run"))


@pytest.mark.parametrize("value", ["1e999", ".inf", "0", "x"])
def test_a_published_system_with_a_bad_gpu_count_is_one_line(tmp_path, value):
    from conftest import ROOT

    from simcluster.errors import SimclusterError
    from simcluster.published import read_published
    from simcluster.reference.nccl import system_rows

    source = ROOT / "calibration" / "published" / "nccl-aws-p5en-x4.yaml"
    path = tmp_path / source.name
    path.write_text(source.read_text().replace("gpus_per_node: 8", f"gpus_per_node: {value}", 1))
    with pytest.raises(SimclusterError, match="system.gpus_per_node: (expected a whole number from 1 to 1024|not a finite number)"):
        system_rows(read_published(path, "published-nccl-run"))
