"""Kind cards apart from machine cards, the nccl-probe plan, and the chunk DES running every collective model."""

from pathlib import Path

import pytest

from simcluster.cards import load_collective
from simcluster.collectives import des
from simcluster.collectives.machine import MachineTerms, compose
from simcluster.collectives.model import predict
from simcluster.errors import ModelCardError
from simcluster.network.builders import single_node

ROOT = Path(__file__).resolve().parent.parent
CARDS = ROOT / "models" / "collective"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")
SIZES = (1024, 65536, 2**20, 16 * 2**20, 256 * 2**20)


def _des_vs_closed(model, op, n, size):
    closed = predict(model, op, size, n)
    return des.simulate(model, single_node(n, model.link_bandwidth_Bps), op, size, closed.protocol).time_s / closed.time_s - 1


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("op", OPS)
def test_des_reproduces_the_primitives_closed_form(op, n):
    model = load_collective(CARDS / "h200x4-primitives.yaml")[0]
    # ring and p2p ops exactly; a chain over more than one hop is pipelined in 100 chunks per extra hop (<= 1%)
    tolerance = 0.01 if op in ("broadcast", "reduce") and n > 2 else 1e-9
    for size in SIZES:
        assert abs(_des_vs_closed(model, op, n, size)) <= tolerance, (op, n, size)


@pytest.mark.parametrize("op", OPS)
def test_des_reproduces_a_profiled_card_at_its_rank_count(op):
    model = load_collective(CARDS / "h200-nvlink-kind.yaml")[0]
    assert model.profiles
    # a profile that makes a call faster than the card's link bandwidth allows is capped by the link: <= 2%
    for size in SIZES:
        assert abs(_des_vs_closed(model, op, 2, size)) <= 0.02, (op, size)


def test_machine_card_is_its_kind_card_with_the_machine_terms(tmp_path):
    kind = load_collective(CARDS / "h200-nvlink-kind.yaml")[0]
    card = tmp_path / "m.yaml"
    card.write_text(f"kind: collective\nname: m\nparams:\n  kind_card: {CARDS / 'h200-nvlink-kind.yaml'}\n"
                    "  launch: host\n  latency_offset: -1.5us\n  host_launch_floor: 12us\n")
    machine = load_collective(card)[0]
    expected = compose(kind, MachineTerms("host", -1.5e-6, 12e-6))
    for op in OPS:
        for size in (8, 2**20, 2**30):
            assert machine.call_time(op, size, 2, True) == expected.call_time(op, size, 2, True)
    assert machine.call_time("all_reduce", 8, 2, True)[0] >= 12e-6          # the floor
    assert machine.call_time("all_reduce", 8, 2)[0] < kind.call_time("all_reduce", 8, 2)[0]  # the offset


@pytest.mark.parametrize("params, message", [
    ("launch: train\n  latency_offset: 0us\n  host_launch_floor: 0us", "launch"),
    ("launch: host\n  latency_offset: 2ms\n  host_launch_floor: 0us", "latency_offset"),
    ("launch: host\n  latency_offset: 0us\n  host_launch_floor: 0us\n  bogus: 1", "bogus"),
])
def test_bad_machine_card_is_one_line(tmp_path, params, message):
    card = tmp_path / "m.yaml"
    card.write_text(f"kind: collective\nname: m\nparams:\n  kind_card: {CARDS / 'h200-nvlink-kind.yaml'}\n  {params}\n")
    with pytest.raises(ModelCardError, match=message):
        load_collective(card)


def test_a_kind_card_that_is_a_machine_card_is_refused(tmp_path):
    card = tmp_path / "m.yaml"
    card.write_text(f"kind: collective\nname: m\nparams:\n  kind_card: {CARDS / 'h200x2-graph2-machine.yaml'}\n"
                    "  launch: host\n  latency_offset: 0us\n  host_launch_floor: 0us\n")
    with pytest.raises(ModelCardError, match="another machine card"):
        load_collective(card)


def test_nccl_probe_plans_a_short_small_size_sweep(tmp_path):
    from simcluster.runner import plans

    steps = plans.plan(["nccl-probe"], plans.Options(gpus=2, max_size="8G", ops=("broadcast",)), tmp_path)
    assert [s.tool for s in steps] == ["nccl-probe", "nccl-probe"]
    assert [s.meta["op"] for s in steps] == ["all_reduce", "all_gather"]
    assert all("1M" in s.argv and "8G" not in s.argv for s in steps)


def test_held_out_same_kind_machines_meet_the_target_in_cuda_graph_mode():
    """Each 2 x H200 CUDA-graph bundle predicted from a kind card fitted on the other machines plus its own probe:
    the issue's target (<= 5% mean |error| from 1 MiB, <= 10% 1 KiB..1 MiB) for every op. Host-launched bundles
    miss below 1 MiB (docs/models/collectives.md says why) and are not asserted here."""
    from simcluster.machine_validation import BANDS, validate_held_out_machines

    result = validate_held_out_machines([str(p) for p in sorted((ROOT / "calibration").glob("h200x2-*"))])
    graph = [m for m in result.machines if m.terms.launch == "cuda_graph"]
    assert len(graph) >= 2
    assert len({m.machine for m in result.machines}) >= 3
    for m in graph:
        assert m.bundle not in " ".join(m.kind_from)
        for r in m.ops:
            small, large = (m.band(r, lo, hi) for _, lo, hi in BANDS)
            assert large <= 5.0 and small <= 10.0, (m.bundle, r.op, small, large)


