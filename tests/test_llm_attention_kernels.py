"""The framework's attention kernel (llm/attention_kernels.py): FlashAttention 2 on Hopper at its measured rate."""

from dataclasses import replace
from pathlib import Path

import pytest

from simcluster.hardware.gpu import load_gpu
from simcluster.llm import attention_kernels as ak
from simcluster.llm.framework import COMPOSER_FSDP, FRAMEWORKS, MEGATRON


def test_ratios_come_from_the_bundle_and_are_below_one():
    r = ak.fit_ratios(ak.backend_rows())
    assert set(r) == {"fwd", "bwd"} and set(r["fwd"]) == {64, 128}
    for by_d in r.values():
        for value in by_d.values():
            assert 0.4 < value < 0.8        # FA2 runs the Ampere path on Hopper: slower than cuDNN, not by 3x


def test_fit_ratios_is_reference_over_kernel_per_pass():
    rows = []
    for backend, f, fb in (("default", 1.0, 3.0), ("flash", 2.0, 6.0)):
        for mode, t in (("fwd", f), ("fwd_bwd", fb)):
            rows.append({"backend": backend, "mode": mode, "head_dim": 128, "seq_q": 4096, "batch": 4, "heads": 32, "time_s": t})
    rows.append({"backend": "flash", "mode": "fwd", "head_dim": 128, "seq_q": 1024, "batch": 16, "heads": 32, "time_s": 9.0})
    assert ak.fit_ratios(rows) == {"fwd": {128: 0.5}, "bwd": {128: 0.5}}   # the short row is left out (MIN_SEQ)


def test_one_min_seq_and_refusing_the_cudnn_form_leaves_the_flash_ratios(monkeypatch):
    """The ratio fit's floor is cudnn_schedule.MIN_SEQ (one number), taken at import: moving cudnn_schedule.MIN_SEQ out
    of reach (the old model's read-outs) refuses the cuDNN form but leaves the fitted flash ratios as they are."""
    from simcluster.llm import cudnn_schedule

    assert ak.MIN_SEQ == cudnn_schedule.MIN_SEQ == 2048
    rows = ak.backend_rows()
    before = ak.fit_ratios(rows)
    monkeypatch.setattr(cudnn_schedule, "MIN_SEQ", 1 << 40)
    assert ak.fit_ratios(rows) == before


def test_fa2_slows_only_attention_on_a_measured_hopper_card():
    """The ratio card (the price of the shapes the schedule form refuses: tests/test_flash_schedule.py) divides the
    card's attention time by the measured ratio; the 'fa2' card changes attention only."""
    h100 = load_gpu("models/gpu/h100-sxm.yaml")[0]
    fa2, ratio_card = ak.for_kernel(h100, "fa2"), ak.ratio_card(h100)
    args = (1, 32, 32, 32768, 32768, 128)
    ratio = ak.fa2_ratios()
    assert ratio_card.attention_time_s(*args) == pytest.approx(h100.attention_time_s(*args) / ratio["fwd"][128], rel=1e-6)
    assert ratio_card.attention_time_s(*args, backward=True) == pytest.approx(
        h100.attention_time_s(*args, backward=True) / ratio["bwd"][128], rel=1e-6)
    for backward in (False, True):   # FA2 slower than the card's cuDNN curve
        assert fa2.attention_time_s(*args, backward=backward) > h100.attention_time_s(*args, backward=backward)
    assert fa2.gemm_time_s(8192, 8192, 8192) == h100.gemm_time_s(8192, 8192, 8192)
    assert fa2.memory_time_s(2**30) == h100.memory_time_s(2**30)
    assert type(ak.for_kernel(h100, "card")).__name__ == "CudnnCard"   # the card's own kernel: its schedule form
    a100 = load_gpu("models/gpu/a100-sxm-80gb.yaml")[0]
    assert ak.for_kernel(a100, "fa2") is a100 and ak.for_kernel(a100, "card") is a100   # derived: not a Hopper measurement
    assert type(ak.for_kernel(a100, "fa2-full")).__name__ == "NoCausalSkip"
    assert type(ak.for_kernel(h100, "fa2-full")).__name__ == "Fa2FullCard"
    with pytest.raises(ValueError, match="attention kernel"):
        ak.for_kernel(h100, "fa9")
    assert not ak.hopper_measured(replace(h100, derived_from="models/gpu/x.yaml"))


def test_a_same_die_card_carrying_a_measured_hopper_cards_curves_is_priced_as_hopper():
    """models/gpu/h100-sxm5-94gb.yaml (session 55 lseq55) carries models/gpu/h100-sxm.yaml's curves on the same GH100 die:
    its attention is cuDNN's schedule form as on the 80GB card; a 132-SM card from another source, or another die's
    card derived from the H100's curves (A100, B200), is not."""
    h94 = load_gpu("models/gpu/h100-sxm5-94gb.yaml")[0]
    h100 = load_gpu("models/gpu/h100-sxm.yaml")[0]
    assert h94.derived_from.startswith("models/gpu/h100-sxm.yaml") and ak.hopper_measured(h94)
    assert type(ak.for_kernel(h94, "card")).__name__ == "CudnnCard"
    assert not ak.hopper_measured(replace(h94, derived_from="models/gpu/x.yaml"))
    assert not ak.hopper_measured(replace(h94, sm_count=148))
    for other in ("a100-sxm-80gb", "b200"):
        assert not ak.hopper_measured(load_gpu(f"models/gpu/{other}.yaml")[0])
    assert h94.hbm_peak_Bps == 2.4e12 and h94.hbm_bandwidth_Bps < h100.hbm_bandwidth_Bps


