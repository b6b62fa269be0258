"""EFA's rendezvous (collectives/rendezvous.py): with the NIC card's `eager_max_size` set, a call whose first network
message is above it waits one more one-way latency, once; an eager first message (and a card without the key, every
shipped card) adds nothing. The step latency itself does not change with the protocol's name."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from simcluster.cards import load_nic, nic_params_yaml
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.fabric_call import FabricCall
from simcluster.collectives.rendezvous import EAGER_HEADER_BYTES, first_message_bytes, rendezvous_s
from simcluster.errors import SimclusterError
from simcluster.reference import nccl

ROOT = Path(__file__).resolve().parent.parent
EAGER = 8192.0


def _cluster(scenario: str, nodes: int, eager: float):
    cluster = nccl._cluster((ROOT / "scenarios" / "published" / f"{scenario}.yaml").resolve(), nodes)
    return dataclasses.replace(cluster, nic=dataclasses.replace(cluster.nic, eager_max_size_bytes=eager))


def test_no_shipped_nic_card_states_an_eager_limit():
    for path in sorted((ROOT / "models" / "nic").glob("*.yaml")):
        p, _ = load_nic(path)
        assert p.eager_max_size_bytes == 0.0, path.name
        assert "eager_max_size" not in nic_params_yaml(p)


def test_a_call_above_the_eager_limit_waits_one_more_one_way_latency_once():
    on, off = _cluster("aws-p5-hyperpod-x32", 8, EAGER), _cluster("aws-p5-hyperpod-x32", 8, 0.0)
    for op, size, algorithm in (("all_gather", 64 << 20, "ring"), ("all_reduce", 256 << 20, "tree"),
                                ("all_reduce", 256 << 20, "nvls-tree")):
        with_it, without = predict_fabric(on, op, size, algorithm), predict_fabric(off, op, size, algorithm)
        added = with_it.time_s - without.time_s
        assert 20e-6 <= added <= 25e-6, (op, algorithm, added)    # the card's 20 us plus the path, not per step
        assert with_it.breakdown.get("step_latency_inter_s") == without.breakdown.get("step_latency_inter_s")


def test_an_eager_first_message_adds_nothing():
    on, off = _cluster("aws-p6-b200-x4", 2, EAGER), _cluster("aws-p6-b200-x4", 2, 0.0)
    assert predict_fabric(on, "all_reduce", 8).time_s == predict_fabric(off, "all_reduce", 8).time_s   # dstack#3961's call


def test_the_first_message_follows_the_size_not_the_protocol_name():
    cluster = _cluster("aws-p5-hyperpod-x32", 8, EAGER)
    small = {p: first_message_bytes(cluster, "all_gather", "Ring", p, 128 << 10) for p in ("LL", "LL128", "Simple")}
    assert max(small.values()) + EAGER_HEADER_BYTES <= EAGER  # 128 KiB over 64 ranks and its channels: eager in all three
    large = {p: first_message_bytes(cluster, "all_gather", "Ring", p, 1 << 30) for p in ("LL", "LL128", "Simple")}
    assert min(large.values()) > EAGER
    call = FabricCall(cluster, "all_gather", 128 << 10, 1.0, 1.0, 21e-6, None)
    assert all(call.rendezvous("Ring", p) == 0.0 for p in ("LL", "LL128", "Simple"))
    assert rendezvous_s(cluster, 21e-6, "all_gather", "Ring", "LL128", 1 << 30) == 21e-6


def test_the_eager_limit_counts_the_plugins_8_byte_header():
    """aws-ofi-nccl (v1.20.0 on) sends eagerly only while size + 8 B <= eager_max_size: at 8 KiB a point-to-point
    message of 8,184 B is eager, 8,185 B waits for the control message."""
    cluster = _cluster("aws-p5-hyperpod-x32", 2, EAGER)
    assert EAGER_HEADER_BYTES == 8.0
    assert first_message_bytes(cluster, "send_recv", "", "Simple", 8184) == 8184
    assert rendezvous_s(cluster, 21e-6, "send_recv", None, "Simple", 8184) == 0.0
    assert rendezvous_s(cluster, 21e-6, "send_recv", None, "Simple", 8185) == 21e-6


def test_an_eager_limit_on_a_tcp_card_is_one_line_naming_the_key(tmp_path):
    text = (ROOT / "models" / "nic" / "seed000-tcp-100g.yaml").read_text().replace("  latency:", "  eager_max_size: 8KiB\n  latency:", 1)
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(SimclusterError, match="eager_max_size"):
        load_nic(tmp_path / "bad.yaml")


def test_the_development_check_counts_sources_as_the_held_out_command_does():
    """validation/efa_rendezvous_check.py's held-out count (as shipped) is the one `validate --published nccl
    --held-out-systems` prints: a source group counted once (session 50), not files one by one (reviewB50 item 7)."""
    import re

    from conftest import load_script

    from simcluster.reference.nccl_held_out import excluded_systems, held_out_systems, text

    check = load_script("validation/efa_rendezvous_check.py")
    printed = re.search(r"^sources within 10%: ([0-9]+) of ([0-9]+) ", text(held_out_systems(), excluded_systems()), re.M)
    assert printed and check.held_out(None)["within"] == (int(printed[1]), int(printed[2]))
