"""The results store: rows flattened from job results, Parquet parts, dedupe by hash, resume runs only what is missing."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest
from test_sweep_spec import collective_sweep

from simcluster.build import run_scenario
from simcluster.sweep import run, spec, store


def test_flatten():
    doc = {"jobs": [{"a": 1, "b": {"c": 2.5, "d": True}, "rows": [{"t": 1}, {"t": 2}], "sizes": [1, 2], "s": "x", "n": None}]}
    assert store.flatten(doc) == {"jobs[0].a": 1.0, "jobs[0].b.c": 2.5, "jobs[0].b.d": True, "jobs[0].rows[0].t": 1.0,
                                  "jobs[0].rows[1].t": 2.0, "jobs[0].sizes": "[1, 2]", "jobs[0].s": "x", "jobs[0].n": None}


def test_sweep_in_process_stores_every_point_once_and_resumes(tmp_path):
    sw = spec.read_sweep(collective_sweep(tmp_path, nodes=(2, 3, 0), per_node=(1, 2)))
    out = tmp_path / "results"
    first = run.run(sw, out, workers=0, flush_rows=2, progress=io.StringIO())
    assert (first.points, first.already, first.ok, first.invalid, first.failed) == (6, 0, 4, 2, 0)
    assert first.parts == 2                          # written as points finished (2 rows a part), not at the end only
    table = pq.read_table(out)                       # readable as it is
    assert table.num_rows == 6 and "jobs[0].rows[0].time_s" in table.column_names
    rows = store.rows(out)
    assert sorted(r["status"] for r in rows) == ["invalid"] * 2 + ["ok"] * 4
    ok = [r for r in rows if r["status"] == "ok"]
    # every stored number is the model's own prediction for that point
    for r in ok:
        point = next(p for p in spec.points(sw) if p.hash == r["point_hash"])
        direct = run_scenario(point.scenario).jobs[0].predictions[0].time_s
        assert r["jobs[0].rows[0].time_s"] == direct
        assert r["machine.gpus"] == r["param.machine.nodes"] * 4
        assert r["simcluster_version"]
    second = run.run(sw, out, workers=0, progress=io.StringIO())
    assert (second.already, second.ran, second.parts) == (6, 0, 0)
    assert store.read_manifest(out)["points"] == 6


def test_points_of_other_code_are_recomputed_and_left_out_of_the_report(tmp_path, monkeypatch):
    """A stored point names the code that computed it: after a model change the same sweep recomputes every point, and
    the folder's report shows only the current code's rows (the earlier ones stay stored)."""
    import simcluster
    from simcluster.report.plan import store_report

    sw = spec.read_sweep(collective_sweep(tmp_path, nodes=(2, 3), per_node=(1, 2)))
    out = tmp_path / "results"
    first = run.run(sw, out, workers=0, progress=io.StringIO())
    assert (first.already, first.ran) == (0, 4)
    real = simcluster.code_digest()
    monkeypatch.setitem(simcluster._DIGEST, "code", "0123456789abcdef")
    again = run.run(spec.read_sweep(sw.path), out, workers=0, progress=io.StringIO())
    assert (again.already, again.ran) == (0, 4)
    assert len(store.rows(out)) == 8
    assert sorted(r["simcluster_code"] for r in store.rows(out)) == sorted([real] * 4 + ["0123456789abcdef"] * 4)
    docs = store_report(out, "figures")
    assert any("4 stored points computed by other simcluster code left out" in str(v) for v in docs.values())


def test_a_worker_with_other_code_fails_its_points_instead_of_storing_them(tmp_path):
    sw = spec.read_sweep(collective_sweep(tmp_path, nodes=(2,), per_node=(1,)))
    items = [(p.hash, {}, p.scenario) for p in spec.points(sw) if p.scenario is not None]
    rows = run.evaluate(items, "0123456789abcdef")          # the driver named the points with other code
    assert rows and all(r["status"] == "failed" and "other simcluster code" in r["error"] and run.WORKER_CODE in r for r in rows)
    assert all(r["status"] == "ok" and run.WORKER_CODE not in r for r in run.evaluate(items))


def test_read_dedupes_and_ignores_unfinished_parts(tmp_path):
    types = {"param.x": "int"}
    store.write_part(tmp_path, [{"point_hash": "a", "status": "ok", "param.x": 1, "jobs[0].t": 1.0}], types, 0)
    store.write_part(tmp_path, [{"point_hash": "a", "status": "ok", "param.x": 1, "jobs[0].t": 1.0},
                                {"point_hash": "b", "status": "invalid", "param.x": 2, "error": "no"}], types, 1)
    (tmp_path / ".part-x.parquet.123.tmp").write_bytes(b"half a file")    # what kill -9 during a write leaves
    table = store.read(tmp_path)
    assert sorted(table.column("point_hash").to_pylist()) == ["a", "b"]
    assert store.stored_hashes(tmp_path) == {"a", "b"}
    (tmp_path / "part-zzz.parquet").write_text("not parquet")
    with pytest.raises(store.StoreError, match="not a Parquet part"):
        store.read(tmp_path)


def test_missing_results_folder_is_one_line(tmp_path):
    with pytest.raises(store.StoreError, match="no such results folder"):
        store.read(tmp_path / "nope")
    with pytest.raises(store.StoreError, match="no results"):
        store.read(tmp_path)


def test_pandas_and_duckdb_read_the_folder_as_it_is(tmp_path):
    pd = pytest.importorskip("pandas")
    duckdb = pytest.importorskip("duckdb")
    sw = spec.read_sweep(collective_sweep(tmp_path, nodes=(2, 3, 0), per_node=(1, 2)))
    run.run(sw, tmp_path / "r", workers=0, flush_rows=2, progress=io.StringIO())
    df = pd.read_parquet(tmp_path / "r")
    assert len(df) == 6 and df["jobs[0].rows[0].time_s"].notna().sum() == 4
    n, distinct, ok = duckdb.sql(f"SELECT count(*), count(DISTINCT point_hash), count(*) FILTER (WHERE status = 'ok') "
                                 f"FROM read_parquet('{tmp_path / 'r'}/*.parquet', union_by_name=true)").fetchall()[0]
    assert (n, distinct, ok) == (6, 6, 4)
