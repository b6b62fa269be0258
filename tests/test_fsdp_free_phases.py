"""framework.fsdp_free_phases never moves an eager FSDP2 step, even turned on by mistake (cold review B48 item 3:
launch_backlog.frees_phases asks for a compiled framework)."""

from __future__ import annotations

from dataclasses import replace


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
