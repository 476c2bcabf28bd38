"""Recipe compatibility: the shipped recipes pass, clashes are refused with the clash named."""

import pytest
import yaml

from gpufleet.errors import UserError
from gpufleet.images import checks, compat
from gpufleet.images.recipes import load_recipe, recipe_names
from gpufleet.images.steps import python_lock_text
from gpufleet.stacks import catalog
from gpufleet.stacks.loader import stack_names
from gpufleet.validation import load_fleet


@pytest.mark.parametrize("name", ["cuda13-vllm", "cuda12-vllm-v100"])
def test_shipped_recipes_are_consistent(name):
    r = load_recipe(name)
    assert compat.recipe_problems(r) == []
    assert compat.lock_problems(r, python_lock_text(r)) == []
    assert set(r.pins) >= {"vllm", "torch", "driver", "cuda"}


def test_recipe_names_and_regions():
    assert {"cuda13-vllm", "cuda12-vllm-v100"} <= set(recipe_names())
    for n in ("cuda13-vllm", "cuda12-vllm-v100"):
        assert load_recipe(n).regions == {
            "alicloud": ["cn-hangzhou", "cn-beijing", "cn-shanghai"],
            "tencentcloud": ["ap-guangzhou", "ap-shanghai", "ap-beijing"],
        }


def test_current_recipe_refuses_v100():
    r = load_recipe("cuda13-vllm")
    clashes = compat.gpu_clashes(r, catalog.gpu_kinds()["V100-16G"])
    assert any("CUDA 13" in c and "7.0" in c for c in clashes)
    assert any("sm_70" in c for c in clashes)
    assert compat.gpu_clashes(load_recipe("cuda12-vllm-v100"), catalog.gpu_kinds()["V100-32G"]) == []


def test_driver_below_580_with_cuda13_vllm_is_refused():
    r = load_recipe("cuda13-vllm")
    bad = r.model_copy(update={"pins": {**r.pins, "driver": "570.172.08"}})
    msgs = dict(compat.recipe_problems(bad))
    assert "570.172.08 is below 580" in msgs["recipe.pins.driver"]


def test_torch_not_matching_vllm_and_python_out_of_range():
    r = load_recipe("cuda12-vllm-v100")
    bad = r.model_copy(update={"pins": {**r.pins, "torch": "2.8.0", "python": "3.13"}})
    msgs = dict(compat.recipe_problems(bad))
    assert "requires torch==2.7.1" in msgs["recipe.pins.torch"]
    assert "Requires-Python" in msgs["recipe.pins.python"]


def test_lock_with_wrong_cuda_runtime_is_refused():
    r = load_recipe("cuda12-vllm-v100")
    text = python_lock_text(r).replace("nvidia-cuda-runtime-cu12==12.6.77", "nvidia-cuda-runtime-cu12==13.0.1")
    assert any(p == "recipe.pins.cuda" for p, _ in compat.lock_problems(r, text))


def test_recipe_file_missing_pins_is_a_user_error(tmp_path):
    from gpufleet.images.recipes import RECIPES

    doc = yaml.safe_load((RECIPES / "cuda13-vllm.yaml").read_text())
    del doc["pins"]["driver"]
    f = tmp_path / "x.yaml"
    f.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError) as exc:
        load_recipe(str(f))
    assert "missing driver" in str(exc.value)


@pytest.mark.parametrize("stack", stack_names())
def test_shipped_stacks_pass_image_checks(stack):
    fleet = load_fleet(stack)
    assert checks.spec_problems(fleet) == []


class _Fleet:
    """The attributes spec_problems reads, for a stack that does not exist as a file."""

    def __init__(self, base, gpu, recipe, dtype, pins):
        from types import SimpleNamespace

        self.spec = SimpleNamespace(
            cloud=base.spec.cloud,
            image=SimpleNamespace(recipe=recipe),
            serving=SimpleNamespace(dtype=dtype),
            gpu=SimpleNamespace(kind=gpu),
        )
        self.gpu = catalog.gpu_kinds()[gpu]
        self.image_pins = pins
        self.image_id = base.image_id


def test_v100_stack_on_current_recipe_fails_with_hint():
    base = load_fleet(stack_names()[0])
    probs = dict(checks.spec_problems(_Fleet(base, "V100-16G", "cuda13-vllm", "float16", {})))
    assert "does not serve V100-16G" in probs["fleet.image.recipe"]
    assert "use cuda12-vllm-v100" in probs["fleet.image.recipe"]


def test_bf16_on_t4_and_pin_drift():
    base = load_fleet(stack_names()[0])
    probs = dict(
        checks.spec_problems(_Fleet(base, "T4", "cuda13-vllm", "bfloat16", {**load_recipe("cuda13-vllm").pins, "vllm": "0.32.0"}))
    )
    assert "bfloat16 needs compute capability >= 8.0" in probs["fleet.serving.dtype"]
    assert "vllm: image has 0.32.0, recipe pins 0.33.0" in probs["fleet.image.recipe"]


@pytest.mark.parametrize("dtype", ["float32", "half"])
def test_a_dtype_the_recipe_does_not_promise_is_refused_half_read_as_float16(dtype):
    """cuda12-vllm-v100 promises float16 alone: float32 is refused; half, vLLM's alias of float16, passes."""
    base = load_fleet(stack_names()[0])
    probs = dict(checks.spec_problems(_Fleet(base, "V100-16G", "cuda12-vllm-v100", dtype, {})))
    if dtype == "half":
        assert "fleet.serving.dtype" not in probs
    else:
        assert probs["fleet.serving.dtype"] == "float32 is not among the dtypes recipe cuda12-vllm-v100 serves (float16)"


def test_a_lock_of_torch_from_a_cuda_index_matches_its_pin_without_the_local_part():
    """torch from download.pytorch.org/whl/cu130 is locked as torch==2.x.y+cu130; the recipe pins 2.x.y (its pin form
    refuses a +cu part) and the step's check cuts pip's Version at '+' (python_packages.sh.j2), so the lock agrees with
    the pin. Another release is still refused, naming the lock's version; a name written with '_' or capitals is the
    same project (PEP 503)."""
    r = load_recipe("cuda13-vllm")
    text = python_lock_text(r)
    torch = r.pins["torch"]
    assert f"torch=={torch} " in text or f"torch=={torch}\n" in text
    cuda_build = text.replace(f"torch=={torch}", f"torch=={torch}+cu130")
    assert compat.lock_problems(r, cuda_build) == []
    other = text.replace(f"torch=={torch}", "torch==1.0.0+cu130")
    assert dict(compat.lock_problems(r, other))["recipe.python_lock"].endswith(
        f"pins torch 1.0.0+cu130, the recipe {torch}; regenerate it"
    )
    assert compat.lock_problems(r, text.replace(f"torch=={torch}", f"Torch=={torch}")) == []
