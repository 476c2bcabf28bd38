"""Stack checks owned by the sizing module: does the model fit the GPU with its serving parameters, and are the
rendered vLLM flags known to the vLLM the image recipe pins? Called by stack validation (`gpufleet preview`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpufleet.errors import did_you_mean
from gpufleet.sizing import fit, flags, models

# `vllm serve` flags in serving.extra_args that change the memory budget. The flags the spec sets itself
# (kv_cache_dtype, max_model_len, ...) cannot be given there (stacks/spec.py RESERVED_FLAGS).
MEMORY_EXTRA_ARGS = ("enforce_eager", "cpu_offload_gb")


def serving_of(spec) -> fit.Serving:
    """The serving parameters a stack renders, memory-relevant extra_args included, and its recipe's vLLM."""
    from gpufleet.images.recipes import load_recipe

    s = spec.serving
    extra = {k.replace("-", "_"): v for k, v in s.extra_args.items()}
    given = {k: extra[k] for k in MEMORY_EXTRA_ARGS if k in extra}
    base = fit.Serving(
        gpus=s.tensor_parallel_size,
        dtype=s.dtype,
        quantization=s.quantization,
        kv_cache_dtype=s.kv_cache_dtype,
        max_model_len=s.max_model_len,
        max_num_seqs=s.max_num_seqs,
        max_num_batched_tokens=s.max_num_batched_tokens,
        gpu_memory_utilization=s.gpu_memory_utilization,
        vllm_version=load_recipe(spec.image.recipe).pins.get("vllm"),
    )
    types = {"enforce_eager": bool, "cpu_offload_gb": float}
    changes: dict[str, Any] = {k: types[k](v) for k, v in given.items()}  # a bool or a float, per field
    return replace(base, **changes)


def sold_sizes(cloud: str) -> set[tuple[str, int]]:
    """(GPU, GPUs per node) of every instance type the cloud's catalog lists."""
    from gpufleet.stacks.catalog import instance_types

    return {(t.gpu, t.gpus) for t in instance_types(cloud)}


def fit_problems(fleet) -> list[tuple[str, str]]:
    from gpufleet.stacks.catalog import gpu_kinds

    spec = fleet.spec
    name = spec.model.catalog or spec.model.name
    model = models.lookup(name)
    if model is None:
        if spec.model.catalog:
            return [
                (
                    "fleet.model.catalog",
                    f"{name!r} is not in the sizing catalog (sizing/data/models.yaml)" + did_you_mean(name, models.catalog()),
                )
            ]
        return []  # not catalogued: nothing to size against (`gpufleet plan fit --model config.json` sizes it by hand)
    r = fit.fit(model, fleet.gpu, serving_of(spec), gpu_kinds(), sold_sizes(spec.cloud))
    if r.fits:
        return []
    return [
        (
            "fleet.serving",
            f"{name} does not fit {spec.serving.tensor_parallel_size}x {fleet.gpu.name} as configured: "
            + "; ".join(r.problems)
            + ". To fix: "
            + "; or ".join(r.advice)
            + f" (see `gpufleet plan fit --stack {fleet.stack}`)",
        )
    ]


def flag_problems(fleet) -> list[tuple[str, str]]:
    from gpufleet.components.userdata import vllm_args
    from gpufleet.images.recipes import load_recipe

    version = load_recipe(fleet.spec.image.recipe).pins.get("vllm")
    if not version:
        return []
    return [
        ("fleet.serving", f"{m} (image recipe {fleet.spec.image.recipe} pins vLLM {version})")
        for m in flags.argv_problems(vllm_args(fleet)[2:], version)
    ]


def spec_problems(fleet) -> list[tuple[str, str]]:
    """(field path, message) for each sizing problem of the fleet."""
    return fit_problems(fleet) + flag_problems(fleet)
