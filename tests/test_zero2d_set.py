"""Session 47's zero2d set (calibration/h200x2-zero2d-2026-11-30, validation/zero2d.py): FSDP2 ZeRO-2's forward
re-gather measured directly, zero 2 with FSDP2's default reshard after backward (regather) against the same with
set_reshard_after_backward(False) between micro-batches (gathered). The runner's --reshard-after-backward flag (refused
outside mode fsdp, recorded, and the step calling set_reshard_after_backward on every micro-batch, true only on the
last), the registration against a fresh --register at its commit, the device script against the registered rows, the
shape new to calibration/, synthetic runs through rule R (ADOPT at the regather's column, REJECT at the product's,
UNDECIDED between) and the error-band rows."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import types

import pytest
import test_nosync_set
import test_zero2_set
import test_zero2c_set
from conftest import ROOT, load_script, registered_before_adopt2g

BUNDLE = ROOT / "calibration" / "h200x2-zero2d-2026-11-30"
REGATHER, GATHERED = "8b-2912x1-regather", "8b-2912x1-gathered"


def script():
    return load_script("validation/zero2d.py")


def synthetic(tmp_path, scale=None, jitter=(0.002, -0.002, 0.0, 0.001), drop=()):
    """test_zero2_set.synthetic on this bundle (a GPU-bound set's small jitter), the gathered processes' documents
    recording fsdp_reshard_after_backward false as the runner does."""
    bundle = test_zero2_set.synthetic(tmp_path, scale, jitter, drop, source=BUNDLE)
    for path in (bundle / "runs").glob(f"{GATHERED}-r*.json"):
        text = path.read_text()
        head, body = text.split("\n", 1)
        path.write_text(head + "\n" + json.dumps(json.loads(body) | {"fsdp_reshard_after_backward": False}))
    return bundle


def predicted() -> dict:
    return {r["name"]: r["predicted"] for r in test_nosync_set.registered(BUNDLE)["rows"]}


def parser():
    from simcluster.runner import llm_accum

    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="single")
    llm_accum.add_argument(ap)
    return ap


def test_the_runners_reshard_after_backward_flag_is_fsdp_only_and_recorded():
    from simcluster.runner import llm_accum

    with pytest.raises(SystemExit, match="--reshard-after-backward false: needs --mode fsdp"):
        llm_accum.check(parser().parse_args(["--mode", "ddp", "--reshard-after-backward", "false"]))
    # one micro-batch: the flag would do nothing yet be recorded (final read, session 47): refused
    with pytest.raises(SystemExit, match="--grad-accum >= 2"):
        llm_accum.check(parser().parse_args(["--mode", "fsdp", "--reshard-after-backward", "false"]))
    args = parser().parse_args(["--mode", "fsdp", "--grad-accum", "4", "--reshard-after-forward", "false",
                                "--reshard-after-backward", "false"])
    assert llm_accum.check(args) == 4
    assert llm_accum.record(args, 4)["fsdp_reshard_after_backward"] is False
    assert llm_accum.record(parser().parse_args(["--mode", "fsdp"]), 1) == {"fsdp_reshard_after_backward": True}


class FakeFSDP:
    """An FSDP2 module's accumulation switches and a forward, recording the calls in order."""

    def __init__(self):
        self.calls = []

    def set_reshard_after_backward(self, value):
        self.calls.append(("reshard_after_backward", value))

    def set_requires_gradient_sync(self, value):
        self.calls.append(("sync", value))

    def __call__(self, x, y):
        self.calls.append(("forward",))
        return Loss(self.calls)


class Loss:
    """A micro-batch's loss: divided by the micro-batch count, its backward recorded."""

    def __init__(self, calls):
        self.calls = calls

    def __truediv__(self, n):
        return self

    def backward(self):
        self.calls.append(("backward",))


class Chunked:
    """A batch tensor's chunk(n): n micro-batches."""

    def chunk(self, n):
        return [None] * n


@pytest.mark.parametrize("keep", [True, False])
def test_the_step_keeps_the_parameters_gathered_until_the_last_micro_batch(keep):
    from simcluster.runner import llm_accum

    model = FakeFSDP()
    opt = types.SimpleNamespace(step=lambda: model.calls.append(("step",)), zero_grad=lambda set_to_none: None)
    torch = types.SimpleNamespace(autocast=lambda *a, **k: contextlib.nullcontext(), bfloat16=None)
    device = types.SimpleNamespace(type="cuda")
    llm_accum.step_maker(torch, model, opt, device, True, 4, False, "fsdp", keep_gathered=keep)(Chunked(), Chunked())()
    switches = [c[1] for c in model.calls if c[0] == "reshard_after_backward"]
    assert switches == ([False, False, False, True] if keep else []), model.calls
    assert [c[0] for c in model.calls].count("forward") == 4 and model.calls[-1] == ("step",)
    if keep:   # each switch set before its micro-batch's forward
        assert [c[0] for c in model.calls[:3]] == ["reshard_after_backward", "forward", "backward"]


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg, p = registered_before_adopt2g(script(), BUNDLE, tmp_path, monkeypatch), predicted()
    assert p[REGATHER]["step_ms_regather"] / p[GATHERED]["step_ms"] > 1.02, p   # the gap above the 2% floor
    assert p[REGATHER]["step_ms"] == p[GATHERED]["step_ms"] and p[GATHERED]["host_share"] < 0.1
    assert p[REGATHER]["peak_mem_GiB"] == p[GATHERED]["peak_mem_GiB"]   # both hold every layer gathered in the backward
    assert [r["processes"] for r in reg["rows"]] == [4, 4] and all(r["mode"] == "fsdp-zero2" for r in reg["rows"])
    assert {r["name"]: (r["reshard_after_forward"], r["reshard_after_backward"]) for r in reg["rows"]} == {
        REGATHER: (False, True), GATHERED: (False, False)}


def test_the_device_script_runs_the_registered_rows_abba():
    text = (BUNDLE / "device_run.sh").read_text()
    assert (f'--warmup 2 --steps {script().TIMED_STEPS} --profile 0 --mode fsdp --grad-accum 4 --reshard-after-forward '
            'false"') in text
    assert '[ "$1" = gathered ] && flag="--reshard-after-backward false"' in text and "--preset 8b --shapes 2912:1" in text
    calls = re.findall(r"^one (regather|gathered) (\d)$", text, re.M)
    assert [v for v, _ in calls] == ["regather", "gathered", "gathered", "regather", "regather", "gathered", "gathered",
                                     "regather"]
    rows = test_nosync_set.registered(BUNDLE)["rows"]
    assert {f"8b-2912x1-{v}-r{k}" for v, k in calls} == {f"{r['process']}-r{k}" for r in rows
                                                          for k in range(1, r["processes"] + 1)}
    assert "validation/zero2d.py" in text and "validation/zero2b.py" in text and "validation/zero2.py" in text   # hashed


def test_the_registered_shape_is_new_to_calibration():
    test_nosync_set.assert_new_to_calibration(BUNDLE)


def test_runs_at_the_product_s_step_reject_the_regather_and_at_its_column_adopt_it(tmp_path):
    test_zero2c_set.assert_rule_r_both_ways(script(), synthetic, tmp_path, REGATHER, predicted()[REGATHER],
                                            "REJECT | 8b 2912:1: REJECT: regather / gathered measured")


def test_a_process_that_resharded_after_backward_is_not_a_gathered_one(tmp_path):
    bundle = test_zero2_set.synthetic(tmp_path, None, (0.0,), (), source=BUNDLE)   # no fsdp_reshard_after_backward key
    out = script().read_out(bundle)
    assert len(out["left"]) == 4 and all("not reshard_after_backward False" in line for line in out["left"]), out["left"]
    assert out["verdicts"]["R"].startswith("NO DATA")
    bare = synthetic(tmp_path / "bare")
    text = (bare / "registered.yaml").read_text()
    (bare / "registered.yaml").write_text(re.sub(r"\n    step_ms_regather: [\d.]+", "", text))
    assert script().main([str(bare)]) == 1


def test_the_power_reads_the_zero2c_set_s_processes():
    sd, dof = script().development()
    assert dof == 5 and 0.001 < sd < 0.01, (sd, dof)


def test_the_set_enters_the_error_bands_as_fsdp_zero2_rows(tmp_path):
    from simcluster.heldout import eager_nosync, step_sets

    assert eager_nosync.ZERO2D_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_nosync.ZERO2D_BUNDLE
    assert eager_nosync.held_out_rows(tmp_path) == []
    got = eager_nosync.held_out_rows(synthetic(tmp_path / "a", {REGATHER: 1.1}))
    assert len(got) == 2 and [r["zero"] for r in got] == [2, 2]
    a = next(r for r in got if "regather" in r["label"])
    assert math.isclose(a["measured_s"], predicted()[REGATHER]["step_ms"] / 1e3 * 1.1, rel_tol=0.01)
    assert a["host_bound"] is False
