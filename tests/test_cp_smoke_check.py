"""The eager CP bundle's guards before its first device run (calibration/h200x2-llm-eager-cp-2026-11-29): the smoke's
gate studies/cp_smoke_check.py fails a synthetic trace without flash / AllGather / SendRecv kernels and a cp loss off the
single-GPU one and passes a true smoke; the MHA smoke runs first without gating; the runner's llm_cp gathers each rank's
loss, leaves a run at another rank count out of the registered read, takes its options module
from context_parallel's own, and its step gives the model the very buffers context_parallel shards (fake torch)."""

from __future__ import annotations

import gzip
import json
import sys
import types

from conftest import ROOT, load_script

CHECK = load_script("studies/cp_smoke_check.py")


def _kernel(name):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": 0, "dur": 5}


GOOD = [_kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(Flash_fwd_params)"),
        _kernel("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<...>(Flash_bwd_params)"),
        _kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
        _kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"),
        _kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
        {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_dot_product_flash_attention", "ts": 0, "dur": 9}]


def _docs(losses, single):
    cp = {"tool": "llm-step", "shapes": [{"status": "ok", "loss": losses[0], "ranks": [{"rank": r, "loss": x} for r, x in enumerate(losses)]}]}
    return cp, {"tool": "llm-step", "shapes": [{"status": "ok", "loss": single}]}


def test_kernel_counts_of_a_synthetic_trace():
    assert CHECK.kernel_counts(GOOD) == {"flash": 2, "nccl_allgather": 1, "nccl_sendrecv": 1}
    # cuDNN / efficient attention and a DDP-only run (AllReduce, no ring): nothing of CP's (the cpu_op is not a kernel)
    bad = [_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop"), _kernel("fmha_cutlassF_bf16_aligned_64x64_rf_sm80"),
           GOOD[4], GOOD[5]]
    assert CHECK.kernel_counts(bad) == {"flash": 0, "nccl_allgather": 0, "nccl_sendrecv": 0}


def test_the_gate_passes_a_true_smoke_and_fails_each_fault(tmp_path):
    ok = CHECK.kernel_counts(GOOD)
    assert CHECK.problems(*_docs([6.251, 6.239], 6.2452), ok, 1e-2) == []
    assert any("loss" in p for p in CHECK.problems(*_docs([6.30, 6.28], 6.245), ok, 1e-2))
    assert any("no loss" in p for p in CHECK.problems(*_docs([6.25, None], 6.245), ok, 1e-2))
    no_ring = CHECK.kernel_counts([k for k in GOOD if "AllGather" not in k["name"] and "SendRecv" not in k["name"]])
    found = CHECK.problems(*_docs([6.25, 6.24], 6.245), no_ring, 1e-2)
    assert found == ["no nccl_allgather kernel in rank 0's trace", "no nccl_sendrecv kernel in rank 0's trace"]
    # end to end through main: the files device_run.sh gives it
    cp, single = _docs([6.25, 6.24], 6.245)
    (tmp_path / "cp.json").write_text("llm-step: log line\n" + json.dumps(cp))
    (tmp_path / "one.json").write_text(json.dumps(single))
    with gzip.open(tmp_path / "t.json.gz", "wt") as f:
        json.dump({"traceEvents": GOOD}, f)
    args = [str(tmp_path / n) for n in ("cp.json", "one.json", "t.json.gz")]
    assert CHECK.main(args) == 0
    with gzip.open(tmp_path / "t.json.gz", "wt") as f:
        json.dump({"traceEvents": GOOD[2:]}, f)
    assert CHECK.main(args) == 1
    assert CHECK.main(args[:2] + [str(tmp_path / "missing.json.gz")]) == 1


def test_gather_carries_each_ranks_loss(monkeypatch):
    from simcluster.runner import llm_cp

    fake = types.ModuleType("torch.distributed")
    fake.get_rank, fake.get_world_size = (lambda: 1), (lambda: 2)
    fake.all_gather_object = lambda out, mine: out.__setitem__(slice(None), [dict(mine, rank=0), mine])
    monkeypatch.setitem(sys.modules, "torch.distributed", fake)
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    sys.modules["torch"].distributed = fake
    cp = llm_cp.ContextParallel.__new__(llm_cp.ContextParallel)
    out = cp.gather({"status": "ok", "loss": 6.2, "median_step_s": 0.1})
    assert [r["rank"] for r in out] == [0, 1] and all(r["loss"] == 6.2 and r["stage"] == 0 for r in out)


def test_device_run_runs_the_gate_before_the_runs():
    text = (ROOT / "calibration" / "h200x2-llm-eager-cp-2026-11-29" / "device_run.sh").read_text()
    gate = text.index("python3 studies/cp_smoke_check.py")
    assert text.index("--mode single --preset tiny --shapes 512:2") < gate < text.index('for spec in "1b 32768:1"')
    assert "CUDA_VISIBLE_DEVICES=0" in text


def test_the_mha_smoke_runs_first_and_does_not_gate():
    text = (ROOT / "calibration" / "h200x2-llm-eager-cp-2026-11-29" / "device_run.sh").read_text()
    mha = next(line for line in text.splitlines() if line.startswith("run smoke-mha"))
    assert "--kv-heads 4" in mha and "exit" not in mha and "|| echo" in mha
    assert text.index("run smoke-mha") < text.index("run smoke-tiny") < text.index("python3 studies/cp_smoke_check.py")


def test_a_cp_run_at_another_rank_count_is_not_a_registered_row(tmp_path):
    import yaml

    from simcluster.heldout import eager as heldout
    from simcluster.heldout import eager_regimes

    reg = yaml.safe_load((ROOT / heldout.CP_BUNDLE / "registered.yaml").read_text())["runs"][0]
    shape = {"seq": reg["seq"], "micro_batch": reg["micro_batch"], "status": "ok", "median_step_s": 0.8}
    doc = {"tool": "llm-step", "mode": "cp", "world_size": 2, "device": {"name": "NVIDIA H200"}, "model": {"preset": reg["preset"]},
           "shapes": [shape]}
    (tmp_path / "registered.yaml").write_text(yaml.safe_dump({"runs": [reg]}))
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "cp.json").write_text(json.dumps(doc))
    assert len(eager_regimes.registered_rows(tmp_path)) == 1
    (tmp_path / "runs" / "cp.json").write_text(json.dumps(doc | {"world_size": 4}))
    assert eager_regimes.registered_rows(tmp_path) == []


def test_the_cp_options_module_is_found_past_torchs_public_reexport(monkeypatch):
    """context_parallel's __module__ may name the public package (torch 2.11 on the device: the first 2-GPU smoke failed
    there); the module holding set_rotate_method is taken from the known ones, and none having it is one line."""
    import pytest

    from simcluster.runner import llm_cp

    public, private = types.ModuleType("fake_public_cp"), types.ModuleType("torch.distributed.tensor.experimental._context_parallel._attention")
    private.set_rotate_method = [].append

    def context_parallel():
        pass

    context_parallel.__module__ = "fake_public_cp"
    monkeypatch.setitem(sys.modules, "fake_public_cp", public)
    monkeypatch.setitem(sys.modules, private.__name__, private)
    assert llm_cp._options(context_parallel) is private
    public.set_rotate_method = [].append
    assert llm_cp._options(context_parallel) is public   # its own module first, where it has the setter
    del public.set_rotate_method, private.set_rotate_method
    monkeypatch.setitem(sys.modules, "torch.distributed.tensor.experimental._attention", types.ModuleType("old"))
    with pytest.raises(SystemExit, match="has set_rotate_method"):
        llm_cp._options(context_parallel)


class _T:
    """A fake tensor: identity is what the step's bookkeeping is about."""

    def __init__(self, name, shape=(2, 512), device=None):
        self.name, self.shape, self.device, self.dtype = name, shape, device or types.SimpleNamespace(type="cuda"), "float32"

    def clone(self):
        return _T(self.name + "'", self.shape, self.device)


def _fake_cp(rope: bool):
    import contextlib

    state = {"cp": False, "sdpa": False, "calls": [], "events": []}

    @contextlib.contextmanager
    def context_parallel(mesh, buffers, buffer_seq_dims, no_restore_buffers):
        state["calls"].append((list(buffers), list(buffer_seq_dims), set(no_restore_buffers)))
        state["cp"] = True
        yield
        state["cp"] = False

    @contextlib.contextmanager
    def sdpa_kernel(backends):
        state["sdpa"] = backends == ["FLASH"]
        yield
        state["sdpa"] = False

    class Loss:
        def backward(self):
            state["events"].append(("backward", state["cp"], state["sdpa"]))

    class Model:
        embed = types.SimpleNamespace(weight=_T("w"))

        def rotary(self, seq, device, dtype):
            return (_T("cos"), _T("sin")) if rope else (None, None)

        def __call__(self, tokens, labels, tables):
            state["model_args"] = (tokens, labels, tables)
            state["events"].append(("forward", state["cp"], state["sdpa"]))
            return Loss()

    opt = types.SimpleNamespace(step=lambda: state["events"].append(("opt", state["cp"], state["sdpa"])),
                                zero_grad=lambda set_to_none: None)
    fake_torch = types.SimpleNamespace(bfloat16="bf16", autocast=lambda *a, **k: contextlib.nullcontext())
    from simcluster.runner import llm_cp

    cp = llm_cp.ContextParallel.__new__(llm_cp.ContextParallel)
    cp.torch, cp.mesh, cp.context_parallel, cp.sdpa_kernel, cp.backend = fake_torch, "mesh", context_parallel, sdpa_kernel, "FLASH"
    class Ddp:   # DDP's wrapper: the decoder under .module, calls forwarded
        module = Model()

        def __call__(self, *args):
            return self.module(*args)

    return cp, Ddp(), opt, state


def test_step_maker_gives_the_model_the_buffers_cp_shards_and_runs_backward_inside_both_contexts():
    for rope in (True, False):
        cp, ddp, opt, state = _fake_cp(rope)
        inputs, labels = _T("inputs"), _T("labels")
        step = cp.step_maker(ddp, opt, amp=True)(inputs, labels)
        for _ in range(2):
            step()
        assert len(state["calls"]) == 2
        bufs, dims, keep = state["calls"][-1]
        assert dims == ([1, 1, 2, 2] if rope else [1, 1])
        assert all(any(x is b for b in bufs) for x in keep)   # no_restore_buffers: a subset of buffers, by identity
        assert not any(b is inputs or b is labels for b in bufs)   # fresh copies each step (sharded in place)
        assert state["calls"][0][0][0] is not bufs[0]
        tokens, lab, tables = state["model_args"]
        assert tokens is bufs[0] and lab is bufs[1]
        assert (tables[0] is bufs[2] and tables[1] is bufs[3]) if rope else tables is None
        assert state["events"][-3:] == [("forward", True, True), ("backward", True, True), ("opt", False, False)]


def test_the_gate_reads_a_trace_in_the_array_form_and_refuses_other_json_in_one_line(tmp_path, capsys):
    """cold read D (6): a Chrome trace may be a bare JSON array of events; it used to raise AttributeError."""
    cp, single = _docs([6.25, 6.24], 6.245)
    (tmp_path / "cp.json").write_text(json.dumps(cp))
    (tmp_path / "one.json").write_text(json.dumps(single))
    (tmp_path / "t.json").write_text(json.dumps(GOOD))
    assert CHECK.trace_events(str(tmp_path / "t.json")) == GOOD
    args = [str(tmp_path / n) for n in ("cp.json", "one.json", "t.json")]
    assert CHECK.main(args) == 0
    for bad in ("7", '"trace"', "[1, 2]", '{"traceEvents": 3}'):
        (tmp_path / "t.json").write_text(bad)
        capsys.readouterr()
        assert CHECK.main(args) == 1
        out = capsys.readouterr().out.strip()
        assert "\n" not in out and "t.json" in out and "Chrome trace" in out
