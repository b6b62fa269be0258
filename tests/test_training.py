"""Training step model: order statistics, the 1-GPU identity, held-out fidelity on real H200 runs,
predict training (JSON keys, Perfetto), seed 000 and the what-if scenarios."""

from __future__ import annotations

import dataclasses
import itertools
import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

from simcluster.cards import load_training
from simcluster.cli import main
from simcluster.training.step import DdpParams, expected_max, simulate_step

BUNDLE = ROOT / "calibration" / "h200x4-collect-2026-11-22"
SCENARIOS = sorted((ROOT / "scenarios" / "whatif").glob("*.yaml")) + [ROOT / "scenarios" / "seed000-resnet18-2servers.yaml"]


def test_expected_max_matches_enumeration():
    x = [1.0, 2.0, 4.0]
    for n in (1, 2, 3):
        brute = np.mean([max(c) for c in itertools.product(x, repeat=n)])
        assert expected_max(x, n) == pytest.approx(brute)


@pytest.mark.parametrize("card", sorted((ROOT / "models" / "training").glob("h200-*.yaml")))
def test_one_gpu_step_reproduces_its_measurement(card):
    w, _ = load_training(card)
    step = simulate_step(w, 1, lambda s: 0.0, DdpParams(1e-5, 1e-5, 0.2))
    assert step.step_s == pytest.approx(w.step_s, rel=1e-3)  # the card rounds to 4 digits
    assert step.sync_wait_s == 0 and step.exposed_comm_s == 0


