"""The last driver branch for Volta (V100, compute capability 7.0) is R580 itself: a V100 recipe on R580 is served,
one on a later branch is not.

Source: NVIDIA CUDA 12.9 release notes, "R580 will be the last driver branch to support Maxwell, Pascal and Volta"
(quoted in images/compat.yaml last_driver_branch_by_max_cc): R580 still supports them, R590 and later do not.
"""

import pytest

from gpufleet.images import compat
from gpufleet.images.recipes import load_recipe
from gpufleet.stacks import catalog


def _v100_recipe_on(branch: int):
    r = load_recipe("cuda12-vllm-v100")
    driver = f"{branch}.95.05"
    packages = [
        p.model_copy(update={"name": f"nvidia-driver-{branch}-server", "version": f"{driver}-0ubuntu0.24.04.1"})
        if p.name.startswith("nvidia-driver-")
        else p
        for p in r.apt_packages
    ]
    return r.model_copy(update={"pins": {**r.pins, "driver": driver}, "apt_packages": packages})


def _branch_clashes(recipe, gpu):
    return [c for c in compat.gpu_clashes(recipe, catalog.gpu_kinds()[gpu]) if "the last branch for" in c]


@pytest.mark.parametrize("gpu", ["V100-16G", "V100-32G"])
def test_r580_is_still_a_volta_branch(gpu):
    recipe = _v100_recipe_on(580)
    assert _branch_clashes(recipe, gpu) == []
    assert compat.recipe_problems(recipe) == []


@pytest.mark.parametrize("gpu", ["V100-16G", "V100-32G"])
def test_the_branch_after_r580_is_refused_for_volta(gpu):
    (clash,) = _branch_clashes(_v100_recipe_on(590), gpu)
    assert "newer than R580" in clash
