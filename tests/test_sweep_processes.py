"""Real processes: a sweep killed with kill -9 mid-way and started again (nothing lost, nothing twice), and a sweep
through a Dask scheduler and two workers started as separate processes on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

import pyarrow.parquet as pq
import pytest
from test_sweep_spec import collective_sweep

from simcluster.sweep import store

TIMEOUT_S = 60


def _sweep_cmd(scenario, out, *extra):
    return [sys.executable, "-m", "simcluster", "sweep", str(scenario), "-o", str(out), *extra]


def _raw_hashes(folder) -> list[str]:
    return [h for part in store.parts(folder) for h in pq.read_table(part, columns=["point_hash"]).column(0).to_pylist()]


@pytest.mark.slow
def test_kill_minus_9_mid_sweep_then_resume(tmp_path):
    scenario = collective_sweep(tmp_path, nodes=tuple(range(2, 302)), per_node=(1, 2))
    out = tmp_path / "results"
    proc = subprocess.Popen(_sweep_cmd(scenario, out, "--workers", "0", "--flush-rows", "10", "--chunk", "1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + TIMEOUT_S
    try:
        while len(store.parts(out)) < 3 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=TIMEOUT_S)
    assert proc.returncode == -signal.SIGKILL, "the sweep finished before it could be killed"
    before = _raw_hashes(out)
    assert 0 < len(before) < 600 and len(set(before)) == len(before)
    again = subprocess.run(_sweep_cmd(scenario, out, "--workers", "0", "--json"), capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    assert again.returncode == 0, again.stderr      # the dead process's lock was stale and taken over
    import json

    summary = json.loads(again.stdout)
    assert summary["already"] == len(before) and summary["ran"] == 600 - len(before)   # only the missing points ran
    after = _raw_hashes(out)
    assert len(after) == 600 and len(set(after)) == 600 and set(before) <= set(after)   # nothing lost, nothing twice
    assert Counter(r["status"] for r in store.rows(out)) == {"ok": 600}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_sweep_through_a_separate_dask_scheduler_and_two_workers(tmp_path):
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                               str(port), "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)]
    try:
        for i in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                                           "--no-nanny", "--no-dashboard", "--name", f"w{i}"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path))
        from dask.distributed import Client

        with Client(address, timeout=TIMEOUT_S) as client:
            client.wait_for_workers(2, timeout=TIMEOUT_S)
        scenario = collective_sweep(tmp_path, nodes=tuple(range(2, 12)), per_node=(1, 2))
        out = tmp_path / "results"
        done = subprocess.run(_sweep_cmd(scenario, out, "--scheduler", address, "--chunk", "2"), capture_output=True,
                              text=True, timeout=TIMEOUT_S)
        assert done.returncode == 0, done.stderr
        assert "20 points: 0 already stored, 20 ran (20 ok" in done.stdout
        rows = store.rows(out)
        assert len(rows) == 20 and all(r["status"] == "ok" for r in rows)
        assert "sweep [" in done.stderr              # the progress line
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