def test_buckets_follow_ddp_rules():
    w, _ = load_training(ROOT / "models" / "training" / "h200-resnet50-224-b64.yaml")
    buckets = w.buckets()
    assert sum(buckets) == sum(w.grad_bytes)
    assert buckets[0] >= 2**20 and all(b >= 25 * 2**20 for b in buckets[1:-1])
    mib = 2**20
    toy = dataclasses.replace(w, grad_bytes=(3 * mib, mib // 2, 6 * mib // 10), bucket_cap_bytes=25 * mib)
    # reverse order; the first bucket closes once past 1 MiB (0.6 + 0.5), the rest go to the next one
    assert toy.buckets() == [6 * mib // 10 + mib // 2, 3 * mib]


def _validation() -> str:
    done = subprocess.run([sys.executable, str(ROOT / "studies" / "training_validation.py"), str(BUNDLE)],
                          capture_output=True, text=True, check=True)
    return done.stdout


@pytest.mark.slow
def test_held_out_gpu_bound_steps_within_stated_error():
    """Fitted on 2-GPU NVLink runs; the held-out ResNet-50 (GPU-bound) runs at 4 GPUs and over the socket
    transport are predicted within 7% (measured: +1.8%, +1.2%, -6.5%). Host-bound small steps are NOT
    within that (ResNet-18/34: -14% to -31%) and this test records that too, so a change shows."""
    out = _validation()
    rows = {line.split()[0] + " " + line.split()[1] + " " + line.split()[2]: float(line.split()[-1].rstrip("%"))
            for line in out.splitlines() if line.strip().startswith("resnet") and line.strip().split()[-1].endswith("%")}
    for key in ("resnet50 x4 nvlink", "resnet50 x2 socket", "resnet50 x4 socket"):
        assert abs(rows[key]) <= 7.0, (key, rows[key])
    assert rows["resnet34 x4 nvlink"] < -10.0  # the known miss: DDP's host cost on small steps


def test_predict_training_json_keys_and_perfetto(tmp_path, capsys):
    trace = tmp_path / "step.json"
    sc = ROOT / "scenarios" / "seed000-resnet18-2servers.yaml"
    assert main(["predict", "training", "--scenario", str(sc), "--json", "--trace", str(trace)]) == 0
    out = json.loads(capsys.readouterr().out)
    for v in out:
        assert {"step_time_s", "samples_per_s", "speedup", "breakdown"} <= set(v)
        assert {"compute_s", "exposed_communication_s", "storage_stall_s", "cpu_bound_s"} <= set(v["breakdown"])
    assert not trace.exists()    # one timeline per variant: step-roce.json, step-tcp.json
    files = sorted(tmp_path.glob("step-*.json"))
    assert [f.name for f in files] == [f"step-{v['variant']}.json" for v in sorted(out, key=lambda v: v["variant"])]
    events = json.loads(files[0].read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert [lanes[t] for t in sorted(lanes)] == ["host", "gpu", "comm", "loader"]   # the data loader has its lane
    assert {e["tid"] for e in spans} == set(lanes) and all(e["dur"] > 0 for e in spans)


def test_seed000_speedup_and_tcp(capsys):
    """Seed 000: 27 -> 15 min on 2 servers (speedup 1.8). RoCE within 10%; TCP clearly slower."""
    sc = ROOT / "scenarios" / "seed000-resnet18-2servers.yaml"
    assert main(["predict", "training", "--scenario", str(sc), "--json"]) == 0
    roce, tcp = json.loads(capsys.readouterr().out)
    assert roce["speedup"] == pytest.approx(27 / 15, rel=0.10)
    assert tcp["speedup"] < roce["speedup"] - 0.3
    assert main(["predict", "training", "--scenario", str(sc), "--json", "--nodes", "16"]) == 0
    roce16, tcp16 = json.loads(capsys.readouterr().out)
    assert 10 < roce16["speedup"] < 16 and tcp16["speedup"] < roce16["speedup"]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_what_if_scenarios_run(path, capsys):
    assert main(["run", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    steps = [v["jobs"][0]["step_time_s"] for v in doc["variants"]]
    assert len(steps) >= 2 and all(s > 0 for s in steps)
    assert len(set(steps)) > 1  # every what-if changes the answer


def test_training_job_bad_key_is_one_line(tmp_path, capsys):
    bad = tmp_path / "s.yaml"
    bad.write_text((ROOT / "scenarios" / "seed000-resnet18-2servers.yaml").read_text()
                   .replace("epochs: 1", "epoch: 1").replace("../", str(ROOT) + "/"))
    assert main(["predict", "training", "--scenario", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "epoch" in err and "s.yaml" in err


def test_storage_stall_falls_with_drives(capsys):
    assert main(["run", str(ROOT / "scenarios" / "whatif" / "nvme-drives.yaml"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    stall = [v["jobs"][0]["breakdown"]["storage_stall_s"] for v in doc["variants"]]
    assert stall[0] > 0.005 and stall[1] < stall[0] and stall[2] <= stall[1]


def test_tcp_transport_and_data_loader_contend_for_host_cores(capsys):
    """scenarios/whatif/host-cores.yaml: the loader needs 128 samples x 1 ms of CPU per step, the TCP transport
    1.0 core while gradients are on the wire (21.5 ms a step uncontended). With 32 or 4 cores nothing waits; with
    2 or 1.5 the loader never catches up and the host is never idle, so the step is, by hand,
    (0.128 core-s + 1.0 core x 21.5 ms) / cores, and at 1.5 cores the transport's fair share (0.75) is below its
    1.0 core: the all-reduce itself stretches."""
    from simcluster.cards import load_collective
    from simcluster.collectives.ring_flows import ring_flows
    from simcluster.machine_models import build_cluster
    from simcluster.scenario import load_variants

    path = ROOT / "scenarios" / "whatif" / "host-cores.yaml"
    machine = load_variants(path)[0][1].machine
    tcp_cores = ring_flows(build_cluster(machine, load_collective(machine.card)[0])).cpu_cores_per_node
    assert main(["run", str(path), "--json"]) == 0
    jobs = {v["variant"]: v["jobs"][0] for v in json.loads(capsys.readouterr().out)["variants"]}
    free = jobs["32-cores"]
    assert free["step_time_s"] == pytest.approx(jobs["4-cores"]["step_time_s"], rel=1e-12) and free["breakdown"]["cpu_bound_s"] == 0
    wire_s = free["breakdown"]["communication_total_s"]
    parts = ("compute_s", "exposed_communication_s", "overhead_s", "sync_wait_s", "storage_stall_s", "cpu_bound_s")
    for label, cores in (("2-cores", 2.0), ("1.5-cores", 1.5)):
        job, b = jobs[label], jobs[label]["breakdown"]
        bound = (128 * 1e-3 + tcp_cores * wire_s) / cores
        assert job["step_time_s"] == pytest.approx(bound, rel=1e-6), label
        assert b["cpu_bound_s"] > 0.02 and b["storage_stall_s"] == 0
        assert sum(b[k] for k in parts) == pytest.approx(job["step_time_s"], rel=1e-9)
    assert jobs["2-cores"]["breakdown"]["communication_total_s"] == pytest.approx(wire_s, rel=1e-9)
    assert jobs["1.5-cores"]["breakdown"]["communication_total_s"] > 1.2 * wire_s


def test_storage_bound_step_is_the_drives_bandwidth():
    """nvme-drives, 1 drive: 8 GPUs x 64 samples x 114,660 B a step through one drive's 995 MB/s link is 59.0 ms,
    more than the 37.4 ms step: the step waits for the drive, which never idles, so the step is that bound (to
    1e-6); with 2 drives the reads keep up and the step is the step without storage."""
    from simcluster.predict_training import predict_training
    from simcluster.scenario import load_variants
    from simcluster.storage.nvme import load_nvme

    variants = dict(load_variants(ROOT / "scenarios" / "whatif" / "nvme-drives.yaml"))
    one = variants["1-drive"]
    nvme, _ = load_nvme(one.jobs[0].storage.nvme)
    step = predict_training(one.machine, one.jobs[0]).step
    bound = 8 * 64 * 114660 / nvme.bandwidth_Bps
    assert step.step_s == pytest.approx(bound, rel=1e-6) and step.storage_stall_s > 0.02 and step.cpu_bound_s == 0
    two = variants["2-drives"]
    plain = dataclasses.replace(two.jobs[0], storage=None)
    assert predict_training(two.machine, two.jobs[0]).step.step_s == pytest.approx(
        predict_training(two.machine, plain).step.step_s, rel=1e-9)
    assert predict_training(one.machine, one.jobs[0]).step.step_s == step.step_s   # deterministic


def test_trace_has_the_transport_and_loader_lanes():
    from simcluster.predict_training import perfetto_trace, predict_training
    from simcluster.scenario import load_variants

    scenario = dict(load_variants(ROOT / "scenarios" / "whatif" / "host-cores.yaml"))["1.5-cores"]
    events = perfetto_trace(predict_training(scenario.machine, scenario.jobs[0]))["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    spans = {lanes[e["tid"]] for e in events if e["ph"] == "X"}
    assert spans == {"host", "gpu", "comm", "loader", "tcp-cpu"}
    shares = [e["name"] for e in events if e["ph"] == "X" and lanes[e["tid"]] == "tcp-cpu"]
    assert any("(0.75 cores)" in name for name in shares)   # the transport's fair share while the loader runs


def test_ddp_card_from_repeats_predicts_another_session():
    """models/training/ddp-h200x4.yaml is fitted on the noise session's repeats; the interleaved session
    (another machine and day) is held out: measured mean |error| 4.9%, max 10.4%."""
    sys.path.insert(0, str(ROOT / "validation"))
    import training_noise as tn

    from simcluster.cards import load_collective, load_ddp

    ddp, card = load_ddp(ROOT / "models" / "training" / "ddp-h200x4.yaml")
    assert all("h200x4-noise-2026-11-22" in b for b in card["provenance"]["bundle"])
    nv, _ = load_collective(ROOT / "models" / "collective" / "h200x4-collect-nvlink.yaml")
    errors = tn.interleaved(ddp, nv)
    assert len(errors) == 6
    assert np.mean(np.abs(errors)) <= 6.0 and max(map(abs, errors)) <= 12.0


def test_calibrate_several_bundles_pools_the_ddp_fit(tmp_path, capsys):
    noise = ROOT / "calibration" / "h200x4-noise-2026-11-22"
    card = ROOT / "models" / "collective" / "h200x4-collect-nvlink.yaml"
    args = ["calibrate", *(str(noise / f"rep{k}") for k in (1, 2, 3)), "-o", str(tmp_path), "--collective-card", str(card)]
    assert main(args) == 0
    pooled = (tmp_path / "ddp.yaml").read_text()
    assert "points: 9" in pooled and (tmp_path / "rep2" / "ddp.yaml").is_file()
    assert main(["calibrate", str(noise / "rep1"), str(card), "-o", str(tmp_path)]) == 2
    assert "not a bundle folder" in capsys.readouterr().err
    # a mistyped card is a one-line error, not a pooled fit that silently has no DDP card
    assert main(["calibrate", str(noise / "rep1"), str(noise / "rep2"), "-o", str(tmp_path / "x"),
                 "--collective-card", str(card) + ".typo"]) == 2
    assert "no such card file" in capsys.readouterr().err


def test_paired_session_held_out_and_leave_one_repeat_out():
    """calibration/h200x4-ddp-paired-2026-11-22: each 2-/4-GPU step predicted from the plain steps timed in the
    same processes (measured: mean |error| 5.7%, max 13.7%; ResNet-50 within 2.4%), and the DDP card refitted on
    two repeats predicting the third (4.9%, max 15.1%)."""
    sys.path.insert(0, str(ROOT / "validation"))
    import training_noise as tn

    from simcluster.cards import load_collective, load_ddp

    ddp, _ = load_ddp(ROOT / "models" / "training" / "ddp-h200x4.yaml")
    nv, _ = load_collective(ROOT / "models" / "collective" / "h200x4-collect-nvlink.yaml")
    errors, separate = tn.paired(ddp, nv)
    assert len(errors) == 18 and np.mean(np.abs(separate)) > np.mean(np.abs(errors))  # 8.0% from a separate process
    assert np.mean(np.abs(errors)) <= 6.5 and max(map(abs, errors)) <= 15.0
    observations = [o for k in (1, 2, 3) for o in tn.paired_observations(tn.PAIRED / f"rep{k}.jsonl", nv)]
    gpu_bound = [e for o, e in zip(observations, errors, strict=True) if o.workload.model == "resnet50"]
    assert len(gpu_bound) == 6 and max(map(abs, gpu_bound)) <= 3.0
    cv = tn.paired_cross_validation(ddp, nv, every_rank=False)
    assert len(cv) == 18 and np.mean(np.abs(cv)) <= 5.5


@pytest.mark.slow
def test_slowest_rank_paces_the_step_held_out():
    """Each step predicted from every rank's plain steps (measured: leave one repeat out 1.7%, max 5.7%; leave one
    model out 1.8%, max 6.1%; another 2 x H200 machine, NVLink and socket, card fitted on the 4 x H200 session:
    4.4%, max 12.9%, against 5.6% from rank 0's plain steps alone)."""
    sys.path.insert(0, str(ROOT / "validation"))
    import training_noise as tn

    from simcluster.cards import load_collective, load_ddp

    ddp, _ = load_ddp(ROOT / "models" / "training" / "ddp-h200x4.yaml")
    nv, _ = load_collective(ROOT / "models" / "collective" / "h200x4-collect-nvlink.yaml")
    loro = tn.paired_cross_validation(ddp, nv)
    assert len(loro) == 18 and np.mean(np.abs(loro)) <= 2.5 and max(map(abs, loro)) <= 7.0
    assert np.mean(np.abs(loro)) < np.mean(np.abs(tn.paired_cross_validation(ddp, nv, every_rank=False)))
    lomo = tn.paired_leave_one_model_out(ddp, nv)
    assert len(lomo) == 18 and np.mean(np.abs(lomo)) <= 2.5 and max(map(abs, lomo)) <= 7.0
    other = tn.another_machine(ddp, nv)
    assert len(other) == 12 and np.mean(np.abs(other)) <= 5.0
    assert np.mean(np.abs(other)) < np.mean(np.abs(tn.another_machine(ddp, nv, every_rank=False)))


def test_expected_max_of_independent_rows_matches_enumeration():
    from simcluster.training.step import expected_max_of

    rows = [[1.0, 3.0], [2.0, 2.5, 5.0], [0.5]]
    brute = np.mean([max(c) for c in itertools.product(*rows)])
    assert expected_max_of(rows) == pytest.approx(brute)
    x = [1.0, 2.0, 4.0, 4.0]
    assert expected_max_of([x] * 3) == pytest.approx(expected_max(x, 3))   # identical rows: the closed form


def test_rank_workloads_step_is_the_slowest_ranks():
    w, _ = load_training(ROOT / "models" / "training" / "h200-resnet18-32-b128.yaml")
    comm, p = (lambda s: 1e-4), DdpParams(4e-5, 2e-5, 0.0)
    same = simulate_step(w, 2, comm, p)
    assert simulate_step(w, 2, comm, p, rank_workloads=(w, w)).step_s == pytest.approx(same.step_s, rel=1e-12)
    slow = dataclasses.replace(w, host_s=w.host_s * 1.2, step_s=w.step_s * 1.2, gpu_s=w.gpu_s)
    paced = simulate_step(w, 2, comm, p, rank_workloads=(w, slow))
    alone = simulate_step(slow, 2, comm, p)
    assert paced.step_s > same.step_s and paced.step_s >= alone.step_s - alone.sync_wait_s
    with pytest.raises(ValueError, match="3 rank workloads for 2 ranks"):
        simulate_step(w, 2, comm, p, rank_workloads=(w, w, w))


def test_paired_ranks_reads_every_ranks_plain_steps():
    from simcluster.training import workload as W

    rec = W.read_runs(ROOT / "calibration" / "h200x4-ddp-paired-2026-11-22" / "rep1.jsonl")[1]
    ranks = W.paired_ranks(rec)
    assert len(ranks) == rec["world_size"] == 2
    assert ranks[0].step_s == pytest.approx(W.from_paired(rec).step_s) and ranks[1].step_s > ranks[0].step_s
    assert W.paired_ranks({**rec, "ranks": [{"step_times_s": [1.0]}] * 2}) == ()
    assert W.paired_ranks({**rec, "ranks": rec["ranks"][:1]}) == ()      # not one per rank


def test_paired_record_reads_plain_steps_and_needs_them():
    from simcluster.errors import TraceFormatError
    from simcluster.training import workload as W

    rec = W.read_runs(ROOT / "calibration" / "h200x4-ddp-paired-2026-11-22" / "rep1.jsonl")[1]
    w = W.from_paired(rec)
    assert w.step_s == pytest.approx(rec["plain"]["median_step_s"]) and w.step_s < rec["median_step_s"]
    with pytest.raises(TraceFormatError, match="without --paired"):
        W.from_paired({**rec, "plain": None}, where="x.jsonl")


def test_collect_plans_paired_ddp_steps():
    from simcluster.errors import SimclusterError
    from simcluster.runner import plans

    plain = plans.ddp_steps(plans.Options(gpus=4))[0].argv
    paired = plans.ddp_steps(plans.Options(gpus=4, ddp_paired=6))[0].argv
    assert "--paired" not in plain and paired[paired.index("--paired") + 1] == "6"
    assert paired[paired.index("--world") + 1:paired.index("--world") + 4] == ["1", "2", "4"]
    with pytest.raises(SimclusterError, match="--ddp-paired -1"):
        plans.ddp_steps(plans.Options(gpus=4, ddp_paired=-1))


def test_bundle_calibration_predicts_paired_runs_from_their_plain_steps(tmp_path):
    from simcluster.cards import load_collective
    from simcluster.fit.bundle import _ddp_runs
    from simcluster.fit.bundle_files import Bundle
    from simcluster.training import workload as W

    records = W.read_runs(ROOT / "calibration" / "h200x4-ddp-paired-2026-11-22" / "rep1.jsonl")
    runs = []
    for k in range(3):
        (tmp_path / "ddp-step" / f"r{k}").mkdir(parents=True)
        lines = [json.dumps(r) for r in records[3 * k:3 * k + 3]]
        (tmp_path / "ddp-step" / f"r{k}" / "stdout.txt").write_text("\n".join(lines) + "\n")
        runs.append({"tool": "ddp-step", "run_id": f"r{k}", "path": f"ddp-step/r{k}", "status": "ok"})
    card = ROOT / "models" / "collective" / "h200x4-collect-nvlink.yaml"
    _, obs, _, _ = _ddp_runs(Bundle(tmp_path, {"runs": runs}), load_collective(card)[0])
    two = [r for r in records if r["world_size"] == 2]
    assert len(obs) == 3
    assert [o.workload.step_s for o in obs] == pytest.approx([r["plain"]["median_step_s"] for r in two])


def test_paired_steps_alternate_blocks_and_time_each_step():
    """ddp_step --paired: BLOCKS blocks of each kind, alternating which goes first, every step timed."""
    from simcluster.runner.ddp_step import _paired_steps

    calls = []
    out = _paired_steps(lambda: calls.append("p"), lambda: calls.append("d"), lambda: None, warmup=1, block=3, blocks=4)
    assert calls[:2] == ["p", "d"]                                   # warm-up: one of each
    assert "".join(calls[2:]) == "ppp" "ddd" "ddd" "ppp" "ppp" "ddd" "ddd" "ppp"
    assert all(len(out[k]) == 12 for k in out)
    assert all(t >= i >= 0 for t, i in zip(out["ddp_times"], out["ddp_issue"], strict=True))
