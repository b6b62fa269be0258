"""Sweep specs: dotted keys, product and list modes, every point read by the scenario reader, point hashes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from simcluster import dotted
from simcluster.errors import ScenarioError
from simcluster.sweep import spec

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


def collective_sweep(tmp: Path, nodes=(2, 3, 4), per_node=(1, 2), extra: dict | None = None, name="sweep.yaml") -> Path:
    """A multi-node all_reduce at one size: each point is a few milliseconds."""
    doc = {"name": "test-sweep",
           "machine": {"card": str(MODELS / "collective/h200x4-nvlink.yaml"), "gpus_per_node": 4, "nodes": 2,
                       "nic": {"card": str(MODELS / "nic/roce-400g.yaml"), "per_node": 4},
                       "fabric": {"kind": "leaf-spine", "down_ports": 32, "spines": 4}},
           "jobs": [{"kind": "collective_sweep", "op": "all_reduce", "min_size": "1M", "max_size": "1M"}],
           "sweep": {"keys": {"machine.nodes": list(nodes), "machine.nic.per_node": list(per_node)}}}
    doc.update(extra or {})
    path = tmp / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_parse_and_set_dotted_keys():
    assert dotted.parse_key("jobs[0].parallel.tp") == ["jobs", 0, "parallel", "tp"]
    doc = {"machine": {"nodes": 1}, "jobs": [{"parallel": {"tp": 1}}]}
    out = dotted.set_key(doc, "jobs[0].parallel.tp", 4)
    assert out["jobs"][0]["parallel"]["tp"] == 4 and doc["jobs"][0]["parallel"]["tp"] == 1   # the original is untouched
    assert dotted.set_key(doc, "machine.nic.card", "x")["machine"]["nic"] == {"card": "x"}     # a missing mapping is created
    with pytest.raises(ValueError):
        dotted.set_key(doc, "jobs[3].kind", "x")
    with pytest.raises(ValueError):
        dotted.parse_key("machine..nodes")


def test_product_and_list_modes(tmp_path):
    sw = spec.read_sweep(collective_sweep(tmp_path, nodes=(2, 3, 4), per_node=(1, 2)))
    assert len(spec.combinations(sw.spec)) == 6
    path = collective_sweep(tmp_path, nodes=(2, 3), per_node=(1, 2), name="list.yaml")
    doc = yaml.safe_load(path.read_text())
    doc["sweep"]["mode"] = "list"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    combos = spec.combinations(spec.read_sweep(path).spec)
    assert combos == [(("machine.nodes", 2), ("machine.nic.per_node", 1)), (("machine.nodes", 3), ("machine.nic.per_node", 2))]


def test_every_point_is_checked_by_the_scenario_reader(tmp_path):
    sw = spec.read_sweep(collective_sweep(tmp_path, nodes=(2, 0), per_node=(1,)))
    pts = spec.points(sw)
    good, bad = pts
    assert good.scenario is not None and good.scenario.machine.nodes == 2
    assert bad.scenario is None and "machine.nodes" in bad.error and "sweep.yaml" in bad.error


def test_bad_sweep_sections_are_one_line_errors_at_the_key(tmp_path):
    path = collective_sweep(tmp_path, name="a.yaml")
    doc = yaml.safe_load(path.read_text())
    doc["sweep"]["mode"] = "list"                   # 3 nodes values, 2 per_node values
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ScenarioError, match=r"a\.yaml:\d+: sweep.keys: mode: list needs the same number"):
        spec.read_sweep(path)
    doc["sweep"] = {"keys": {"machine.nodes": 4}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ScenarioError, match="expected a non-empty list"):
        spec.read_sweep(path)
    doc["sweep"] = {"keys": {"machine.nodes": [2]}, "extra": 1}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ScenarioError, match="unknown key 'extra'"):
        spec.read_sweep(path)
    del doc["sweep"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ScenarioError, match="no 'sweep:' section"):
        spec.read_sweep(path)


def test_hash_names_what_is_computed(tmp_path):
    a = spec.points(spec.read_sweep(collective_sweep(tmp_path, nodes=(2,), per_node=(1,), name="a.yaml")))[0]
    b = spec.points(spec.read_sweep(collective_sweep(tmp_path, nodes=(2,), per_node=(1,), name="b.yaml")))[0]
    assert a.hash == b.hash                          # same resolved scenario, written in another file
    renamed = spec.points(spec.read_sweep(collective_sweep(tmp_path, nodes=(2,), per_node=(1,), name="n.yaml",
                                                           extra={"name": "other", "description": "words"})))[0]
    assert renamed.hash == a.hash
    seeded = spec.points(spec.read_sweep(collective_sweep(tmp_path, nodes=(2,), per_node=(1,), name="s.yaml",
                                                          extra={"seed": 7})))[0]
    assert seeded.hash != a.hash
    # the same point given twice runs once
    assert len(spec.points(spec.read_sweep(collective_sweep(tmp_path, nodes=(2, 2), per_node=(1,), name="c.yaml")))) == 1
    # an edited card makes a new point (the hash holds every named file's sha256)
    card = tmp_path / "nic.yaml"
    shutil.copy(MODELS / "nic/roce-400g.yaml", card)
    doc = yaml.safe_load((tmp_path / "a.yaml").read_text())
    doc["machine"]["nic"]["card"] = "nic.yaml"
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(doc))
    d = spec.points(spec.read_sweep(tmp_path / "d.yaml"))[0]
    card.write_text(card.read_text().replace("latency: 13.9us", "latency: 14.9us"))
    e = spec.points(spec.read_sweep(tmp_path / "d.yaml"))[0]
    assert e.hash != d.hash


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    from simcluster.cli import main

    plain = tmp_path / "plain.yaml"
    plain.write_text((MODELS.parent / "scenarios/seed000-resnet18-2servers.yaml").read_text())
    assert main(["sweep", str(plain), "-o", str(tmp_path / "r")]) == 2
    assert main(["sweep", str(collective_sweep(tmp_path)), "-o", str(tmp_path / "r"), "--workers", "-1"]) == 2
    assert main(["sweep", str(collective_sweep(tmp_path)), "-o", str(tmp_path / "r"), "--workers", "0", "--chunk", "0"]) == 2
    assert main(["report", str(tmp_path / "nothing"), "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("simcluster: error: ") for line in err)
    assert "variants" in err[0] and "--workers -1" in err[1] and "--chunk 0" in err[2] and "no such results folder" in err[3]


VARIANT_SET = """\
name: v
machine:
  card: {root}/models/collective/h200x4-nvlink.yaml
  gpus_per_node: 8
  nodes: 16
  gpu: {{card: {root}/models/gpu/h100-sxm.yaml}}
  nic: {{card: {root}/models/nic/roce-400g.yaml, per_node: 8}}
  fabric: {{kind: rail-optimized, down_ports: 64, spines: 32, link_latency: 100ns, switch_latency: 600ns}}
