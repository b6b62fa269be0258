"""eager.torch_framework_as (moved here from session 40's test_eager_fsdp_copies when its candidates left the product):
one context manager swaps eager.torch_framework for studies, registrations and tests, and clears the caches that read it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simcluster.llm import eager
from simcluster.llm.spec import ParallelSpec

FSDP, DDP = ParallelSpec(dp=2, zero=3), ParallelSpec(dp=2)


def no_casts(fw):
    """A stand-in form: autocast's weight casts left out of every framework with a bf16 block (FSDP2's): fewer kernels."""
    return replace(fw, cast_bytes=0.0) if fw.bf16_param_block else fw


def test_torch_framework_as_wraps_every_caller_and_restores_the_product_on_an_error():
    """Review A 8: one context manager swaps eager.torch_framework (studies, registrations, tests)."""
    kept = eager.torch_framework
    assert kept(FSDP).cast_bytes > 0
    with pytest.raises(RuntimeError), eager.torch_framework_as(no_casts):
        assert eager.torch_framework(FSDP).cast_bytes == 0 and eager.torch_framework(DDP) == kept(DDP)
        raise RuntimeError
    assert eager.torch_framework is kept and eager.torch_framework(FSDP).cast_bytes > 0


def test_torch_framework_as_leaves_no_form_in_the_caches_that_read_torch_framework():
    """Review C 4: a host fit cached inside the block (host_bound._default_fits) is the form's; after the block
    the product's fit is back, and each cache whose values read torch_framework is cleared with it."""
    from simcluster.heldout import eager_regimes, eager_registered
    from simcluster.llm import host_bound

    host_bound._default_fits.cache_clear()
    product = host_bound._default_fits()["fsdp"]
    with eager.torch_framework_as(no_casts):
        form = host_bound._default_fits()["fsdp"]
    assert form[0] != pytest.approx(product[0], rel=1e-6)   # the form's host per kernel is its own
    assert host_bound._default_fits()["fsdp"] == product
    clears = {c.__self__ for c in eager._FRAMEWORK_CACHES}
    assert {host_bound._default_fits, eager_regimes._todays_host_share, eager_registered._flag_hosts,
            eager_registered.host_share, eager_regimes._todays, eager_registered.todays_step_s} <= clears
    # review A 41: today's steps beside the registered rows (trust/moved.py) read torch_framework too