def test_calibrate_a_probe_bundle_with_a_kind_card_writes_a_machine_card(tmp_path):
    """A bundle whose runs are nccl-probe runs (here the small sizes of a real 2 x H200 log, cut as the probe would
    measure them) -> `calibrate --kind-card` -> a machine card that loads, names its kind card, and predicts."""
    import json
    import shutil

    from simcluster.cli import main

    source = ROOT / "calibration" / "h200x2-graph-2026-11-22"
    bundle = tmp_path / "probe"
    runs = []
    for op in ("all_reduce", "all_gather"):
        folder = bundle / "nccl-probe" / op
        folder.mkdir(parents=True)
        lines = (source / "nccl-tests" / f"{op}-r1" / "stdout.txt").read_text().splitlines(keepends=True)
        kept = [line for line in lines if line.lstrip().startswith("#") or not line.strip()
                or not line.split()[0].isdigit() or int(line.split()[0]) <= 2**20]
        (folder / "stdout.txt").write_text("".join(kept))
        shutil.copy(source / "nccl-tests" / f"{op}-r1" / "stderr.txt", folder / "stderr.txt")
        runs.append({"tool": "nccl-probe", "run_id": op, "path": f"nccl-probe/{op}", "argv": [], "env": {},
                     "meta": {"op": op, "role": "timing", "cuda_graph_launches": 5}, "status": "ok", "exit_code": 0})
    manifest = json.loads((source / "manifest.json").read_text())
    (bundle / "manifest.json").write_text(json.dumps(manifest | {"runs": runs, "tools": ["nccl-probe"]}))
    out = tmp_path / "cards" / "machine.yaml"
    out.parent.mkdir()
    assert main(["calibrate", str(bundle), "--kind-card", str(CARDS / "h200-nvlink-kind.yaml"), "-o", str(out)]) == 0
    model, card = load_collective(out)
    assert card["params"]["launch"] == "cuda_graph" and card["params"]["kind_card"].endswith("h200-nvlink-kind.yaml")
    from simcluster.collectives.machine import machine_terms

    assert abs(machine_terms(card["params"], "card").latency_offset_s) < 1e-6     # the same kind: a small offset
    assert 0 < predict(model, "reduce_scatter", 2**30, 2).time_s < 1e-2


def _copy_bundle(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.pop("created") and m.pop("finished", None), "created: expected an ISO 8601 time"),
    (lambda m: m.update(created="yesterday"), "created: expected an ISO 8601 time"),
])
def test_held_out_machines_skip_a_manifest_with_a_bad_time_in_one_line(tmp_path, edit, message):
    import json

    from simcluster.machine_validation import find_bundles

    bundle = _copy_bundle(ROOT / "calibration" / "h200x2-graph2-2026-11-22", tmp_path / "b")
    manifest = json.loads((bundle / "manifest.json").read_text())
    edit(manifest)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    found, skipped = find_bundles([str(bundle)])
    assert found == [] and len(skipped) == 1 and message in skipped[0] and "manifest.json" in skipped[0]


def test_a_time_without_a_zone_is_utc_and_a_bundle_named_twice_counts_once(tmp_path):
    import json

    from simcluster.machine_validation import collected, find_bundles

    bundle = _copy_bundle(ROOT / "calibration" / "h200x2-graph2-2026-11-22", tmp_path / "b")
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["created"] = "2026-11-22T10:05:17"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert collected(bundle)[0].utcoffset().total_seconds() == 0
    found, _ = find_bundles([str(bundle), str(bundle), str(tmp_path / "b" / ".")])
    assert found == [bundle]


def test_kind_card_must_be_a_profiled_primitives_card_at_the_probes_ranks(tmp_path):
    from simcluster.errors import CalibrationError
    from simcluster.fit.machine import machine_card

    probe = ROOT / "calibration" / "h200x2-graph2-2026-11-22"
    with pytest.raises(CalibrationError, match="a kind card is an nccl-primitives card with per-op profiles"):
        machine_card(str(probe), str(CARDS / "h200x2-nvlink.yaml"), str(tmp_path / "m.yaml"), "m")
    with pytest.raises(CalibrationError, match=r"the probe ran at \[4\] ranks; the kind card knows \[2\]"):
        machine_card(str(ROOT / "calibration" / "h200x4-graph-2026-11-22"), str(CARDS / "h200-nvlink-kind.yaml"),
                     str(tmp_path / "m.yaml"), "m")


def test_machine_fit_reaches_its_optimum_not_the_rounding_of_its_start():
    # the objective is smooth (terms rounded only for the card): a CUDA-graph probe's offset moves off every start
    from simcluster.fit.machine import OFFSET_STARTS_US, bundle_traces, fit_terms

    kind = load_collective(CARDS / "h200-nvlink-kind.yaml")[0]
    traces = [t for t in bundle_traces(ROOT / "calibration" / "h200x2-graph-2026-11-22") if t.op in ("all_reduce", "all_gather")]
    terms, summary = fit_terms(kind, traces)
    assert all(abs(terms.latency_offset_s * 1e6 - a0) > 0.01 for a0 in OFFSET_STARTS_US)
    assert summary["rms_log_error"] < 0.05
