"""The NCCL-primitives collective model on 2 and 4 x H200: tuning-log parsing, NCCL's protocol choice,
median of rounds, card round trip, and held-out fidelity that must not regress.

Bounds are the measured mean |error| (sizes >= 1 KiB, median of rounds) plus a small margin; they
are NOT all within the product target of 5% (see docs/models/collectives-findings.md). Run
`python studies/collective_fidelity.py` for the tables.
"""

import dataclasses
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))
import collective_fidelity as cf  # noqa: E402

from simcluster.cards import collective_params, collective_params_yaml  # noqa: E402
from simcluster.collectives.primitives import gpu_time, nccl_choice  # noqa: E402
from simcluster.errors import TraceFormatError  # noqa: E402
from simcluster.traces import nccl_tests, nccl_tuning  # noqa: E402

# op -> (bound for CUDA-graph timing, bound for host-launched timing); measured in comments
BOUNDS = {
    "all_reduce": (3.0, 6.5),        # 2.32 (in sample; the 3% target), 5.82
    "all_gather": (3.5, 14.5),       # 2.70, 13.49
    "reduce_scatter": (9.5, 20.0),   # 8.71, 18.97
    "broadcast": (4.0, 5.0),         # 3.20, 4.46
    "reduce": (7.5, 10.0),           # 6.75, 8.99
    "sendrecv": (6.0, 9.0),          # 5.03, 7.98
    "alltoall": (8.5, 13.0),         # 7.45, 12.00
}
# 4 ranks, CUDA graphs: op -> (card fitted on all_reduce at 4 ranks, card fitted at 2 ranks only)
BOUNDS_4 = {
    "all_reduce": (4.5, 7.0),        # 3.75 (in sample), 6.01
    "all_gather": (8.0, 9.5),        # 7.01, 8.49
    "reduce_scatter": (9.5, 10.5),   # 8.78, 9.46
    "broadcast": (16.5, 8.5),        # 15.50, 7.78
    "reduce": (9.0, 10.0),           # 8.40, 9.16
    "sendrecv": (6.0, 12.5),         # 5.00, 11.39
    "alltoall": (9.5, 16.5),         # 8.66, 15.63
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


@pytest.fixture(scope="module")
def cards_4():
    return cf.fitted_cards_4()


@pytest.mark.parametrize("op", list(BOUNDS_4))
def test_four_rank_error_does_not_regress(op, cards_4):
    """Another 4 x H200 machine: every op at 4 ranks from all_reduce at 4 ranks, and from all_reduce at
    2 ranks only (across rank counts; NCCL's 4-rank tuning table picks the protocol)."""
    at_4, at_2 = BOUNDS_4[op]
    assert cf.mean_error(cards_4["fit at 4"], cf.GRAPH4, op) <= at_4
    assert cf.mean_error(cards_4["fit at 2"], cf.GRAPH4, op) <= at_2

# third 2-rank session (another machine, host-launched, 200 iterations), card fitted on its own all_reduce
# (all_reduce is in sample; the other six held out)
BOUNDS_THIRD = {"all_reduce": 3.0, "all_gather": 10.0, "reduce_scatter": 9.5, "broadcast": 5.5,  # 2.13 (in), 9.08, 8.38, 4.75
                "reduce": 8.5, "sendrecv": 9.5, "alltoall": 9.5}                                 # 7.53, 8.48, 8.53


def test_third_session_error_does_not_regress_and_run_length_does_not_matter():
    errors = cf.third_session()
    assert all(errors[op] <= bound for op, bound in BOUNDS_THIRD.items()), errors
    # 20 vs 200 iterations: the 2-rank bandwidth ramp with size is not a run-length (clock) effect
    assert cf.iteration_count_effect() <= 0.025


def test_chain_ops_pay_hop_latency_not_data_per_hop(cards):
    """broadcast at 4 ranks: two more hops than at 2 ranks add two step latencies, never the data again
    (sizes where NCCL gives both rank counts one LL channel)."""
    primitives, _ = cards
    for size in (1024, 4096, 8192):
        t2, t4 = gpu_time(primitives, "broadcast", size, 2, "LL")[0], gpu_time(primitives, "broadcast", size, 4, "LL")[0]
        assert t4 - t2 == pytest.approx(2 * primitives.ll_step_s, rel=1e-6)


def test_p2p_protocol_and_channels_follow_nccl(cards):
    """NCCL 2.28 (src/enqueue.cc): LL while a peer's bytes <= 32 channels x 16 KiB; LL channels per peer
    min(m, ceil(bytes / 8 KiB)), m = 32 halved while m x ranks > 32 p2p channels."""
    from simcluster.collectives.primitives import p2p_channels_min

    primitives, _ = cards
    assert gpu_time(primitives, "sendrecv", 512 * 1024, 2)[1] == "LL"
    assert gpu_time(primitives, "sendrecv", 1024 * 1024, 2)[1] == "Simple"
    assert gpu_time(primitives, "alltoall", 2 * 1024 * 1024, 4)[1] == "LL"   # 512 KiB per peer
    assert [p2p_channels_min(primitives, n) for n in (2, 4, 8)] == [16, 8, 4]


def test_p2p_ll_channel_runs_at_its_receiving_warps_share(cards):
    """A p2p channel's LL data moves at 9 receiving warps of NCCL's 640-thread p2p block, against the 512
    threads of a ring LL channel (src/device/sendrecv.h): the data term is 512 / 288 times a ring channel's."""
    primitives, _ = cards
    fixed = primitives.ll_base_s + 2 * primitives.ll_step_s          # the p2p kernel's fixed cost
    for peer in (8192, 64 * 1024, 512 * 1024):          # 1, 8 and 16 channels at 2 ranks
        c = min(16, peer // 8192)
        data = gpu_time(primitives, "sendrecv", peer, 2, "LL")[0] - fixed
        assert data == pytest.approx(peer / (c * primitives.ll_channel_Bps) * 512 / 288, rel=1e-9)
    # alltoall at 4 ranks sends a quarter of its size to each peer on the same per-channel rate
    assert gpu_time(primitives, "alltoall", 4 * 65536, 4, "LL")[0] == pytest.approx(
        gpu_time(primitives, "sendrecv", 65536, 4, "LL")[0], rel=1e-12)


def test_registered_p2p_simple_call_is_one_direct_copy_after_the_p2p_kernels_fixed_cost(cards):
    """Registered buffers (CUDA-graph capture): the p2p kernel's fixed cost (the LL call's, one kernel runs both
    protocols), two Simple synchronisations at NCCL's Simple step latency (address published, completion posted)
    and the copy; unregistered (host-launched): the FIFO pipeline of Simple primitives, L_S + 2 s_S."""
    from simcluster.collectives.primitives import STEP_LATENCY_S, call_time, p2p_fixed_s

    p, _ = cards
    size = 64 * 1024 * 1024
    wire = size / p.link_bandwidth_Bps
    assert p2p_fixed_s(p) == gpu_time(p, "sendrecv", 0, 2, "LL")[0]
    registered = p2p_fixed_s(p) + 2 * STEP_LATENCY_S["Simple"] + wire
    assert gpu_time(p, "sendrecv", size, 2)[0] == pytest.approx(registered, rel=1e-12)
    unregistered = p.simple_base_s + 2 * p.simple_step_s + wire
    assert gpu_time(p, "sendrecv", size, 2, registered=False)[0] == pytest.approx(unregistered, rel=1e-12)
    assert call_time(p, "sendrecv", size, 2, host_launch=True)[0] == pytest.approx(unregistered, rel=1e-12)
    assert call_time(p, "alltoall", 2 * size, 2)[0] == pytest.approx(gpu_time(p, "sendrecv", size, 2)[0], rel=1e-12)
    # registration changes p2p calls only
    for op in ("all_reduce", "reduce_scatter", "broadcast"):
        assert gpu_time(p, op, size, 2)[0] == gpu_time(p, op, size, 2, registered=False)[0]


def test_step_latencies_are_fitted_only_across_rank_counts(cards, cards_4):
    from simcluster.collectives.primitives import STEP_LATENCY_S

    primitives, _ = cards
    assert (primitives.ll_step_s, primitives.simple_step_s) == (STEP_LATENCY_S["LL"], STEP_LATENCY_S["Simple"])
    both = cards_4["fit at 2+4"]
    assert both.ll_step_s != STEP_LATENCY_S["LL"] and 0 < both.ll_step_s < 5e-6
    assert 0 < both.simple_step_s < 20e-6


def test_tuning_log_names_its_rank_count_and_p2p_channels():
    t = nccl_tuning.parse(cf.GRAPH4 / "all_reduce-tuning" / "stdout.txt")
    assert (t.ranks, t.channels, t.p2p_channels) == (4, 24, (32, 32))


def test_primitives_beat_the_chunked_model_on_every_held_out_op(cards):
    # reduce_scatter's rate is not in any all_reduce log (docs/models/collectives-findings.md, item 10): the primitives
    # card misses it by ~8.7%; the chunked card, fitted from 12 starts since session 22 (3 starts fell into a minimum
    # 50% above the best cost under scipy 1.17 / numpy 2.4 and the margin then depended on the versions), by ~13%
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
        assert nccl_choice(primitives, op, size, 2) == proto, size


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
    # bandwidths follow the median time (not the first round's): reduce's bus factor is 1
    assert row.algbw_Bps == pytest.approx(size / row.time_s) and row.busbw_Bps == pytest.approx(row.algbw_Bps)
    ag = nccl_tests.median_trace(cf.rounds(cf.HOSTED, "all_gather"))
    assert all(r.busbw_Bps == pytest.approx(r.algbw_Bps / 2) for r in ag.rows)


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


def test_des_engine_runs_a_primitives_card_as_its_closed_form(tmp_path):
    import json
    import subprocess

    card = Path(__file__).resolve().parents[1] / "models" / "collective" / "h200x2-primitives.yaml"
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\nmachine:\n  card: {card}\n  gpus_per_node: 2\n  nodes: 1\njobs:\n"
                        "  - kind: collective_sweep\n    op: all_reduce\n    ranks: 2\n    engine: des\n"
                        "  - kind: collective_sweep\n    op: all_reduce\n    ranks: 2\n")
    done = subprocess.run([sys.executable, "-m", "simcluster", "run", str(scenario), "--json"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    des, closed = json.loads(done.stdout)["jobs"]
    assert des["engine"] == "des" and closed["engine"] != "des" and len(des["rows"]) == len(closed["rows"]) > 10
    for simulated, formula in zip(des["rows"], closed["rows"], strict=True):
        assert simulated["protocol"] == formula["protocol"]
        assert simulated["time_s"] == pytest.approx(formula["time_s"], rel=1e-9)
    missing = subprocess.run([sys.executable, "-m", "simcluster", "run", str(scenario.with_name("t.yaml"))],
                             capture_output=True, text=True)
    assert missing.returncode == 2  # a missing file is an error, not a traceback


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
    registered = plans.nccl_steps(dataclasses.replace(options, nccl_register=1), tmp_path)[0]
    assert registered.argv[registered.argv.index("-R") + 1] == "1" and registered.meta["registered_buffers"] == 1
    assert "-R" not in timed


def test_fabric_collectives_run_on_a_primitives_card(cards):
    """The fabric layer reads base and step latency through the shared accessors of either card."""
    from simcluster.collectives.fabric import predict_fabric
    from simcluster.machine_models import build_cluster
    from simcluster.scenario import load_variants

    primitives, chunked = cards
    root = Path(__file__).resolve().parents[1]
    machine = load_variants(root / "scenarios" / "whatif" / "roce-vs-tcp.yaml")[0][1].machine
    times = [predict_fabric(build_cluster(machine, intra), "all_reduce", 2**28).time_s for intra in (primitives, chunked)]
    assert all(t > 0 for t in times)
    assert times[0] == pytest.approx(times[1], rel=0.3)  # the network bounds both; NVLink models differ


def test_a_card_with_one_untagged_tuner_table_applies_it_at_any_rank_count(cards):
    """Cards written before tables were kept per rank count hold `nccl_tuner: {op: {protocol: ...}}`."""
    primitives, _ = cards
    doc = collective_params_yaml(primitives)
    doc["nccl_tuner"] = doc["nccl_tuner"][2]
    old = collective_params({"params": doc}, "card")
    for n in (2, 4):
        assert nccl_choice(old, "all_reduce", 2**20, n) == "LL" and nccl_choice(old, "all_reduce", 2**22, n) == "Simple"


def test_predict_names_a_rank_count_without_nccl_tuning_table(capsys):
    from simcluster.cli import main

    card = Path(__file__).resolve().parents[1] / "models" / "collective" / "h200x2-primitives.yaml"
    assert main(["predict", "collective", "--card", str(card), "--op", "all_reduce", "--ranks", "8", "-b", "1M", "-e", "1M"]) == 0
    out = capsys.readouterr().out
    assert "tuning table for ranks [2] only" in out and "extrapolation" in out
    assert main(["predict", "collective", "--card", str(card), "--op", "all_reduce", "--ranks", "2", "-b", "1M", "-e", "1M"]) == 0
    assert "tuning table" not in capsys.readouterr().out


def test_predict_host_launched_applies_the_floor_and_unregistered_p2p(capsys, tmp_path):
    from simcluster.cards import load_collective
    from simcluster.cli import main
    from simcluster.traces import nccl_tests

    card = Path(__file__).resolve().parents[1] / "models" / "collective" / "h200x2-primitives.yaml"
    floor = load_collective(str(card))[0].host_floor_s
    times = {}
    for flag in ([], ["--host-launched"]):
        assert main(["predict", "collective", "--card", str(card), "--op", "sendrecv", "--ranks", "2",
                     "-b", "8", "-e", "8M", "-f", "1024"] + flag) == 0
        out = capsys.readouterr().out
        assert ("registered" in out) != bool(flag)
        (tmp_path / "p.txt").write_text(out)
        times[bool(flag)] = {r.size_bytes: r.time_s for r in nccl_tests.parse(tmp_path / "p.txt").rows}
    assert times[True][8] == pytest.approx(floor, rel=1e-3) and times[False][8] < 0.5 * floor
    # 8 MiB: unregistered L_S + 2 s_S against registered F + 2 x 3.4 us: the FIFO pipeline costs more
    assert times[True][8 * 2**20] > times[False][8 * 2**20] + 5e-6
    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "oci-bm-gpu-h100-8x2.yaml"
    assert main(["predict", "collective", "--scenario", str(scenario), "--op", "all_reduce", "--host-launched"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--host-launched" in err[0]
    assert main(["predict", "collective", "--scenario", str(scenario), "--op", "all_reduce", "--ranks", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--ranks" in err[0] and "gpus_per_node" in err[0]


def test_ring_ramp_adds_a_saturating_time_to_ring_ops_at_its_rank_count_only(cards):
    """T_ring,Simple gains D (1 - exp(-wire / W)) at a rank count the card has a ramp for; chain and p2p ops,
    and other rank counts, do not."""
    primitives, _ = cards
    ramp_s, scale = 400e-6, 1e9
    with_ramp = dataclasses.replace(primitives, ring_ramps={2: (ramp_s, scale)})
    without = dataclasses.replace(primitives, ring_ramps={})
    size = 2**30
    for op, wire in (("all_reduce", size), ("all_gather", size / 2), ("reduce_scatter", size / 2)):
        extra = gpu_time(with_ramp, op, size, 2, "Simple")[0] - gpu_time(without, op, size, 2, "Simple")[0]
        assert extra == pytest.approx(ramp_s * (1 - math.exp(-wire / scale)), rel=1e-9)
    for op in ("broadcast", "reduce", "sendrecv", "alltoall"):
        assert gpu_time(with_ramp, op, size, 2, "Simple")[0] == gpu_time(without, op, size, 2, "Simple")[0]
    assert gpu_time(with_ramp, "all_reduce", size, 4, "Simple")[0] == gpu_time(without, "all_reduce", size, 4, "Simple")[0]


def test_fit_recovers_a_known_ring_ramp_from_synthetic_all_reduce(cards):
    """all_reduce times generated from known parameters (ramp D = 300 us, W = 500 MB) on nccl-tests' sizes:
    the fit gets them back, and B is the slope of the two largest sizes because the ramp has levelled off."""
    from simcluster.collectives.primitives import call_time
    from simcluster.fit.primitives import fit
    from simcluster.traces.nccl_tests import CollectiveRow, CollectiveTrace

    truth = dataclasses.replace(cards[0], ring_ramps={2: (300e-6, 5e8)}, host_floor_s=0.0)
    rows = [CollectiveRow(s, s // 4, "float", "sum", -1, call_time(truth, "all_reduce", s, 2)[0], 0.0, 0.0, 0, None, None, k)
            for k, s in enumerate(2**k for k in range(3, 34))]
    trace = CollectiveTrace("synthetic", "all_reduce", 2, 2, ["node0"], ["NVIDIA H200"] * 2, rows, cuda_graph_launches=1)
    params, _ = fit([trace], truth.tuner)
    ramp_s, scale = params.ring_ramps[2]
    assert ramp_s == pytest.approx(300e-6, rel=0.03) and scale == pytest.approx(5e8, rel=0.05)
    assert params.simple_base_s == pytest.approx(truth.simple_base_s, rel=0.05)


def test_a_bad_ring_ramp_in_a_card_is_a_one_line_error(cards):
    from simcluster.errors import ModelCardError

    raw = collective_params_yaml(cards[0])
    raw["ring_ramp"] = {2: {"time": "400us"}}
    with pytest.raises(ModelCardError, match="missing key 'scale'"):
        collective_params({"params": raw}, "card.yaml")
    raw["ring_ramp"] = {2: {"time": "400us", "scale": "1Gbs"}}
    with pytest.raises(ModelCardError, match="ring_ramp.2"):
        collective_params({"params": raw}, "card.yaml")


def test_a_plain_host_launched_log_calibrates_the_primitives_model_without_a_tuning_log(tmp_path, capsys):
    """Issue 23 item 3: `calibrate LOG --model nccl-primitives` with no NCCL debug log (NCCL's decision model picks
    each size's protocol) fits a plain host-launched all_reduce within 3% in sample, and predicts the bundle's other
    ops (held out) better than the chunked ring model fitted on the same log."""
    from simcluster.cli import main
    from simcluster.fit.validate import summary
    from simcluster.validation import validate_bundle

    bundle = Path(__file__).resolve().parents[1] / "calibration" / "h200x2-n200-2026-11-22" / "n200"
    log = bundle / "nccl-tests" / "all_reduce" / "stdout.txt"
    for model in ("nccl-primitives", "chunked-ring"):
        assert main(["calibrate", str(log), "--model", model, "-o", str(tmp_path / f"{model}.yaml")]) == 0
    capsys.readouterr()

    def errors(model):
        ops = validate_bundle(str(bundle), str(tmp_path / f"{model}.yaml")).ops
        return {r.op: summary(r.rows)["sizes_ge_1024B"]["mean_abs_error_pct"] for r in ops}

    primitives, chunked = errors("nccl-primitives"), errors("chunked-ring")
    assert primitives["all_reduce"] <= 3.0
    assert all(primitives[op] < chunked[op] for op in primitives if op != "all_reduce"), (primitives, chunked)


def test_ll128_time_follows_nccl_facts_where_nccl_runs_it():
    """LL128 (120 payload bytes of 128): base L_S + NCCL's 14 - 8.4 us unless fitted, step 1.9 us between NCCL's LL and
    Simple step latencies, bus bandwidth min(0.92 B, ring channels x 36.7 GB/s on Hopper); p2p never runs it."""
    from simcluster.collectives.primitives import (
        PrimitiveParams,
        gpu_time,
        ll128_base_s,
        ll128_bus_Bps,
        ll128_step_s,
    )
    from simcluster.collectives.primitives_card import from_params_yaml as primitives_from_yaml
    from simcluster.collectives.primitives_card import to_params_yaml

    p = PrimitiveParams(5e-6, 8e9, 10e-6, 360e9, 24)
    assert ll128_base_s(p) == pytest.approx(15.6e-6) and ll128_step_s(p) == pytest.approx(1.9e-6)
    assert ll128_bus_Bps(p) == pytest.approx(0.92 * 360e9)
    assert ll128_bus_Bps(PrimitiveParams(5e-6, 8e9, 10e-6, 360e9, 4)) == pytest.approx(2 * 36.7e9)
    size, n = 4 * 2**20, 4
    expected = 15.6e-6 + (2 * n - 1) * 1.9e-6 + size * 2 * (n - 1) / n / (0.92 * 360e9)
    assert gpu_time(p, "all_reduce", size, n, "LL128") == (pytest.approx(expected), "LL128")
    assert gpu_time(p, "sendrecv", size, n, "LL128")[1] != "LL128"
    fitted = PrimitiveParams(5e-6, 8e9, 10e-6, 360e9, 24, ll128_base_s=12e-6)
    assert gpu_time(fitted, "all_reduce", size, n, "LL128")[0] == pytest.approx(expected - 3.6e-6)
    assert primitives_from_yaml(PrimitiveParams, to_params_yaml(fitted), "card").ll128_base_s == pytest.approx(12e-6)


def test_a_fit_with_rows_nccl_ran_at_ll128_fits_their_base_latency():
    from simcluster.fit.collective import fit_card
    from simcluster.traces import nccl_tests, nccl_tuning

    folder = Path(__file__).resolve().parents[1] / "calibration" / "h200x4-graph-2026-11-22" / "nccl-tests"
    traces = [nccl_tests.parse(folder / f"all_reduce-r{k}" / "stdout.txt", op="all_reduce") for k in (1, 2, 3)]
    params, summary = fit_card(traces, [nccl_tuning.parse(folder / "all_reduce-tuning" / "stdout.txt")])
    assert params.ll128_base_s > 0 and "LL128" in summary["method"]
    picked = {r["size_B"]: abs(r["error_pct"]) for r in summary["residuals"] if r["size_B"] in (2**22, 2**23)}
    assert len(picked) == 2 and max(picked.values()) < 3.0
