"""The Hugging Face hook term in the product (session 55, after hfhook55's held-out reads): a scenario's
`framework: {name: hf-*, host: FOLDER}` prices the HF frameworks' host as llm/hf_hooks' term on the folder's `single` fit
(llm/job._framework_spec -> hf_hooks.with_hooks), the same price the registered read-out's term-on column holds; without
`host` nothing moves; the caveat says which; a folder without single runs is a one-line error at the key."""

from __future__ import annotations

import pathlib
import textwrap

import pytest
import yaml
from conftest import load_script

from simcluster.build import llm_prediction
from simcluster.errors import ScenarioError
from simcluster.llm import hf_hooks
from simcluster.llm.comm import Network
from simcluster.llm.framework import FRAMEWORKS
from simcluster.llm.job import _framework_spec
from simcluster.llm.predict import predict_llm
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.scenario import load

ROOT = pathlib.Path(__file__).resolve().parent.parent
HOST = ROOT / "calibration" / "h200x2-llm-host-2026-11-23"
HFHOOK = ROOT / "calibration" / "h200x1-hfhook55-2026-12-01" / "registered.yaml"

SCENARIO = """\
name: t
machine:
  card: {root}/models/collective/h200x2-primitives.yaml
  gpus_per_node: 2
  gpu: {{card: {root}/models/gpu/h200-sxm-interleaved.yaml}}
jobs:
  - kind: llm_training
    model: {{layers: 16, hidden: 1536, ffn: 4096, heads: 12, kv_heads: 4, vocab: 32000, seq: 2048}}
    parallel: {{dp: 2, zero: 3}}
    global_batch: 4
    micro_batch: 2
    framework: {framework}
"""


def _scenario(tmp_path, framework: str) -> pathlib.Path:
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(SCENARIO.format(root=ROOT, framework=framework)))
    return path


def _predict(tmp_path, framework: str):
    sc = load(_scenario(tmp_path, framework))
    return llm_prediction(sc.machine, sc.jobs[0], trace=False)


@pytest.mark.parametrize("row", ["s0.7b-mb2-fsdp1", "s1.9b-mb1-zero3"])
def test_the_product_path_gives_the_registered_term_on_price(row):
    """The product's own path (job._framework_spec with host fits) prices a held-out row of hfhook55 as its registered
    P_on (the term switched on in the read-out, at registration), with the module switch left OFF."""
    from simcluster.heldout.eager_registered import _flag_hosts
    script = load_script("validation/hfhook55.py")
    SIZES, POINTS = script.SIZES, script.POINTS
    reg = next(r for r in yaml.safe_load(HFHOOK.read_text())["rows"] if r["name"] == row)
    hosts, gpu = _flag_hosts()
    layers, hidden, ffn, heads, kv_heads, vocab = SIZES[reg["size"]]
    mb, seq = POINTS[reg["point"]]
    model, batch, par = TransformerSpec(layers, hidden, ffn, heads, kv_heads, vocab, seq, tied_embeddings=False), BatchSpec(mb, mb), \
        ParallelSpec(zero=3)
    fw = _framework_spec(reg["framework"], model, par, batch, hosts, False)
    step = predict_llm(model, par, batch, gpu, Network(None, 1), 1, trace=False, framework=fw).step_time_s
    assert not hf_hooks.is_on()
    assert step == pytest.approx(reg["p_on_s"], rel=1e-6) and step > 2 * reg["p_s"]
    assert _framework_spec(reg["framework"], model, par, batch, {}, False) is FRAMEWORKS[reg["framework"]]


@pytest.mark.parametrize("name", ["hf-fsdp1", "hf-deepspeed", "hf-deepspeed-overlap"])
def test_a_host_folder_prices_the_hooks_and_the_caveat_says_so(tmp_path, name):
    without = _predict(tmp_path, name)
    priced = _predict(tmp_path, f"{{name: {name}, host: {HOST}}}")
    assert priced.step_time_s > without.step_time_s and priced.host_share is not None and without.host_share is None
    assert any("priced on framework.host's single fit" in c for c in priced.caveats)
    assert any("not priced: the host time of their hooks" in c and f"{{name: {name}, host: <folder>}}" in c
               for c in without.caveats)


def test_a_host_folder_without_single_runs_is_a_one_line_error(tmp_path):
    folder = tmp_path / "host"
    folder.mkdir()
    for layers in (2, 8):
        (folder / f"ddp-L{layers}.json").write_text((HOST / f"ddp-L{layers}.json").read_text())
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.framework\.host: no single runs at two or more layer counts") as e:
        load(_scenario(tmp_path, f"{{name: hf-fsdp1, host: {folder}}}"))
    assert "\n" not in str(e.value)
    with pytest.raises(ScenarioError, match=r"framework megatron is never host-bound .* torch and hf-deepspeed"):
        load(_scenario(tmp_path, f"{{name: megatron, host: {HOST}}}"))
