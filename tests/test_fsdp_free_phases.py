"""What framework.fsdp_free_phases does (cold review B48 items 1 and 3): on a compiled one-stage FSDP2 step it puts the
step's fixed host seconds a beside the last backward's GPU backlog (work._beside_backlog) and nothing else -- every such
step reduce-scatters, so work.free_hosts stays False and the phases stay in series -- and it never moves an eager FSDP2
step, even turned on by mistake (launch_backlog.frees_phases asks for a compiled framework)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import load_script


def test_on_compck2s_shapes_the_term_is_exactly_the_fixed_host_seconds():
    """The registered free-phase column less the candidate was 8.785 ms on both shapes: the product (the term on since
    adopt48) less the same with the term off is the compiled FSDP2 framework's host_step_s (step_ms printed to 0.01 ms)."""
    from simcluster.heldout.eager_compilefsdp import fits, predict
    from simcluster.llm import eager
    from simcluster.llm.spec import ParallelSpec

    compck2 = load_script("validation/compck2.py")
    a = eager.torch_framework(ParallelSpec(dp=2, zero=3, recompute="full"), fits(), compiled=True).host_step_s
    assert a * 1e3 == pytest.approx(8.785, abs=1e-3)
    for preset, seq, mb, _ in compck2.SHAPES:
        on = predict(preset, seq, mb, compck2.VARIANT)["step_ms"]
        with eager.torch_framework_as(lambda fw: replace(fw, fsdp_free_phases=False)):
            off = predict(preset, seq, mb, compck2.VARIANT)["step_ms"]
        assert off - on == pytest.approx(a * 1e3, abs=0.01), (preset, seq, on, off)


def test_only_the_fixed_seconds_move():
    from simcluster.llm.framework import TORCH_COMPILE
    from simcluster.llm.simulate import Task
    from simcluster.llm.spec import ParallelSpec
    from simcluster.llm.work import _beside_backlog

    on = replace(TORCH_COMPILE, fsdp_free_phases=True, host_kernel_s=5e-6)
    fsdp, backward = ParallelSpec(dp=2, zero=3), Task(0.050, {"compute": 0.050, "host": 0.0}, 0.030, 0.050, 100)
    assert _beside_backlog(on, fsdp, [backward], 0.004) == pytest.approx(0.0)   # 20 ms of backlog hides a = 4 ms
    assert _beside_backlog(on, fsdp, [Task(0.050, {"compute": 0.050, "host": 0.0}, 0.048, 0.050, 100)], 0.004) \
        == pytest.approx(0.002)
    assert _beside_backlog(replace(on, fsdp_free_phases=False), fsdp, [backward], 0.004) == 0.004


def test_eager_fsdp2_steps_do_not_move_even_with_the_switch_on():
    """Item 3: the switch on the eager torch framework (not compiled) leaves eager FSDP2 steps as they are."""
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager
    from simcluster.llm.framework import TORCH_AMP
    from simcluster.llm.simulate import Task
    from simcluster.llm.spec import ParallelSpec
    from simcluster.llm.work import _beside_backlog

    backward = Task(0.05, {"compute": 0.05, "host": 0.0}, 0.03, 0.05, 100)
    assert _beside_backlog(replace(TORCH_AMP, fsdp_free_phases=True), ParallelSpec(dp=2, zero=3), [backward], 0.004) == 0.004

    def steps() -> list:
        return [regime_predict("0.5b", mb, "fsdp", "h200", seq=seq)["step_ms"] for mb, seq in ((1, 1024), (2, 4096))]

    product = steps()
    with eager.torch_framework_as(lambda fw: replace(fw, fsdp_free_phases=True)):
        assert steps() == product