def test_composer_fsdp_is_registered_and_runs_fa2():
    assert FRAMEWORKS["composer-fsdp"] is COMPOSER_FSDP
    assert COMPOSER_FSDP.attention_kernel == "fa2-full" and MEGATRON.attention_kernel == "card"
    assert (COMPOSER_FSDP.param_bytes, COMPOSER_FSDP.grad_bytes) == (2.0, 4.0)   # bf16 gathers, fp32 reduce_scatter


def test_megatron_te_fa2_slows_long_sequences_most():
    """TE 1.x's FlashAttention 2 on Hopper: the longer the sequence, the larger attention's share, the larger the slowdown."""
    from pathlib import Path

    from simcluster.cards import load_collective
    from simcluster.llm.framework import MEGATRON_FA2
    from simcluster.llm.predict import network_for, predict_llm
    from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
    from simcluster.reference.llm import LlmUsage, machine_for

    usage = LlmUsage(Path("models/gpu/h100-sxm.yaml"), Path("models/nic/roce-400g.yaml"),
                     Path("models/collective/h200x4-nvlink.yaml"), 8, {})
    m = machine_for(usage, 8)
    gpu, net = load_gpu(m.gpu_card)[0], network_for(m, load_collective(m.card)[0])
    slowdown = []
    for seq in (4096, 65536):
        model = TransformerSpec(32, 4096, 11008, 32, 32, 32000, seq)
        par, batch = ParallelSpec(tp=2, dp=4), BatchSpec(16, 1)
        card, fa2 = (predict_llm(model, par, batch, gpu, net, 8, trace=False, framework=f).step_time_s for f in (MEGATRON, MEGATRON_FA2))
        slowdown.append(fa2 / card)
    assert 1.0 < slowdown[0] < slowdown[1] < 2.0


def test_a_file_can_fill_the_global_batch():
    from simcluster.reference.llm_specs import spec_of

    run = {"model": {"name": "x", "layers": 2, "hidden": 256, "ffn": 512, "heads": 4, "vocab": 1000, "seq": 1024},
           "gpus": 4, "parallel": {"tp": 1, "pp": 1, "dp": 4}, "batch": {"global_batch": None, "precision": "bf16"}}
    assert spec_of(run, {})[0] is None
    (_, _, batch), _, used = spec_of(run, {"global_batch": 8})
    assert batch.global_batch == 8 and "global_batch=8" in used


def test_refusing_the_cudnn_form_before_the_first_import_leaves_the_flash_ratio_fit_alone():
    """A read-out that moves cudnn_schedule.MIN_SEQ (to refuse the form) before anything imported attention_kernels must
    not empty the flash ratio fit (session 43 saw test_eager_pphost_set then test_llm_pinned fail on it): run in a fresh
    interpreter so the import order is the one under test."""
    import subprocess
    import sys

    code = ("from simcluster.llm import cudnn_schedule\n"
            "cudnn_schedule.MIN_SEQ = 1 << 40\n"
            "from simcluster.llm import attention_kernels as ak\n"
            "r = ak.fa2_ratios()\n"
            "assert r['fwd'] and r['bwd'], r\n"
            "print(ak.MIN_SEQ)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "2048"


def test_a_missing_or_broken_backends_file_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """Cold review B55 item 11 (mendB55): a tree without the attention-backends bundle (git archive of simcluster /
    models / scenarios only) ended `simcluster run` on an FSDP scenario in a FileNotFoundError traceback; now each broken
    state is one SimclusterError line naming the file and what was expected, and the CLI prints it as one line."""
    from simcluster import cli
    from simcluster.errors import SimclusterError

    stdout = tmp_path / "gpu-micro" / "gpu-micro" / "stdout.txt"
    with pytest.raises(SimclusterError) as missing:
        ak.backend_rows(tmp_path)
    stdout.parent.mkdir(parents=True)
    for text, why in (("no document here\n", "no attention_backends records"), ('{"gpu": "h200"}\n', "no attention_backends"),
                      ('{"attention_backends": [\n', "JSONDecodeError")):
        stdout.write_text(text)
        with pytest.raises(SimclusterError) as broken:
            ak.backend_rows(tmp_path)
        assert why in str(broken.value) and str(stdout) in str(broken.value) and "\n" not in str(broken.value)
    assert str(missing.value).startswith(str(stdout)) and "FileNotFoundError" in str(missing.value)
    assert "attention-backends" in str(missing.value) and "\n" not in str(missing.value)
    monkeypatch.setattr(ak.backend_rows, "__defaults__", (tmp_path / "absent",))
    ak.fa2_ratios.cache_clear()
    try:
        code = cli.main(["run", "--json", str(Path(__file__).resolve().parents[1] / "scenarios" / "llm" / "fsdp-hsdp-7b.yaml")])
    finally:
        ak.fa2_ratios.cache_clear()
    err = capsys.readouterr().err
    assert code != 0 and len(err.strip().splitlines()) == 1 and str(tmp_path / "absent") in err, err
