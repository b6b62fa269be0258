"""FlashAttention 2's schedule form (llm/flash_schedule.py) as the 'fa2' / 'fa2-full' kernels' attention time on the
measured Hopper cards (llm/attention_kernels.py), adopted by calibration/h200x1-attention-wave-2026-11-29."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simcluster.hardware.gpu import load_gpu
from simcluster.hardware.gpu_clock import at_clock
from simcluster.llm import attention_kernels as ak
from simcluster.llm import flash_schedule as fs

H200 = "models/gpu/h200-sxm-interleaved.yaml"
H100 = "models/gpu/h100-sxm.yaml"
# (head_dim, batch, heads, kv_heads, seq) -> (form fwd s, form bwd s): registered.yaml's `form_*` predictions, written
# before the probe ran (one partial forward wave; GQA d 64; GQA d 128, 32K)
REGISTERED = {(64, 1, 8, 8, 4096): (0.00011488, 0.000285187), (64, 1, 40, 8, 16384): (0.00467146, 0.0127407),
              (128, 1, 20, 4, 32768): (0.0168043, 0.043311)}


def _card(path: str, kernel: str = "fa2"):
    return ak.for_kernel(load_gpu(path)[0], kernel)


@pytest.mark.parametrize("shape", sorted(REGISTERED))
def test_the_model_is_the_registered_form(shape):
    d, b, h, kv, s = shape
    fa2 = _card(H200)
    for backward, want in zip((False, True), REGISTERED[shape], strict=True):
        assert fa2.attention_time_s(b, h, kv, s, s, d, True, backward) == pytest.approx(want, rel=2e-5)
        assert fs.form_time_s(None, "bwd" if backward else "fwd", b, h, kv, s, d) == pytest.approx(want, rel=2e-5)


def test_the_form_is_not_the_ratio():
    """Where the registered probe found the ratio most wrong (one partial wave), the model moved."""
    h200 = load_gpu(H200)[0]
    ratio, fa2 = ak.ratio_card(h200), _card(H200)
    assert fa2.attention_time_s(1, 8, 8, 4096, 4096, 64) > 1.3 * ratio.attention_time_s(1, 8, 8, 4096, 4096, 64)


def test_makespan_is_the_greedy_in_order_schedule():
    assert fs.makespan([3.0, 1.0, 1.0, 1.0], 2) == 3.0          # the long CTA holds one slot, three short ones the other
    assert fs.makespan([1.0] * 5, 2) == 3.0                      # a last partial wave costs a whole CTA
    assert fs.makespan([1.0, 1.0, 3.0], 2) == 4.0                # the heaviest launched last: the tail
    assert fs.cta_tiles("fwd", 64, 1, 1, 512) == [1, 2, 3, 4]    # causal: query block i sees i + 1 key blocks (128 x 128)
    assert fs.cta_tiles("bwd", 128, 1, 1, 256) == [4, 2]         # key block j from query block 2j on (64 x 128)
    assert fs.cta_tiles("fwd", 128, 1, 1, 256, 512, causal=False) == [8, 8]


def test_full_tiles_cost_at_least_the_causal_ones():
    fa2, full = _card(H200), _card(H200, "fa2-full")
    for d, b, h, s in ((64, 1, 16, 8192), (128, 2, 32, 32768), (128, 1, 8, 4096)):
        for backward in (False, True):
            causal = fa2.attention_time_s(b, h, h, s, s, d, True, backward)
            assert full.attention_time_s(b, h, h, s, s, d, True, backward) >= causal
            assert full.attention_time_s(b, h, h, s, s, d, True, backward) == fa2.attention_time_s(b, h, h, s, s, d, False, backward)
    assert full.attention_time_s(1, 32, 32, 32768, 32768, 128) > 1.7 * fa2.attention_time_s(1, 32, 32, 32768, 32768, 128)


@pytest.mark.parametrize("shape, full_refused", [
    ((1, 4, 4, 2048, 2048, 128), True),     # 4 x 32 CTAs < 0.8 x 264: flash's split-KV kernel
    ((1, 32, 32, 8192, 8192, 96), True),    # a head size the form has no tiles for
    ((1, 32, 32, 8192, 4096, 128), False),  # causal with unequal lengths ('fa2-full' computes every tile: in range)
])
def test_refused_shapes_take_the_ratio_card(shape, full_refused):
    h200 = load_gpu(H200)[0]
    ratio, fa2, full = ak.ratio_card(h200), _card(H200), _card(H200, "fa2-full")
    for backward in (False, True):
        assert fa2.attention_time_s(*shape, backward=backward) == ratio.attention_time_s(*shape, backward=backward)
        dense = ratio.attention_time_s(*shape, causal=False, backward=backward)
        assert (full.attention_time_s(*shape, backward=backward) == dense) is full_refused
    assert fa2.attention_time_s(1, 32, 32, 8192, 8192, 128, dtype="fp8") == ratio.attention_time_s(1, 32, 32, 8192, 8192, 128, dtype="fp8")


def test_the_h100_runs_the_h200s_schedule_at_its_own_measured_rate():
    """The assumption (docs/models/gpu.md): same 132 sm90 SMs and tiles; kernel time x the H200 card's long-sequence
    cuDNN attention rate / the H100 card's per pass and head size; the backward's copies at the H100's copy rate."""
    h100, h200 = load_gpu(H100)[0], load_gpu(H200)[0]
    f100, f200 = _card(H100), _card(H200)
    for p, d in fs.TILES:
        eff = "attn_efficiency_bwd" if p == "bwd" else "attn_efficiency_fwd"
        scale = getattr(h200, eff)[d] / getattr(h100, eff)[d]     # both cards' bf16 peaks are the same
        backward = p == "bwd"
        side = fs.side_bytes(p, 1, 32, 8, 32768, d)
        kernel200 = f200.attention_time_s(1, 32, 8, 32768, 32768, d, True, backward) - side / h200.hbm_bandwidth_Bps
        got = f100.attention_time_s(1, 32, 8, 32768, 32768, d, True, backward)
        assert got == pytest.approx(kernel200 * scale + side / h100.hbm_bandwidth_Bps, rel=1e-9)
    assert type(f100).__name__ == "Fa2Card" and 0.9 < f100.form_rates[("fwd", 128)] / ak._rate(f100, "fwd", 128) < 1.1
    a100 = load_gpu("models/gpu/a100-sxm-80gb.yaml")[0]
    assert ak.for_kernel(a100, "fa2") is a100                                 # derived cards unchanged
    assert not ak.hopper_measured(replace(h100, derived_from="models/gpu/x.yaml"))


