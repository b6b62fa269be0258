"""NCCL's plain-tree kernel ceiling in the fabric model (collectives/tree_kernel.py; issue 41, session 42, treereg):
every tree answer names it when it binds ("NCCL 2.28 tuner's tree limit (8 channels x 24 GB/s)"), its table is the
NCCL version's the scenario names (machine.nccl), else the published file's, else the model's (2.28), and a version
the model cannot read is refused in one line. Each test fails on main af2578dd (the tree without the ceiling, no
machine.nccl key)."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from conftest import ROOT

from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.nccl_versions import TABLES_STATED, NcclRelease, stated_release
from simcluster.collectives.tree_kernel import per_channel_GBps, tree_ceiling
from simcluster.errors import ScenarioError
from simcluster.machine_models import build_cluster
from simcluster.reference import nccl
from simcluster.scenario import load_variants

TOGETHER = ROOT / "scenarios/published/b200-ib-8x400g-x64-together.yaml"
S = 32 * 2**30


def _cluster(nodes, path=TOGETHER):
    return build_cluster(load_variants(path, nodes)[0][1].machine)


def _scenario(tmp_path, nccl_version):
    """The Together scenario with its card paths absolute and machine.nccl set."""
    doc = yaml.safe_load(TOGETHER.read_text())
    m = doc["machine"]
    for block in (m, m["gpu"], m["nic"], m["nvls"]):
        block["card"] = str((TOGETHER.parent / block["card"]).resolve())
    m["nccl"] = nccl_version
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("nodes, per_channel", [(2, 42.8), (4, 24.0), (64, 24.0)])
def test_the_tree_is_bound_by_nccls_kernel_and_says_so(nodes, per_channel):
    cluster = _cluster(nodes)
    p = predict_fabric(cluster, "all_reduce", S, "tree")
    ceiling = 8 * per_channel * 1e9                                  # 8 tree channels x tuning.cc's Blackwell 2.28
    assert 0.9 * ceiling <= p.busbw_Bps <= ceiling
    assert p.breakdown["binding_limit"] == f"NCCL 2.28 tuner's tree limit (8 channels x {per_channel:g} GB/s)"


def test_the_ring_does_not_move():
    cluster = _cluster(4)
    keyed = dataclasses.replace(cluster, nccl=NcclRelease((2, 27)))
    assert predict_fabric(cluster, "all_reduce", S, "ring").busbw_Bps == predict_fabric(keyed, "all_reduce", S, "ring").busbw_Bps


def test_the_scenario_names_its_nccl(tmp_path):
    """NCCL 2.27's Blackwell table (2 x Hopper's, 72 GB/s per channel from 3 nodes) does not bind on these nodes: the
    tree is back on its network bytes, about the ring's busbw."""
    old = _cluster(4, _scenario(tmp_path, "2.27.3"))
    assert old.nccl.stated == (2, 27, 3)          # the patch is kept: it keys the tuner tables (nccl_versions.py)
    assert tree_ceiling(old, "Simple") == (8 * 72.0e9, "NCCL 2.27 tuner's tree limit (8 channels x 72 GB/s)")
    tree = predict_fabric(old, "all_reduce", S, "tree")
    assert "tree limit" not in tree.breakdown["binding_limit"]
    assert tree.busbw_Bps == pytest.approx(predict_fabric(old, "all_reduce", S, "ring").busbw_Bps, rel=0.05)
    assert _cluster(4, _scenario(tmp_path, "2.30.7")).nccl.stated == (2, 30, 7)


@pytest.mark.parametrize("bad", ["two.x", "1.9.1", "2.25.1", 2.30, 3, True])   # 2.30 unquoted: YAML's 2.3
def test_a_version_it_cannot_read_is_refused_in_one_line(tmp_path, bad):
    with pytest.raises(ScenarioError) as exc:
        _cluster(4, _scenario(tmp_path, bad))
    assert "machine.nccl" in str(exc.value) and "NCCL" in exc.value.message and "\n" not in exc.value.message


def test_ll128_takes_nccls_ll128_maximum():
    assert per_channel_GBps("blackwell", 4, "LL128", NcclRelease((2, 28))) == 20.0                  # min(24 x 120/128, 20.0)
    assert per_channel_GBps("blackwell", 4, "LL128", NcclRelease((2, 27))) == pytest.approx(58.0)    # min(72 x 120/128, 58.0)
    assert per_channel_GBps("hopper", 2, "Simple", NcclRelease((2, 27))) == per_channel_GBps("hopper", 2, "Simple", NcclRelease((2, 30))) == 41.4


