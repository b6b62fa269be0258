"""`simcluster collect --gpu-micro-sections`: gpu-micro's --sections passed through, a bad list refused."""

import pytest

from simcluster.errors import SimclusterError
from simcluster.runner import plans, plans_gpu


def test_sections_reach_gpu_micro_argv():
    step = plans_gpu.gpu_micro_steps(plans.Options(gpu_micro_sections="attention-backends,fp8-layers"))[0]
    assert step.argv[-2:] == ["--sections", "attention-backends,fp8-layers"]
    assert "--sections" not in plans_gpu.gpu_micro_steps(plans.Options())[0].argv


def test_a_bad_section_list_is_refused():
    with pytest.raises(SimclusterError, match="gpu-micro-sections"):
        plans_gpu.gpu_micro_steps(plans.Options(gpu_micro_sections="gemm;rm -rf"))
