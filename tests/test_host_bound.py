"""The host-bound axis of the eager error bands (llm/host_bound.py, issue 44, session 38): the flag read off the model's
own prediction, the same on the answer's side and on the held-out rows' side, and on a registered row whose
registration did not record it."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import replace

import pytest
import yaml
from conftest import ROOT

from simcluster.heldout import eager, eager_regimes
from simcluster.llm import host_bound
from simcluster.llm.framework import MEGATRON, TORCH_AMP
from simcluster.runner.llm_decoder import PRESETS
from simcluster.trust.build import eager_residuals
from simcluster.trust.regime import llm_regime

HOST = "calibration/h200x2-llm-host-2026-11-23"   # the product's H200 host fits (heldout/eager.MODE_HOST)


def test_the_share_is_the_steps_part_that_moves_with_the_host():
    assert host_bound.host_share(0.100, 0.110) == pytest.approx(1.0)     # all of it: 10% slower host, 10% slower step
    assert host_bound.host_share(0.100, 0.1005) == pytest.approx(0.05)
    assert host_bound.host_share(0.100, 0.100) == 0.0
    assert host_bound.is_host_bound(0.5) and not host_bound.is_host_bound(0.49) and not host_bound.is_host_bound(None)
    assert not host_bound.prices_host(MEGATRON) and not host_bound.prices_host(TORCH_AMP)
    slower = host_bound.slower_host(replace(TORCH_AMP, host_kernel_s=30e-6, host_step_s=1e-3, host_bwd_kernel_s=20e-6))
    assert (slower.host_kernel_s, slower.host_step_s, slower.host_bwd_kernel_s) == pytest.approx((33e-6, 1.1e-3, 22e-6))
    with pytest.raises(ValueError, match="positive step"):
        host_bound.host_share(0.0, 0.1)


@pytest.mark.parametrize("preset, mb, mode, bound", [("3b", 3, "ddp", False), ("0.8b", 5, "tp", True)],
                         ids=["gpu-bound 3b DDP", "host-bound 0.8b TP"])
def test_the_flag_from_the_model_on_a_gpu_bound_ddp_step_and_a_host_bound_tp_step(preset, mb, mode, bound):
    """A 3b DDP step at micro-batch 3 (the two set's) keeps the GPU busy: only the per-step host cost moves with the host;
    DTensor TP issues ~3x the kernels at its own host cost per kernel, and the host sets the 0.8b step (twohost's)."""
    got = eager_regimes.regime_predict(preset, mb, mode, "h200")
    share = got["host_share"]
    assert (share < 0.2) if not bound else (share > 0.7)   # far from the 1/2 line either way: the form, not the threshold
    key = eager_residuals([{"tp": 2 if mode == "tp" else 1, "pp": 1, "zero": 0, "gpus": 2, "bundle": "b", "label": "l",
                            "transport": "nvlink", "measured_s": 1.0, "predicted_s": 1.0,
                            "host_bound": host_bound.is_host_bound(share)}])[0].regime
    assert key == f"llm | PyTorch eager | {mode.upper()}{'+host-bound' if bound else ''} | bf16"


def _tp_layout(par=None):
    from simcluster.cards import load_collective
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.comm import Network
    from simcluster.llm.spec import ParallelSpec

    par = par or ParallelSpec(tp=2)
    model = eager.model_of({"model": PRESETS["0.8b"]}, 2048)
    gpu, _ = load_gpu(ROOT / eager.H200)
    net = Network(load_collective(ROOT / eager.CARDS[("nvlink", 2)])[0], 2)
    return model, par, gpu, net


def test_without_a_host_fit_the_step_is_unpriced_and_the_flag_is_the_default_fits():
    """framework torch without host: prices no host (no share, the step unpriced, EAGER_HOST_UNPRICED), but its regime
    flag comes from the default host fits (host_bound.DEFAULT_HOST, the folder the held-out rows are flagged with), so a
    NVLink TP answer lands in TP+host-bound as its rows do; a GPU-bound DDP answer stays GPU-bound."""
    from simcluster.llm import eager as torch_eager
    from simcluster.llm.caveats import EAGER_HOST_FLAGGED, EAGER_HOST_UNPRICED
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec, ParallelSpec

    assert eager.MODE_HOST == host_bound.DEFAULT_HOST   # the rows' flag and the answers' from one folder
    model, par, gpu, net = _tp_layout()
    bare = predict_llm(model, par, BatchSpec(5, 5), gpu, net, 2, trace=False, framework=torch_eager.torch_framework(par))
    assert bare.host_share is None and bare.regime.key == "llm | PyTorch eager | TP+host-bound | bf16"
    folder = "calibration/h200x2-llm-host-2026-11-23"
    assert EAGER_HOST_UNPRICED.format(framework=bare.framework) + EAGER_HOST_FLAGGED.format(folder=folder) in bare.caveats
    hosts = torch_eager.fit_modes(ROOT / HOST)
    fitted = predict_llm(model, par, BatchSpec(5, 5), gpu, net, 2, trace=False, framework=torch_eager.torch_framework(par, hosts))
    assert fitted.step_time_s > 1.5 * bare.step_time_s   # the bare step stays unpriced: the flag moved, not the step
    assert fitted.regime.key == "llm | PyTorch eager | TP+host-bound | bf16"
    assert fitted.caveats[0].startswith("torch-dtensor-tp: host-bound in the model (")
    assert "calibration/h200x2-eager-hostbound-noise-2026-11-29" in fitted.caveats[0] and "14% under FSDP2" in fitted.caveats[0]
    ddp = ParallelSpec(dp=2)
    gpu_bound = predict_llm(model, ddp, BatchSpec(10, 5), gpu, net, 2, trace=False, framework=torch_eager.torch_framework(ddp))
    assert gpu_bound.regime.key == "llm | PyTorch eager | DDP | bf16"
    assert EAGER_HOST_UNPRICED.format(framework=gpu_bound.framework) in gpu_bound.caveats


def test_a_flagged_answer_carries_the_share_its_flag_was_read_from():
    """No host priced: host_share stays null, but the share the flag came from (the default fits') and their folder
    travel beside it in the job document; the same share as the flag framework's own prediction; a priced answer has
    none (its flag is its own host_share)."""
    from simcluster.llm import eager as torch_eager
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec

    model, par, gpu, net = _tp_layout()
    bare = predict_llm(model, par, BatchSpec(5, 5), gpu, net, 2, trace=False, framework=torch_eager.torch_framework(par))
    doc = bare.to_json()
    assert doc["host_share"] is None and doc["flag_host_folder"] == "calibration/h200x2-llm-host-2026-11-23"
    flag_fw = host_bound.flag_framework(torch_eager.torch_framework(par), par)
    own = predict_llm(model, par, BatchSpec(5, 5), gpu, net, 2, trace=False, framework=flag_fw)
    assert doc["flag_host_share"] == pytest.approx(own.host_share, rel=1e-12)
    assert host_bound.is_host_bound(doc["flag_host_share"])   # the answer's regime is TP+host-bound (test above)
    hosts = torch_eager.fit_modes(ROOT / HOST)
    fitted = predict_llm(model, par, BatchSpec(5, 5), gpu, net, 2, trace=False, framework=torch_eager.torch_framework(par, hosts))
    assert fitted.host_share is not None and fitted.flag_host_share is None and fitted.flag_host_folder is None


def test_the_share_is_read_on_the_printed_step_and_travels_in_the_json():
    """host_share = d / (0.1 x step) on the step as printed (the pipeline's plus the stragglers and OS jitter), the same
    number in the job document as in the caveat."""
    from simcluster.llm import eager as torch_eager
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec, ParallelSpec

    model, par, gpu, net = _tp_layout(ParallelSpec(dp=2))
    fw = torch_eager.torch_framework(par, torch_eager.fit_modes(ROOT / HOST))
    r = predict_llm(model, par, BatchSpec(2, 1), gpu, net, 2, trace=False, framework=fw)
    slower = predict_llm(model, par, BatchSpec(2, 1), gpu, net, 2, trace=False, framework=host_bound.slower_host(fw))
    assert r.breakdown["stragglers"] > 0
    assert r.host_share == pytest.approx((slower.step_time_s - r.step_time_s) / (host_bound.HOST_SLOWER * r.step_time_s), rel=1e-9)
    assert r.to_json()["host_share"] == pytest.approx(r.host_share)


def test_the_axis_is_eager_pytorchs_only():
    assert llm_regime("torch-amp", 2, 1, 1, 1, False, "bf16", 4, host_bound=True).key == "llm | PyTorch eager | TP x DP+host-bound | bf16"
    assert llm_regime("torch-amp", 1, 1, 1, 1, False, "bf16", 1, "sac-op", True).key == "llm | PyTorch eager | single+sac-op+host-bound | bf16"
    assert llm_regime("megatron", 8, 1, 1, 1, False, "bf16", 8, host_bound=True).key == "llm | Megatron/NeMo | TP | bf16"


def _answer_regimes(tmp_path, layouts: dict[str, tuple[str, dict, int]]) -> dict[str, str]:
    """The regime key `simcluster run --json` gives each layout (preset, parallel block, micro-batch) on 2 x H200 with
    the product's host fits: the answer's side."""
    from simcluster.cli import main

    def job(preset, parallel, mb):
        m = PRESETS[preset]
        model = {"layers": m["layers"], "hidden": m["hidden"], "ffn": m["ffn"], "heads": m["heads"], "kv_heads": m["kv_heads"],
                 "vocab": m["vocab"], "seq": 2048, "tied_embeddings": bool(m["tied"])}
        return {"kind": "llm_training", "model": model, "parallel": parallel, "global_batch": mb * parallel.get("dp", 1),
                "micro_batch": mb, "framework": {"name": "torch", "host": str(ROOT / HOST)}}

    (first, *rest) = layouts
    scenario = {"name": "host-bound-axis", "machine": {"card": str(ROOT / eager.CARDS[("nvlink", 2)]), "gpus_per_node": 2,
                "nodes": 1, "gpu": {"card": str(ROOT / eager.H200)}}, "jobs": [job(*layouts[first])],
                "variants": {first: {}, **{name: {"jobs": [job(*layouts[name])]} for name in rest}}}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["run", str(path), "--json"]) == 0
    return {v["variant"]: v["jobs"][0]["validation"]["regime"] for v in json.loads(buf.getvalue())["variants"]}


def test_the_answer_and_the_held_out_row_of_one_layout_land_in_one_regime(tmp_path):
    """The two set's registered rows (2 x H200: 3b DDP at micro-batch 3, GPU-bound; 2b TP at 1, host-bound) and the
    answers to the same layouts: one key each, through the rows' reader and through `run`."""
    rows = {r["label"]: r for r in eager_regimes.registered_rows(ROOT / eager.TWO_BUNDLE)}
    row_keys = {name: eager_residuals([rows[label]])[0].regime
                for name, label in (("ddp", "3b ddp seq 2048 mb 3"), ("tp", "2b tp seq 2048 mb 1"))}
    answers = _answer_regimes(tmp_path, {"ddp": ("3b", {"dp": 2}, 3), "tp": ("2b", {"tp": 2}, 1)})
    assert answers == row_keys == {"ddp": "llm | PyTorch eager | DDP | bf16", "tp": "llm | PyTorch eager | TP+host-bound | bf16"}


def _registered_bundle(tmp_path, share: float | None = None):
    """A one-run registered bundle: the two set's 2b TP registration (its yaml records no host share) and a run of it;
    `share`: written into the registered prediction as a later registration records it."""
    reg = next(r for r in yaml.safe_load((ROOT / eager.TWO_BUNDLE / "registered.yaml").read_text())["runs"]
               if (r["preset"], r["mode"]) == ("2b", "tp"))
    assert "host_share" not in reg["predicted"]["h200"]
    if share is not None:
        reg["predicted"]["h200"]["host_share"] = share
    doc = {"tool": "llm-step", "mode": "tp", "world_size": 2, "device": {"name": "NVIDIA H200"}, "model": {"preset": "2b"},
           "shapes": [{"seq": reg["seq"], "micro_batch": reg["micro_batch"], "status": "ok", "median_step_s": 0.5}]}
    (tmp_path / "registered.yaml").write_text(yaml.safe_dump({"runs": [reg]}))
    (tmp_path / "runs").mkdir(exist_ok=True)
    (tmp_path / "runs" / "tp.json").write_text(json.dumps(doc))
    return reg


def test_a_registered_row_whose_yaml_lacks_the_share_takes_todays_models_for_its_flag_only(tmp_path):
    reg = _registered_bundle(tmp_path)
    (row,) = eager_regimes.registered_rows(tmp_path)
    today = eager_regimes.regime_predict("2b", reg["micro_batch"], "tp", "h200", microbatches=reg["microbatches"], seq=reg["seq"])
    assert row["host_flag"] == "today's model" and row["host_share"] == today["host_share"] and row["host_bound"]
    assert row["predicted_s"] == pytest.approx(reg["predicted"]["h200"]["step_ms"] / 1e3)   # the residual: the registered step
    _registered_bundle(tmp_path, share=0.1)   # a registration that recorded its own share: that one decides
    (row,) = eager_regimes.registered_rows(tmp_path)
    assert row["host_flag"] == "registered" and row["host_share"] == 0.1 and not row["host_bound"]
    assert eager_residuals([row])[0].regime == "llm | PyTorch eager | TP | bf16"


def test_a_registered_rows_flag_takes_the_host_folder_its_registration_names(tmp_path):
    """Today's share for the flag is read with the folder the registration predicted its held-out step with
    (calibration.host.h200; MODE_HOST for every registration so far), not always MODE_HOST; a folder named but absent
    is one line naming the file and key."""
    from simcluster.errors import SimclusterError

    reg = _registered_bundle(tmp_path)
    other = eager.MESH_HOST   # the meshes2 lease's host runs (tp among them)
    doc = yaml.safe_load((tmp_path / "registered.yaml").read_text())
    doc["calibration"] = {"host": {"h200": str(other.relative_to(ROOT))}}
    (tmp_path / "registered.yaml").write_text(yaml.safe_dump(doc))
    (row,) = eager_regimes.registered_rows(tmp_path)
    args = ("2b", reg["micro_batch"], "tp", "h200")
    kw = {"microbatches": reg["microbatches"], "seq": reg["seq"]}
    theirs = eager_regimes.regime_predict(*args, **kw, base_host=other)["host_share"]
    assert row["host_share"] == theirs != eager_regimes.regime_predict(*args, **kw)["host_share"]
    doc["calibration"]["host"]["h200"] = "calibration/no-such-host"
    (tmp_path / "registered.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(SimclusterError, match=r"registered.yaml: calibration.host.h200: 'calibration/no-such-host'"):
        eager_regimes.registered_rows(tmp_path)
    shipped = [yaml.safe_load((ROOT / b / "registered.yaml").read_text()) for b in eager.REGISTERED]
    assert {eager_regimes.registered_host(d, ROOT / "r.yaml") for d in shipped} == {eager.MODE_HOST}


def test_every_nvlink_tp_row_is_host_bound_in_the_model():
    """The lead's diagnosis (session 38): DTensor TP steps are host-bound at every size measured over NVLink; the model's
    own flag agrees on every such held-out row (over sockets the all-reduces set the step instead)."""
    rows = [r for r in eager_regimes.held_out_rows() if r["tp"] > 1]
    nvlink = [r for r in rows if r["transport"] == "nvlink"]
    assert len(nvlink) >= 40 and all(r["host_bound"] for r in nvlink)
    assert all(r["host_flag"] in ("registered", "today's model") for r in eager_regimes.held_out_rows())


def test_an_eager_regimes_gpu_label_other_than_h200_or_h100_is_a_one_line_error():
    """'H200' priced an H100 silently until session 40 (regime_predict's card and host chose by `== "h200"`)."""
    from simcluster.errors import SimclusterError
    with pytest.raises(SimclusterError, match="gpu label 'H200'"):
        eager_regimes.regime_predict("0.5b", 2, "fsdp", "H200", seq=5120)
