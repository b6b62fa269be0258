"""Issue 45: each model card kind's params are read through their declaration (simcluster/card_params.py): an unknown
key, a wrong unit, a value out of range or a broken cross-field rule is one line FILE:LINE: params.KEY at its line."""

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster import card_params as cp
from simcluster import cards, schema
from simcluster.collectives import card_params as collective_params
from simcluster.errors import ModelCardError
from simcluster.hardware.gpu import DTYPES, load_gpu, parse_flops
from simcluster.storage.nvme import load_nvme

ROOT = Path(__file__).resolve().parents[1]
HOST_CPU = {"kind": "host-cpu", "name": "h", "params": {"cores": 16, "tcp_cpu_per_byte": "300ms/GB", "tcp_stack_latency": "5us"}}
CARDS = {   # kind: (a card of the repository, or one written here; its loader)
    "nic": (ROOT / "models/nic/seed000-roce-100g.yaml", cards.load_nic),
    "aggregation": (ROOT / "models/switch/seed003-fpga-cut-through-10g.yaml", cards.load_aggregation),
    "training-step": (ROOT / "models/training/seed000-resnet18-224-b128.yaml", cards.load_training),
    "ddp": (ROOT / "models/training/ddp-h200x4.yaml", cards.load_ddp),
    "nvls": (ROOT / "models/nvswitch/h100-nvls.yaml", cards.load_nvls),
    "nvme": (ROOT / "models/nvme/micron-9400-pro-7.68tb.yaml", load_nvme),
    "host-cpu": (HOST_CPU, cards.load_host_cpu),
    "gpu": (ROOT / "models/gpu/h100-sxm.yaml", load_gpu),
    "collective": (ROOT / "models/collective/h200x2-primitives.yaml", cards.load_collective),
    "chunked-ring": (ROOT / "models/collective/h200x4-nvlink.yaml", cards.load_collective),
    "machine": (ROOT / "models/collective/h200x2-m4-graph-machine.yaml", cards.load_collective),
}


def _card(tmp_path, kind, change=None) -> tuple[Path, object]:
    source, loader = CARDS[kind]
    doc = source if isinstance(source, dict) else yaml.safe_load(source.read_text())
    doc = {**doc, "params": {**doc["params"], **(change or {})}}
    if "kind_card" in doc["params"]:      # a machine card: its kind card beside the original
        doc["params"]["kind_card"] = str(source.parent / doc["params"]["kind_card"])
    path = tmp_path / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path, loader


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("kind", sorted(CARDS))
def test_every_declared_card_kind_reads_and_refuses_an_unknown_param_at_its_line(tmp_path, kind):
    path, loader = _card(tmp_path, kind)
    loader(path)
    path, loader = _card(tmp_path, kind, {"bogus_param": 1})
    with pytest.raises(ModelCardError) as err:
        loader(path)
    text = err.value.one_line()
    assert f"{kind}.yaml:{_line_of(path, 'bogus_param')}: params.bogus_param: unknown key 'bogus_param'" in text
    assert "expected one of:" in text and "\n" not in text


@pytest.mark.parametrize("kind,change,key,why", [
    ("nic", {"transport": "carrier-pigeon"}, "params.transport", "expected one of rdma, tcp, udp, psm"),
    ("nic", {"line_rate": "100 furlongs"}, "params.line_rate", "'100 furlongs'"),
    ("nic", {"efficiency": 0}, "params.efficiency", "expected a number > 0 to 1, got 0"),
    ("nic", {"cores_per_stream": -2}, "params.cores_per_stream", "expected a number of cores > 0 or 'none', got -2"),
    ("nic", {"pcie": "gen9x99"}, "params.pcie", "gen9x99"),
    ("aggregation", {"frame_wire": "1000B"}, "params.frame_wire", "a frame on the wire is at least its payload"),
    ("aggregation", {"forwarding": "teleport"}, "params.forwarding", "expected one of store-and-forward, cut-through"),
    ("training-step", {"phases": {"forward": 0.5, "backward": 0.6, "optimizer": 0.1}}, "params.phases.forward",
     "the shares add up to 1.2, not 1"),
    ("training-step", {"step_samples": []}, "params.step_samples", "at least 1 item"),
    ("training-step", {"grad_bytes": [1024, 0]}, "params.grad_bytes[1]", "expected an integer from 1"),
    ("ddp", {"overlap_slowdown": float("inf")}, "params", "not a finite number"),
    ("nvls", {"allreduce_algbw": {0: "100GB/s"}}, "params.allreduce_algbw", ""),
    ("nvme", {"sigma": 1e200}, "params.sigma", "expected a number from 0 to 5, got 1e+200"),
    ("nvme", {"parallelism": 1.5}, "params.parallelism", "expected an integer"),
    ("host-cpu", {"tcp_cpu_per_byte": "0s/GB"}, "params.tcp_cpu_per_byte", "expected a CPU cost per byte > 0"),
    ("gpu", {"peak_flops": {"fp8": "1PFLOP/s"}}, "params.peak_flops", "a bf16 peak is required"),
    ("gpu", {"sm_count": 0}, "params.sm_count", "expected an integer from 1 to 65,536, got 0"),
    ("gpu", {"hbm_bandwidth": "4.8TB"}, "params.hbm_bandwidth", "'4.8TB'"),
    ("collective", {"channels": 0}, "params.channels", "expected an integer from 1 to 1,024, got 0"),
    ("collective", {"nccl_arch": "kepler"}, "params.nccl_arch", "expected one of"),
    ("collective", {"ring_ramp": {"two": {"time": "1us", "scale": "1MiB"}}}, "params.ring_ramp", "'two' is not a rank count"),
    ("chunked-ring", {"protocols": {"LL": {"base_latency": "1us", "step_latency": "1us", "bandwidth_fraction": 0.5,
                                           "chunk": "64KiB"}}}, "params.protocols", "the Simple protocol is required"),
    ("machine", {"latency_offset": "-2ms"}, "params.latency_offset", "a latency offset is within +-1ms"),
    ("machine", {"launch": "graph"}, "params.launch", "expected one of cuda_graph, host"),
])
def test_a_wrong_param_is_one_line_at_its_key(tmp_path, kind, change, key, why):
    path, loader = _card(tmp_path, kind, change)
    with pytest.raises(ModelCardError) as err:
        loader(path)
    text = err.value.one_line()
    assert f"{kind}.yaml:" in text and f"{key}" in text and why in text and "\n" not in text, text