def test_a_slower_clock_slows_the_form():
    fa2 = _card(H200)
    slow = at_clock(fa2, 0.8 * fa2.clock.reference_clock_Hz)
    assert type(slow) is type(fa2)
    t, t_slow = (c.attention_time_s(1, 32, 32, 16384, 16384, 128) for c in (fa2, slow))
    assert t_slow == pytest.approx(t * fa2.clock.time_scale(0.8 * fa2.clock.reference_clock_Hz), rel=1e-9)


def test_the_constants_are_the_registered_fit():
    """CONSTS are registered.yaml's (written before the probe ran) and what studies/fa2_wave.py's fit of the development
    records gives (a changed bundle or fit moves them: then the registration no longer describes the model)."""
    import yaml
    from conftest import ROOT, load_script

    reg = yaml.safe_load((ROOT / "calibration" / "h200x1-attention-wave-2026-11-29" / "registered.yaml").read_text())["consts"]
    assert {(p, int(d)): (v["u_s"], v["a_s"]) for k, v in reg.items() for p, d in [k.split("_")]} == fs.CONSTS
    study = load_script(ROOT / "studies" / "fa2_wave.py")
    fitted = study.fit(study.dev_records())
    for key, (u, a) in fs.CONSTS.items():
        assert fitted[key][0] == pytest.approx(u, rel=1e-4) and fitted[key][1] == pytest.approx(a, rel=1e-4)