def test_published_rows_take_the_files_stated_nccl():
    """nccl#1801's GB200 forced Tree ran NCCL 2.27.3 (its file's system.nccl; the scenario names none): priced on
    2.27's table it stays within 10% (on 2.28's it would be -62%); Together's 2.28.9 rows on 2.28's."""
    for name in ("nccl-gb200-nvl8-x3-nccl1801", "nccl-b200-ib-x64-together-scaling"):
        rows = nccl.system_rows(nccl.read_nccl_file(ROOT / "calibration/published" / f"{name}.yaml"))
        tree = [r for r in rows if r.detail.startswith("tree/")]
        assert tree and all(abs(r.error) < 0.10 for r in tree), [(r.run, r.error) for r in tree]


def test_scenarios_state_the_nccl_their_published_files_ran():
    """Cold read of session 42: a published file's scenario that names machine.nccl names the version its file states
    (system.nccl, major.minor); Together's two B200 scenarios name theirs (use3a 2.29.7, the x64 cluster 2.28.9)."""
    stated = {}
    for path in sorted((ROOT / "calibration/published").glob("nccl-*.yaml")):
        doc = yaml.safe_load(path.read_text())
        scenario = (doc.get("simcluster") or {}).get("scenario")
        version = (stated_release((doc.get("system") or {}).get("nccl")) or ())[:2]
        if scenario and version:
            stated.setdefault((path.parent / scenario).resolve(), set()).add(version)
    checked = 0
    for scenario, versions in stated.items():
        machine = yaml.safe_load(scenario.read_text())["machine"]
        if "nccl" in machine:
            checked += 1
            assert versions == {stated_release(machine["nccl"])[:2]}, (scenario.name, versions, machine["nccl"])
    for name, version in (("b200-ib-8x400g-x46-together-use3a", "2.29.7"), ("b200-ib-8x400g-x64-together", "2.28.9")):
        assert yaml.safe_load((ROOT / f"scenarios/published/{name}.yaml").read_text())["machine"]["nccl"] == version
    assert checked >= 2


def test_the_default_tree_ceiling_is_main_s_for_blackwell_before_2_28_and_the_opt_in_the_release_s():
    """Cold review B51 item 8: by default (machine.nccl_tables 2.28.3) a Blackwell run stating any NCCL before 2.28 gets
    2 x Hopper's per-channel tree rate, as main 97a9edf7 priced it (77.4 / 82.8 / 72.0 GB/s; LL128 at most 73.4 / 73.4 / 58.0),
    2.22 and 2.24 included; with the opt-in, 2.23.4-2.24.3 ran Hopper's row (no Blackwell index before 2.25.1) and a
    release before 2.23.4 the default tables' (2.28.3's)."""
    for version in ((2, 20), (2, 22, 3), (2, 23, 4), (2, 24, 3), (2, 25, 1), (2, 27, 3), (2, 27)):
        assert [per_channel_GBps("blackwell", n, "Simple", NcclRelease(version)) for n in (1, 2, 4)] == [77.4, 82.8, 72.0]
        assert [per_channel_GBps("blackwell", n, "LL128", NcclRelease(version)) for n in (1, 2, 4)] == pytest.approx(
            [min(s * 120 / 128, ll) for s, ll in zip((77.4, 82.8, 72.0), (73.4, 73.4, 58.0), strict=True)])
    assert per_channel_GBps("blackwell", 4, "Simple", NcclRelease((2, 28, 0))) == per_channel_GBps("blackwell", 4, "Simple", NcclRelease(None)) == 24.0
    hopper = [per_channel_GBps("hopper", n, "Simple", NcclRelease(None)) for n in (1, 2, 4)]
    for version in ((2, 23, 4), (2, 24, 3)):
        assert [per_channel_GBps("blackwell", n, "Simple", NcclRelease(version, TABLES_STATED)) for n in (1, 2, 4)] == hopper
    assert per_channel_GBps("blackwell", 4, "Simple", NcclRelease((2, 22, 3), TABLES_STATED)) == 24.0
    assert [per_channel_GBps("blackwell", n, "Simple", NcclRelease((2, 25, 1), TABLES_STATED)) for n in (1, 2, 4)] == [77.4, 82.8, 72.0]
