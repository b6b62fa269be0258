"""The NCCL-primitives collective model on 2 x H200: tuning-log parsing, NCCL's protocol choice,
median of rounds, card round trip, and held-out fidelity that must not regress.

Bounds are the measured mean |error| (sizes >= 1 KiB, median of rounds) plus a small margin; they
are NOT all within the product target of 5% (reduce_scatter and reduce miss it, see
docs/models/collectives.md). Run `python bench/collective_fidelity.py` for the table.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import collective_fidelity as cf  # noqa: E402

from simcluster.cards import collective_params, collective_params_yaml  # noqa: E402
from simcluster.collectives.primitives import gpu_time, nccl_choice  # noqa: E402
from simcluster.errors import TraceFormatError  # noqa: E402
from simcluster.traces import nccl_tests, nccl_tuning  # noqa: E402

# op -> (bound for CUDA-graph timing, bound for host-launched timing); measured in comments
BOUNDS = {
    "all_reduce": (5.5, 10.0),       # 4.91 (in sample), 9.10
    "all_gather": (5.5, 17.0),       # 4.85, 15.85
    "reduce_scatter": (12.5, 23.0),  # 11.45, 21.70
    "broadcast": (4.0, 5.5),         # 3.52, 4.82
    "reduce": (9.0, 11.5),           # 8.33, 10.48
    "sendrecv": (6.5, 9.0),          # 5.94, 8.33
    "alltoall": (6.5, 15.0),         # 5.59, 14.12
}


@pytest.fixture(scope="module")
def cards():
    return cf.fitted_cards()


@pytest.mark.parametrize("op", list(BOUNDS))
def test_held_out_error_does_not_regress(op, cards):
    primitives, _ = cards
    graph_bound, host_bound = BOUNDS[op]
    assert cf.mean_error(primitives, cf.GRAPH, op) <= graph_bound
    assert cf.mean_error(primitives, cf.HOSTED, op) <= host_bound


def test_primitives_beat_the_chunked_model_on_every_held_out_op(cards):
    primitives, chunked = cards
    for op in BOUNDS:
        if op != "all_reduce":
            assert cf.mean_error(primitives, cf.GRAPH, op) < cf.mean_error(chunked, cf.GRAPH, op)


def test_tuning_log_table_and_channels():
    tuning = nccl_tuning.parse(cf.HOSTED / "all_reduce-tuning" / "stdout.txt")
    assert tuning.channels == 24
    ring = tuning.ring_table()
    assert ring["all_reduce"]["Simple"] == pytest.approx((15.2e-6, 360e9))
    assert ring["all_gather"]["LL"] == pytest.approx((7.2e-6, 282e9))
    assert {c[3] for c in tuning.calls} == {"LL", "Simple"}


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"])
def test_model_picks_the_protocol_nccl_logged(op, cards):
    """The AR log's table decides; each op's own tuning run (not used by the fit) says what NCCL ran.
    NCCL logs all_gather / reduce_scatter calls by their per-rank bytes (nccl-tests' size / ranks)."""
    primitives, _ = cards
    per_rank = 2 if op in ("all_gather", "reduce_scatter") else 1
    logged = {b * per_rank: proto
              for f, b, _, proto, _ in nccl_tuning.parse(cf.HOSTED / f"{op}-tuning" / "stdout.txt").calls}
    assert logged
    for size, proto in logged.items():
        assert nccl_choice(primitives, op, size) == proto, size


def test_tuning_parser_rejects_a_log_without_a_table(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_text((cf.GRAPH / "all_reduce-r1" / "stdout.txt").read_text())
    with pytest.raises(TraceFormatError, match="no NCCL tuning table"):
        nccl_tuning.parse(path)


def test_median_trace_takes_the_median_per_size():
    traces = cf.rounds(cf.HOSTED, "reduce")
    med = nccl_tests.median_trace(traces)
    size = 4096
    times = sorted(r.time_s for t in traces for r in t.rows if r.size_bytes == size)
    row = next(r for r in med.rows if r.size_bytes == size)
    assert row.time_s == pytest.approx((times[1] + times[2]) / 2)
    assert len(med.rows) == len(traces[0].rows)


def test_graph_runs_are_flagged_and_host_floor_applies_only_to_host_launched(cards):
    primitives, _ = cards
    assert nccl_tests.parse(cf.GRAPH / "all_reduce-r1" / "stdout.txt").cuda_graph_launches == 5
    assert nccl_tests.parse(cf.HOSTED / "all_reduce-r1" / "stdout.txt").cuda_graph_launches == 0
    from simcluster.collectives.model import predict

    gpu = predict(primitives, "all_reduce", 1024, 2).time_s
    host = predict(primitives, "all_reduce", 1024, 2, host_launch=True).time_s
    assert gpu < primitives.host_floor_s == host


def test_card_round_trip(cards):
    primitives, _ = cards
    again = collective_params({"params": collective_params_yaml(primitives)}, "card")
    for op in BOUNDS:
        for size in (1024, 2**20, 2**30):
            assert gpu_time(again, op, size, 2)[0] == pytest.approx(gpu_time(primitives, op, size, 2)[0], rel=1e-3)


def test_latency_grows_by_one_ll_step_per_primitive(cards):
    """all_reduce (3 primitives at 2 ranks) - all_gather (2) = one LL step; all_gather - broadcast (1) = one."""
    primitives, _ = cards
    t = {op: gpu_time(primitives, op, 64, 2)[0] for op in ("all_reduce", "all_gather", "broadcast")}
    assert t["all_reduce"] - t["all_gather"] == pytest.approx(0.6e-6, rel=0.05)
    assert t["all_gather"] - t["broadcast"] == pytest.approx(0.6e-6, rel=0.05)


def test_des_engine_with_a_primitives_card_is_a_one_line_error(tmp_path):
    import subprocess

    card = Path(__file__).resolve().parents[1] / "models" / "collective" / "h200x2-primitives.yaml"
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\nmachine:\n  card: {card}\n  gpus_per_node: 2\n  nodes: 1\njobs:\n"
                        "  - kind: collective_sweep\n    op: all_reduce\n    ranks: 2\n    engine: des\n")
    done = subprocess.run([sys.executable, "-m", "simcluster", "run", str(scenario)], capture_output=True, text=True)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "nccl-primitives" in done.stderr
    ok = subprocess.run([sys.executable, "-m", "simcluster", "run", str(scenario).replace("s.yaml", "t.yaml")],
                        capture_output=True, text=True)
    assert ok.returncode == 2  # a missing file is an error too, not a traceback
    scenario.with_name("t.yaml").write_text(scenario.read_text().replace("engine: des", "engine: analytic"))
    assert subprocess.run([sys.executable, "-m", "simcluster", "run", str(scenario.with_name("t.yaml"))],
                          capture_output=True, text=True).returncode == 0


def test_runner_plans_rounds_graph_and_tuning_runs(tmp_path):
    from simcluster.runner import plans

    bins = tmp_path / "bin"
    bins.mkdir()
    for op in ("all_reduce", "broadcast"):
        (bins / f"{op}_perf").write_text("")
    options = plans.Options(nccl_tests=str(bins), ops=("all_reduce", "broadcast"), gpus=2, nccl_repeat=2,
                            nccl_graph=5, nccl_iters=20, nccl_warmup=3, nccl_tuning=True)
    steps = plans.nccl_steps(options, tmp_path)
    assert [s.run_id for s in steps] == ["all_reduce-r1", "broadcast-r1", "all_reduce-r2", "broadcast-r2",
                                         "all_reduce-tuning", "broadcast-tuning"]
    timed = steps[0].argv
    assert timed[timed.index("-G") + 1] == "5" and timed[timed.index("-n") + 1] == "20"
    tuning = steps[-1]
    assert tuning.env["NCCL_DEBUG_SUBSYS"] == "INIT,TUNING" and "-G" not in tuning.argv
    assert tuning.meta["role"] == "tuning" and steps[0].meta["round"] == 1


def test_fabric_collectives_run_on_a_primitives_card(cards):
    """The fabric layer reads base and step latency through the shared accessors of either card."""
    from simcluster.build import build_cluster
    from simcluster.collectives.fabric import predict_fabric
    from simcluster.scenario import load_variants

    primitives, chunked = cards
    root = Path(__file__).resolve().parents[1]
    machine = load_variants(root / "scenarios" / "whatif" / "roce-vs-tcp.yaml")[0][1].machine
    times = [predict_fabric(build_cluster(machine, intra), "all_reduce", 2**28).time_s for intra in (primitives, chunked)]
    assert all(t > 0 for t in times)
    assert times[0] == pytest.approx(times[1], rel=0.3)  # the network bounds both; NVLink models differ