@pytest.mark.parametrize("pass_, d, bh, seq_q, seq_kv, causal", [
    ("fwd", 128, 64, 32768, 32768, True), ("bwd", 128, 64, 32768, 32768, True), ("fwd", 64, 40, 8192, 8192, True),
    ("bwd", 64, 7, 16384, 16384, True), ("fwd", 128, 3, 2048, 2048, True), ("bwd", 128, 1, 512, 512, True),
    ("fwd", 128, 64, 16384, 16384, False), ("bwd", 64, 33, 8192, 4096, False), ("fwd", 64, 5, 2048, 8192, False),
    ("bwd", 128, 2, 128, 128, False)])
def test_the_per_head_schedule_is_the_full_one_bit_for_bit(pass_, d, bh, seq_q, seq_kv, causal):
    """repeated_makespan (one head's CTAs, the head count; the non-causal closed form) equals the greedy schedule of
    every CTA in launch order exactly, whole waves, a partial last wave and fewer CTAs than slots alike."""
    u, a = fs.CONSTS[(pass_, d)]
    slots = 132 * fs.TILES[(pass_, d)][2]
    every = [a + u * t for t in fs.cta_tiles(pass_, d, 1, bh, seq_q, seq_kv, causal)]
    one = [a + u * t for t in fs.cta_tiles(pass_, d, 1, 1, seq_q, seq_kv, causal)]
    assert fs.repeated_makespan(one, bh, slots) == fs.makespan(every, slots)
    assert fs.kernel_s(pass_, 1, bh, seq_q, seq_kv, d, causal) == fs.makespan(every, slots)


def test_the_closed_form_is_the_uniform_schedules():
    assert fs.repeated_makespan([0.1] * 3, 5, 4) == fs.makespan([0.1] * 15, 4) == 0.1 + 0.1 + 0.1 + 0.1   # 4 waves
    assert fs.repeated_makespan([0.1, 0.3], 2, 3) == fs.makespan([0.1, 0.3, 0.1, 0.3], 3) == 0.4


@pytest.mark.parametrize("bh, seq", [(4, 4096), (40, 8192), (7, 16384)])
def test_another_grid_reuses_the_schedule_heaviest_first_or_in_order(bh, seq):
    """A Grid (the card's cuDNN kernel's, fitted in studies/cudnn_wave.py) prices with the same schedule: 'lpt' is the
    greedy schedule of every unit sorted heaviest first, bit for bit; 'launch' the in-order one; its own tiles and units
    per SM; no split-KV refusal and no torch-side GQA sum where the grid says so."""
    tiles = {("fwd", 128): (128, 128, 1), ("bwd", 128): (64, 128, 1)}
    lpt, inorder = fs.Grid("t", tiles, order="lpt", gqa_sum=False, split_kv=False), fs.Grid("t", tiles)
    c = {("fwd", 128): (1e-6, 2e-6), ("bwd", 128): (2e-6, 1e-6)}
    every = [2e-6 + 1e-6 * t for t in fs.cta_tiles("fwd", 128, 1, bh, seq, grid=lpt)]
    assert every[:seq // 128] == [2e-6 + 1e-6 * (i + 1) for i in range(seq // 128)]     # 128 x 128: block i, i + 1 tiles
    assert fs.kernel_s("fwd", 1, bh, seq, seq, 128, True, 132, c, lpt) == fs.makespan(sorted(every, reverse=True), 132)
    assert fs.kernel_s("fwd", 1, bh, seq, seq, 128, True, 132, c, inorder) == fs.makespan(every, 132)
    assert fs.side_bytes("bwd", 1, 32, 8, seq, 128, grid=lpt) == 14.0 * 32 * seq * 128 < fs.side_bytes("bwd", 1, 32, 8, seq, 128)
    fs.check_range(1, 1, 1, 1024, 128, 132, lpt)                 # flash would take its split-KV kernel: not this grid
    with pytest.raises(fs.FormError):
        fs.check_range(1, 1, 1, 1024, 128, 132)
