"""The scenario's machine section read through its declaration (machine_document.py): each block's types, units,
ranges and the rules across blocks refuse in one line FILE:LINE: KEY, and what the declaration fills in is what the
models took before (defaults, null = absent)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster import scenario, schema
from simcluster.errors import ScenarioError
from simcluster.machine_document import MACHINE

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
BASE = {"name": "m", "machine": {"card": str(MODELS / "collective/h200x4-nvlink.yaml"), "gpus_per_node": 8, "nodes": 2,
                                 "nic": {"card": str(MODELS / "nic/oci-roce-200g.yaml"), "per_node": 16},
                                 "fabric": {"kind": "rail-optimized", "down_ports": 32, "spines": 16}},
        "jobs": [{"kind": "collective_sweep", "op": "all_reduce"}]}


def _load(tmp_path, **over):
    doc = copy.deepcopy(BASE)
    for dotted, value in over.items():
        *blocks, name = dotted.split("__")
        m = doc["machine"]
        for block in blocks:
            m = m.setdefault(block, {})
        m[name] = value
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return scenario.load(path).machine


@pytest.mark.parametrize("over, key, text", [
    ({"nodes": 20_000}, "machine.nodes", "expected an integer from 1 to 16,384, got 20000"),
    ({"gpus_per_node": True}, "machine.gpus_per_node", "expected an integer"),
    ({"nic__per_node": 65}, "machine.nic.per_node", "expected an integer from 1 to 64, got 65"),
    ({"nodes": 16_384, "nic__per_node": 16}, "machine.nic.per_node", "262,144 NICs; at most 131,072 are modelled"),
    ({"nic__pcie": "gen9x3"}, "machine.nic.pcie", "e.g. gen5x16, got 'gen9x3' (the narrowest link between a GPU and its NIC"),
    ({"nic__strems": 2}, "machine.nic.strems", "unknown key 'strems' (expected one of: card, pcie, per_node, streams, via_cpu)"),
    ({"fabric__kind": "torus"}, "machine.fabric.kind", "expected one of leaf-spine, rail-optimized, got 'torus'"),
    ({"fabric__oversubscription": "3:0"}, "machine.fabric.oversubscription", "expected a ratio such as 3 or '3:1'"),
    ({"fabric__oversubscription": 0.5}, "machine.fabric.oversubscription", "expected a ratio >= 1"),
    ({"fabric__link_latency": "5"}, "machine.fabric.link_latency", "has no known time unit (use s, ms, us or ns)"),
    ({"fabric__switch_latency": "2s"}, "machine.fabric.switch_latency", "expected a time from 0s to 1s, got 2 s"),
    ({"fabric__down_ports": float("nan")}, "machine.fabric.down_ports", "not a finite number"),
    ({"fabric__tiers": 1}, "machine.fabric.tiers", "cannot join the 16 leaves (32 NIC ports each) that 2 nodes x 16 "
                                                   "NICs need: the fabric needs 2 tiers (tiers: 2)"),
    ({"host__cores": 0}, "machine.host.cores", "expected a number from 1 to 65536, got 0"),
    ({"host__cpu_vendor": "via"}, "machine.host.cpu_vendor", "expected one of intel, amd, arm, got 'via'"),
    ({"host__os_jitter": "11s"}, "machine.host.os_jitter", "expected a time from 0s to 10s, got 11 s (the mean time"),
    ({"gpu__card": str(MODELS / "gpu/h100-sxm.yaml"), "gpu__clock": "turbo"}, "machine.gpu.clock", "expected one of fixed, duty, got 'turbo'"),
    ({"gpu__card": str(MODELS / "gpu/h100-sxm.yaml"), "gpu__speed_spread": 0.6}, "machine.gpu.speed_spread", "expected a number from 0 to 0.5"),
    ({"nvls__card": 3}, "machine.nvls.card", "expected the path of a model card, got 3"),
    ({"nvlink_domain": 12}, "machine.nvlink_domain", "12 GPUs is not a whole number of nodes of 8 GPUs (a multiple"),
    ({"nic": None}, "machine", "missing key 'nic': a machine of 2 NVLink domains needs a NIC card and a fabric"),
])
def test_a_bad_machine_is_one_line_at_its_key(tmp_path, over, key, text):
    with pytest.raises(ScenarioError) as exc:
        _load(tmp_path, **over)
    line = exc.value.one_line()
    assert "s.yaml:" in line and f": {key}: " in line and text in line and "\n" not in line, line


def test_the_declared_defaults_are_the_models_defaults(tmp_path):
    m = _load(tmp_path)
    assert (m.nic.streams, m.nic.pcie, m.host_cores, m.cpu_vendor, m.gpu_clock, m.nvlink_domain, m.os_jitter_s) == \
        (1, None, 64.0, "intel", "fixed", 0, None)
    f = m.fabric
    assert (f.oversubscription, f.planes, f.link_latency_s, f.switch_latency_s, f.forwarding, f.spine_ports, f.tiers) == \
        (1.0, 1, 0.0, 0.0, "cut-through", None, None)


def test_units_and_ratios_are_read_to_si(tmp_path):
    m = _load(tmp_path, fabric__oversubscription="3:2", fabric__link_latency="50ns", host__os_jitter="1ms",
              nic__pcie="Gen5 x16", gpu__card=str(MODELS / "gpu/h100-sxm.yaml"), gpu__speed_spread=0)
    assert m.fabric.oversubscription == 1.5 and m.fabric.link_latency_s == pytest.approx(50e-9)
    assert m.os_jitter_s == pytest.approx(1e-3) and m.nic.pcie == "gen5x16" and m.gpu_speed_spread == 0.0


def test_null_is_absent_where_a_what_if_switches_a_block_off(tmp_path):
    m = _load(tmp_path, nodes=1, nic=None, fabric=None, aggregation=None, nvls=None, host=None, nvlink_domain=None)
    assert (m.nic, m.fabric, m.aggregation_card, m.nvls_card, m.host_card, m.host_cores) == (None, None, None, None, None, 64.0)


values = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(), st.text(max_size=8),
                   st.sampled_from(["3:1", "0:0", "1e9:1", "50ns", "2s", "gen5x16", "leaf-spine", "duty", "amd"]),
                   st.dictionaries(st.sampled_from(["card", "per_node", "kind", "tiers", "down_ports", "spine_ports"]),
                                   st.integers(-3, 10**6), max_size=3))
KEYS = ["nodes", "gpus_per_node", "nvlink_domain", "nic", "fabric", "host", "gpu", "nic.per_node", "nic.streams",
        "nic.pcie", "fabric.kind", "fabric.down_ports", "fabric.spines", "fabric.spine_ports", "fabric.tiers",
        "fabric.planes", "fabric.oversubscription", "fabric.link_latency", "host.cores", "host.os_jitter", "gpu.clock"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.dictionaries(st.sampled_from(KEYS), values, max_size=4))
def test_any_machine_reads_or_is_refused_in_one_line(changes):
    """The declaration with the models' own vocabularies and tiers rule: a machine either reads (the fabric's tiers
    judged by the network model) or is refused with one line naming a key, whatever the values."""
    m = copy.deepcopy({**BASE["machine"], "host": {"cores": 8}, "gpu": {"card": "g.yaml"}})
    for dotted, value in changes.items():
        block, _, name = dotted.rpartition(".")
        if block and isinstance(m.get(block), dict):
            m[block][name] = value
        elif not block:
            m[name] = value
    try:
        schema.read(MACHINE, m, scenario.MACHINE_VOCABULARY)
    except schema.Refusal as exc:
        assert exc.why and "\n" not in exc.why and "\n" not in (exc.hint or "")