variants:
  tp8: {{}}
  tp4-pp2:
    set:
      jobs[0].parallel.tp: 4
      jobs[0].parallel.pp: 2
{extra}jobs:
  - kind: llm_training
    model: {{layers: 32, hidden: 4096, ffn: 14336, heads: 32, kv_heads: 8, vocab: 128256, seq: 8192}}
    parallel: {{tp: 8, dp: 16, zero: 1, sequence_parallel: true}}
    global_batch: 128
    micro_batch: 1
"""


def test_a_variant_sets_dotted_keys_of_the_document(tmp_path):
    """What-if variants share sweep's dotted keys (simcluster/dotted.py): `set:` changes a job key without repeating
    the job list; a key that is not there is a one-line error naming the variant and the key."""
    from simcluster.scenario import load_variants

    path = tmp_path / "v.yaml"
    path.write_text(VARIANT_SET.format(root=ROOT, extra=""))
    (_, base), (_, tp4) = load_variants(path)
    assert (base.jobs[0].parallel.tp, base.jobs[0].parallel.pp) == (8, 1)
    assert (tp4.jobs[0].parallel.tp, tp4.jobs[0].parallel.pp, tp4.jobs[0].parallel.dp) == (4, 2, 16)
    path.write_text(VARIANT_SET.format(root=ROOT, extra="  bad:\n    set:\n      jobs[3].parallel.tp: 4\n"))
    with pytest.raises(ScenarioError, match=r"variants\.bad\.set\.jobs\[3\]\.parallel\.tp: .*no item \[3\]"):
        load_variants(path)


def test_an_error_a_variant_sets_points_at_its_set_line(tmp_path):
    from simcluster.scenario import load_variants

    path = tmp_path / "v.yaml"
    path.write_text(VARIANT_SET.format(root=ROOT, extra="  tp3:\n    set:\n      jobs[0].parallel.tp: 3\n"))
    with pytest.raises(ScenarioError) as err:
        load_variants(path)
    line = path.read_text().splitlines().index("      jobs[0].parallel.tp: 3") + 1
    assert f"v.yaml:{line}" in str(err.value) and "variants.tp3.set.jobs[0].parallel.tp: tp 3 does not divide heads" in str(err.value)
    path.write_text(VARIANT_SET.format(root=ROOT, extra="  loop:\n    set:\n      variants.tp8.machine.nodes: 4\n"))
    with pytest.raises(ScenarioError, match="a variant cannot set variants"):
        load_variants(path)