def test_declared_defaults_and_units_are_what_the_model_gets(tmp_path):
    path, _ = _card(tmp_path, "aggregation")
    params, _ = cards.load_aggregation(path)
    assert (params.buffer_bytes, params.max_levels, params.line_rate_Bps) == (4096.0, None, 10e9 / 8)
    nic, _ = cards.load_nic(_card(tmp_path, "nic")[0])
    assert nic.cores_per_stream is None and nic.segment_bytes == 64 * 1024      # rdma: no per-stream cap by default


values = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(), st.text(max_size=8),
                   st.lists(st.integers(-3, 9), max_size=3), st.dictionaries(st.integers(-2, 9), st.text(max_size=5)))
DECLARATIONS = {"nic": cp.NIC, "aggregation": cp.AGGREGATION, "training-step": cp.TRAINING_STEP, "ddp": cp.DDP,
                "nvls": cp.NVLS, "nvme": cp.NVME, "host-cpu": cp.HOST_CPU, "gpu": cp.GPU, "collective": collective_params.Primitives,
                "chunked-ring": collective_params.ChunkedRing, "machine": collective_params.MachineTerms}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(CARDS)), changes=st.dictionaries(st.sampled_from(
    ["line_rate", "efficiency", "latency", "message_size", "cores_per_stream", "pcie", "buffer", "frame_wire", "phases",
     "grad_bytes", "step_samples", "overlap_slowdown", "allreduce_algbw", "sigma", "parallelism", "cores", "transport",
     "peak_flops", "sm_count", "gemm", "attention", "hbm_capacity", "channels", "nccl_tuner", "ring_ramp", "protocols",
     "latency_offset", "launch"]),
    values, max_size=3))
def test_a_card_declaration_reads_finite_si_numbers_or_refuses_in_one_line(kind, changes):
    source = CARDS[kind][0]
    params = (source if isinstance(source, dict) else yaml.safe_load(source.read_text()))["params"]
    vocab = {"transport": ("rdma", "tcp"), "forwarding": ("cut-through",), "pcie": str, "dtype": DTYPES, "flops": parse_flops,
             "clock": lambda v: v, "protocol": ("LL", "LL128", "Simple"), "op": ("all_reduce", "all_gather"),
             "arch": ("hopper",)}
    try:
        model = schema.read(DECLARATIONS[kind], {**params, **changes}, vocab)
    except schema.Refusal as exc:
        assert exc.why and "\n" not in exc.why
        return
    for value in model.model_dump().values():
        if isinstance(value, float):
            assert value == value and abs(value) != float("inf")


@pytest.mark.parametrize("key", ["ll_step_latency", "simple_step_latency", "p2p_channels", "p2p_channels_per_peer",
                                 "nccl_arch", "ll128_base_latency"])
def test_a_null_optional_primitives_key_keeps_the_models_default_and_predicts(tmp_path, key):
    """A second read found null passed on as None, which the model then multiplied: null now reads as absent."""
    from simcluster.cards import load_collective

    doc = yaml.safe_load((ROOT / "models/collective/h200x2-primitives.yaml").read_text())
    absent = {k: v for k, v in doc["params"].items() if k != key}
    (tmp_path / "null.yaml").write_text(yaml.safe_dump({**doc, "params": {**doc["params"], key: None}}))
    (tmp_path / "absent.yaml").write_text(yaml.safe_dump({**doc, "params": absent}))
    with_null, _ = load_collective(tmp_path / "null.yaml")
    without, _ = load_collective(tmp_path / "absent.yaml")
    for size in (8, 2**20, 2**30):
        assert with_null.call_time("all_reduce", size, 2) == without.call_time("all_reduce", size, 2)
        assert without.call_time("all_reduce", size, 2)[0] > 0


def test_a_refusal_names_what_it_got_once(tmp_path):
    """A parser's message that already says what it got is not given a second ', got' (a second read saw
    'got NoneType, got None')."""
    from simcluster.cards import load_collective

    doc = yaml.safe_load((ROOT / "models/collective/h200x2-primitives.yaml").read_text())
    (tmp_path / "null.yaml").write_text(yaml.safe_dump({**doc, "params": {**doc["params"], "ll_base_latency": None}}))
    with pytest.raises(ModelCardError, match="params.ll_base_latency") as err:
        load_collective(tmp_path / "null.yaml")
    assert str(err.value).count(", got ") == 1, str(err.value)
