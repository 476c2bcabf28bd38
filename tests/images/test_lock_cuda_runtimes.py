"""A hash lock that installs a CUDA runtime of another major next to the recipe's is refused.

images/compat.py lock_problems' rule: the lock pins "a CUDA runtime of the recipe's CUDA major". vllm 0.10.0's torch
2.7.1 requires nvidia-cuda-runtime-cu12==12.6.77 and no other runtime (PyPI metadata, images/compat.yaml vllm_lines);
a lock that also pulls nvidia-cuda-runtime-cu13 holds a wheel built for CUDA 13, whose driver floor (580,
compat.yaml driver_min_by_cuda_major) the V100 recipe's driver 570 is below.
"""

from gpufleet.images import compat
from gpufleet.images.recipes import load_recipe
from gpufleet.images.steps import python_lock_text

CU13 = "nvidia-cuda-runtime-cu13==13.0.96 \\\n    --hash=sha256:" + "0" * 64 + "\n"


def test_a_second_runtime_of_another_major_is_refused():
    r = load_recipe("cuda12-vllm-v100")
    text = python_lock_text(r)
    assert "nvidia-cuda-runtime-cu12==12.6.77" in text
    problems = dict(compat.lock_problems(r, text + CU13))
    assert "nvidia-cuda-runtime-cu13==13.0.96" in problems["recipe.pins.cuda"]
    assert "nvidia-cuda-runtime-cu12==12.6.77" in problems["recipe.pins.cuda"]


def test_the_shipped_lock_alone_passes():
    r = load_recipe("cuda12-vllm-v100")
    assert compat.lock_problems(r, python_lock_text(r)) == []
