"""What `plan fit` says after a refusal a setting lifts: the single change that lifts it (checked like any advice),
not a bigger GPU or quantization that cannot; and the refusal of a vLLM release whose wheel has no kernels for the GPU
(sizing/data/vllm_engines.yaml lowest_compute_capability, read from the wheels with scripts/wheel_cuda_archs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufleet.errors import UserError
from gpufleet.sizing import fit, models, profiler
from gpufleet.stacks.catalog import gpu_kinds

KINDS = gpu_kinds()
Q7 = models.lookup("Qwen/Qwen2.5-7B-Instruct")


def test_a_tensor_parallel_size_that_does_not_divide_the_heads_is_advised_down_to_one_that_does():
    r = fit.fit(Q7, KINDS["A10"], fit.Serving(gpus=8), KINDS)  # 28 heads
    assert r.verdict == "does not fit"
    assert r.advice[0] == "tensor-parallel over 4 GPUs (gpu.count 4, tensor_parallel_size 4) fits"


def test_uneven_expert_parallel_is_advised_off_or_to_a_data_parallel_size_that_divides_the_experts():
    moe = models.lookup("Qwen/Qwen3-30B-A3B")  # 128 experts
    r = fit.fit(moe, KINDS["A100-80G"], fit.Serving(data_parallel=3, expert_parallel=True), KINDS)
    assert r.verdict == "does not fit"
    assert r.advice[:2] == [
        "turn expert parallel off (each expert is then split over the tensor-parallel ranks) and it fits",
        "data_parallel_size 2 (the experts split over TP x DP = 2 ranks) fits",
    ]
    assert not any("4-bit" in a for a in r.advice)  # quantizing cannot divide 128 experts over 3 ranks


def test_a_quantization_that_contradicts_the_checkpoint_is_advised_dropped(tmp_path):
    cfg = json.loads((Path(models.__file__).parent / "data/configs/Qwen--Qwen2.5-7B-Instruct.json").read_text())
    cfg["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    awq = models.resolve(str(tmp_path / "config.json"))
    r = fit.fit(awq, KINDS["A10"], fit.Serving(quantization="gptq", max_model_len=8192), KINDS)
    assert r.verdict == "does not fit"
    assert r.advice[0] == "drop --quantization (vLLM runs the checkpoint's own awq) and it fits"


def test_a_lora_rank_vllm_does_not_take_is_advised_up_to_the_next_one():
    r = fit.fit(Q7, KINDS["A10"], fit.Serving(max_loras=4, max_lora_rank=17, max_model_len=8192), KINDS)
    assert r.advice[0] == "max_lora_rank 32 (the next rank vLLM takes; it holds adapters up to that rank) fits"
    assert not any("no GPU node size" in a for a in r.advice)


def test_a_release_without_kernels_for_the_gpu_is_refused_with_the_release_that_has_them():
    r = fit.fit(Q7, KINDS["V100-32G"], fit.Serving(vllm_version="0.33.0"), KINDS)
    assert r.verdict == "does not fit"
    assert r.problems[0].startswith("CUDA error: no kernel image is available for execution on the device (vLLM 0.33.0")
    assert "use vLLM 0.19.1 or older" in r.problems[0]
    assert r.advice[0].startswith("vLLM 0.10.0 (an image recipe's pin whose wheel runs on compute capability 7.0) fits")
    for version, refused in (("0.19.1", False), ("0.20.0", True), ("0.6.3", False)):
        assert (profiler.wheel_problem(version, (7, 0)) is not None) is refused, version
    assert profiler.wheel_problem("0.33.0", (7, 5)) is None  # a T4 runs it


def test_a_gpu_the_catalog_lacks_defaults_to_a_pinned_release_whose_wheel_runs_on_it():
    volta = fit.custom_gpu(31.74, "7.0")
    assert fit.fit(Q7, volta, fit.Serving()).vllm_version == "0.10.0"
    assert fit.fit(Q7, fit.custom_gpu(44.31, "8.9"), fit.Serving()).vllm_version == profiler.newest_pinned()


@pytest.mark.parametrize(("given", "release"), [("v0.10.0", "0.10.0"), ("V0.33.0", "0.33.0"), (" 0.10.0 ", "0.10.0")])
def test_a_release_spelt_as_its_git_tag_is_the_release(given, release):
    assert profiler.as_release(given) == release
    assert profiler.version_problem("") is not None


def test_tight_names_its_cause():
    """The sampler warm-up made it tight, not the KV range (4.6 x max_model_len): the line said the KV range."""
    moe = models.lookup("Qwen/Qwen3-30B-A3B")
    r = fit.fit(moe, KINDS["A10"], fit.Serving(gpus=4, expert_parallel=True), KINDS)
    assert r.verdict == "tight"
    assert r.kv_tokens_range[0] > r.max_model_len
    assert r.assumptions[-1] == "tight: the sampler warm-up after the KV cache may not fit (above)"


def test_a_quantization_config_that_is_not_a_mapping_is_refused_naming_the_field(tmp_path):
    """`"quantization_config": "awq"` was ignored (sized at 16 bits); vLLM reads its quant_method and fails on text."""
    cfg = json.loads((Path(models.__file__).parent / "data/configs/Qwen--Qwen2.5-7B-Instruct.json").read_text())
    cfg["quantization_config"] = "awq"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(UserError) as e:
        models.resolve(str(tmp_path / "config.json"))
    assert e.value.problems[0].path == "quantization_config"
