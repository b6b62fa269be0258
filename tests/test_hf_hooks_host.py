"""The Hugging Face hook term in the product (session 55, after hfhook55's held-out reads): a scenario's
`framework: {name: hf-*, host: FOLDER}` prices the HF frameworks' host as llm/hf_hooks' term on the folder's `single` fit
(llm/job._framework_spec -> hf_hooks.with_hooks), the same price the registered read-out's term-on column holds; without
`host` nothing moves; the caveat says which; a folder without single runs is a one-line error at the key."""

from __future__ import annotations

import pathlib

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

SMALL = {"layers": 16, "hidden": 1536, "ffn": 4096, "heads": 12, "kv_heads": 4, "vocab": 32000, "seq": 2048}


def _scenario(tmp_path, framework, model=SMALL, parallel=None, gpus: int = 2, mb: int = 2) -> pathlib.Path:
    """One llm_training job on gpus x H200 (the card the registrations used), written as YAML; framework a name or a
    {name, host} mapping."""
    parallel = {"dp": gpus, "zero": 3} if parallel is None else parallel
    doc = {"name": "t", "machine": {"card": str(ROOT / "models/collective/h200x2-primitives.yaml"), "gpus_per_node": gpus,
                                    "gpu": {"card": str(ROOT / "models/gpu/h200-sxm-interleaved.yaml")}},
           "jobs": [{"kind": "llm_training", "model": model, "parallel": parallel, "global_batch": mb * parallel.get("dp", 1),
                     "micro_batch": mb, "framework": framework}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _predict(tmp_path, framework):
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


@pytest.mark.parametrize("row", ["s0.7b-mb2-fsdp1", "s1.9b-mb1-zero3"])
def test_a_scenario_with_a_host_folder_gives_the_registered_term_on_price(tmp_path, row):
    """The whole product path (the scenario reader's framework.host, job._host_fits, _framework_spec, predict) at a held-out
    row's shape on the card and the host folder its registration used (FLAG_CARD; the diag folder holds FLAG_HOSTS'
    single runs) gives the registered P_on (cold review s56 item 8: a halved fit now fails here)."""
    script = load_script("validation/hfhook55.py")
    reg = next(r for r in yaml.safe_load(HFHOOK.read_text())["rows"] if r["name"] == row)
    layers, hidden, ffn, heads, kv_heads, vocab = script.SIZES[reg["size"]]
    mb, seq = script.POINTS[reg["point"]]
    model = {"layers": layers, "hidden": hidden, "ffn": ffn, "heads": heads, "kv_heads": kv_heads, "vocab": vocab, "seq": seq,
             "tied_embeddings": False}
    host = str(ROOT / "calibration/h200x1-llm-diag-2026-11-29/host")
    sc = load(_scenario(tmp_path, {"name": reg["framework"], "host": host}, model, {"zero": 3}, gpus=1, mb=mb))
    assert llm_prediction(sc.machine, sc.jobs[0], trace=False).step_time_s == pytest.approx(reg["p_on_s"], rel=1e-6)


@pytest.mark.parametrize("name, zero", [("hf-deepspeed", 2), ("hf-deepspeed-overlap", 1)])
def test_deepspeeds_zero3_hooks_are_not_priced_below_zero3(tmp_path, name, zero):
    """Cold review s56 item 1: h_z was measured at ZeRO-3 (per-module fetch / release); ZeRO-1/2 run other hooks, so
    framework.host is refused there in one line at parallel.zero, and without host the caveat says unmeasured."""
    par = {"dp": 2, "zero": zero}
    with pytest.raises(ScenarioError, match=rf"jobs\[0\]\.parallel\.zero: framework {name} with framework.host") as e:
        load(_scenario(tmp_path, {"name": name, "host": str(HOST)}, parallel=par))
    assert "\n" not in str(e.value)
    sc = load(_scenario(tmp_path, name, parallel=par))
    r = llm_prediction(sc.machine, sc.jobs[0], trace=False)
    assert any("not priced and not measured: the host time of their hooks (DeepSpeed ZeRO-1/2's" in c for c in r.caveats)
    assert not any("ZeRO-3 fetches" in c for c in r.caveats)


@pytest.mark.parametrize("name", ["hf-fsdp1", "hf-deepspeed", "hf-deepspeed-overlap"])
def test_a_host_folder_prices_the_hooks_and_the_caveat_says_so(tmp_path, name):
    without = _predict(tmp_path, name)
    priced = _predict(tmp_path, {"name": name, "host": str(HOST)})
    assert priced.step_time_s > without.step_time_s and priced.host_share is not None and without.host_share is None
    assert any("priced on framework.host's single fit" in c and "does not follow the folder's host" in c
               for c in priced.caveats)
    assert any("not priced: the host time of their hooks" in c and f"{{name: {name}, host: <folder>}}" in c
               for c in without.caveats)


def test_a_host_folder_without_single_runs_is_a_one_line_error(tmp_path):
    folder = tmp_path / "host"
    folder.mkdir()
    for layers in (2, 8):
        (folder / f"ddp-L{layers}.json").write_text((HOST / f"ddp-L{layers}.json").read_text())
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.framework\.host: no single runs at two or more layer counts") as e:
        load(_scenario(tmp_path, {"name": "hf-fsdp1", "host": str(folder)}))
    assert "\n" not in str(e.value)
    with pytest.raises(ScenarioError, match=r"framework megatron is never host-bound .* torch and hf-deepspeed"):
        load(_scenario(tmp_path, {"name": "megatron", "host": str(HOST)}))
