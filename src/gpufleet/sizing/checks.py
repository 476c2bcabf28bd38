"""Stack checks owned by the sizing module: does the model fit the GPU with its serving parameters, and are the
rendered vLLM flags known to the vLLM the image recipe pins? Called by stack validation (`gpufleet preview`)."""

from __future__ import annotations

import math
from typing import Any

from msgspec.structs import replace

from gpufleet.errors import did_you_mean
from gpufleet.files import package_file
from gpufleet.sizing import fit, flags, models
from gpufleet.sizing.profiler import GIB
from gpufleet.stacks.catalog import gpu_kinds, instance_types

# `vllm serve` flags in serving.extra_args that change the memory budget, and the type each is read as. The flags the
# spec sets itself (kv_cache_dtype, max_model_len, tensor_parallel_size, ...) cannot be given there (stacks/spec.py
# RESERVED_FLAGS); extra_args are checked against the pinned vLLM's flags like the rest (flags.argv_problems).
MEMORY_EXTRA_ARGS: dict[str, type] = {
    "enforce_eager": bool,
    "cpu_offload_gb": float,
    "pipeline_parallel_size": int,
    "data_parallel_size": int,
    "enable_expert_parallel": bool,
    "enable_lora": bool,
    "max_loras": int,
    "max_lora_rank": int,
}
# vLLM's defaults when --enable-lora is given without them (vllm/config/lora.py: max_loras 1, max_lora_rank 16)
LORA_DEFAULTS = {"max_loras": 1, "max_lora_rank": 16}
SERVING_FIELD = {
    "pipeline_parallel_size": "pipeline_parallel",
    "data_parallel_size": "data_parallel",
    "enable_expert_parallel": "expert_parallel",
}


def serving_of(spec) -> fit.Serving:
    """The serving parameters a stack renders, memory-relevant extra_args included, and its recipe's vLLM."""
    # deferred: the recipe models (pydantic) are not for `plan fit` without --stack, which imports this module
    from gpufleet.images.recipes import fleet_recipe

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
        vllm_version=fleet_recipe(spec).pins.get("vllm"),
    )
    changes: dict[str, Any] = {
        SERVING_FIELD.get(k, k): _typed(k, v) for k, v in given.items() if k not in ("enable_lora", "max_loras")
    }
    if _typed("enable_lora", extra.get("enable_lora", False)):
        changes["max_loras"] = _typed("max_loras", extra.get("max_loras", LORA_DEFAULTS["max_loras"]))
        changes.setdefault("max_lora_rank", LORA_DEFAULTS["max_lora_rank"])
    return replace(base, **changes)


def _typed(flag: str, value: Any) -> Any:
    """An extra_args value as the Serving field's type; a bare flag (True, "") is on for a boolean."""
    kind = MEMORY_EXTRA_ARGS[flag]
    if kind is bool:
        return value in (True, "", None) or str(value).lower() in ("true", "1", "yes")
    return kind(value)


def extra_args_problems(spec) -> list[tuple[str, str]]:
    """(field path, message) for each memory-relevant extra_args value that is not the number vLLM takes."""
    out = []
    for k, v in spec.serving.extra_args.items():
        flag = k.replace("-", "_")
        kind = MEMORY_EXTRA_ARGS.get(flag)
        if kind in (int, float):
            ok = not isinstance(v, bool)
            try:
                number = kind(v) if ok else 0
                ok = ok and number >= 0 and (kind is float or str(v).strip().lstrip("+").isdigit() or isinstance(v, int))
                ok = ok and number == number and number != float("inf")
            except (TypeError, ValueError):
                ok = False
            if not ok:
                out.append((f"fleet.serving.extra_args.{k}", f"{v!r} is not a {'whole ' if kind is int else ''}number >= 0"))
    return out


def sold_sizes(cloud: str) -> set[tuple[str, int]]:
    """(GPU, GPUs per node) of every instance type the cloud's catalog lists."""

    return {(t.gpu, t.gpus) for t in instance_types(cloud)}


# The data disk holds the weights twice while a node prepares (images/templates/node/gpufleet-prepare.sh.j2: the cloud
# CLIs download the archive to a file beside the folder it is unpacked into, and the archive goes after the unpack),
# an uncompressed tar of the checkpoint's files, about their size. ext4 takes its inode tables (256-byte inodes, one
# per 16 KiB: 1/64 of the disk, mke2fs.conf(5) defaults inode_size and inode_ratio) and a journal of at most 1 GiB
# (ext2fs_default_journal_size) off the top: 10 % of room covers them with some to spare.
WEIGHT_COPIES = 2
DISK_MARGIN = 0.10


def checkpoint_gib(model, quantization: str | None = None) -> float:
    """The checkpoint's size as stored, uncompressed: its own dtype (float32 stays 4 bytes) and its own quantization,
    or the serving's `quantization` where that names a quantized checkpoint of a catalogued 16-bit model (a stack
    serving Qwen2.5-7B-Instruct-AWQ sized as Qwen2.5-7B-Instruct, as fit sizes it); a format vLLM applies as it loads
    (fp8, bitsandbytes: quantization.yaml in_flight) leaves the checkpoint 16-bit."""
    dtype = model.torch_dtype if model.torch_dtype in fit.DTYPE_BYTES else "bfloat16"
    if model.checkpoint_quantization:
        quant = model.checkpoint_quantization[0]
    elif fit.known_format(quantization) and not fit.quant_format(quantization).get("in_flight"):
        quant = quantization
    else:
        quant = None
    return fit.weight_bytes(model, dtype, quant) / GIB


def data_disk_problems(fleet, model, quantization: str | None) -> list[tuple[str, str]]:
    """A data disk too small for the archive and the unpacked weights together: every node's prepare would fail."""
    try:
        gib = checkpoint_gib(model, quantization)
    except (KeyError, ValueError, ZeroDivisionError):
        return []  # a checkpoint sizing cannot read; the fit check says what it can
    need = math.ceil(WEIGHT_COPIES * gib * (1 + DISK_MARGIN))
    have = fleet.spec.disks.data.size_gib
    if have >= need:
        return []
    return [
        (
            "fleet.disks.data.size_gib",
            f"{have} GiB is too small for {fleet.spec.model.name}: a node downloads the weights archive (about "
            f"{gib:.1f} GiB uncompressed) and unpacks it beside itself, {WEIGHT_COPIES} x {gib:.1f} GiB + {DISK_MARGIN:.0%} for "
            f"ext4 = {need} GiB; set disks.data.size_gib to at least {need}",
        )
    ]


def fit_problems(fleet) -> list[tuple[str, str]]:
    from gpufleet.stacks.loader import stack_arg  # deferred: a fleet was loaded by it (see flag_problems)

    spec = fleet.spec
    name = spec.model.catalog or spec.model.name
    model = models.lookup(name)
    if model is None:
        if spec.model.catalog:
            return [
                (
                    "fleet.model.catalog",
                    f"{name!r} is not in the sizing catalog ({package_file(models.CATALOG)})"
                    + did_you_mean(name, models.catalog()),
                )
            ]
        return []  # not catalogued: nothing to size against (`gpufleet plan fit --model config.json` sizes it by hand)
    if problems := extra_args_problems(spec):
        return problems
    serving = serving_of(spec)
    world = serving.gpus * serving.pipeline_parallel * serving.data_parallel
    if world > spec.gpu.count:
        return [
            (
                "fleet.serving.extra_args",
                f"tensor_parallel_size {serving.gpus} x pipeline_parallel_size {serving.pipeline_parallel} x "
                f"data_parallel_size {serving.data_parallel} = {world} GPUs, more than gpu.count ({spec.gpu.count}) on a node",
            )
        ]
    r = fit.fit(model, fleet.gpu, serving, gpu_kinds(), sold_sizes(spec.cloud))
    disk = data_disk_problems(fleet, model, serving.quantization)
    if r.fits:
        return disk
    shown = spec.model.name if spec.model.name == name else f"{spec.model.name} (sized as {name})"
    return [
        (
            "fleet.serving",
            f"{shown} does not fit {spec.serving.tensor_parallel_size}x {fleet.gpu.name} as configured: "
            + "; ".join(r.problems)
            + ". To fix: "
            + "; or ".join(r.advice)
            + f" (see `gpufleet plan fit --stack {stack_arg(fleet.stack)}`)",
        )
    ] + disk


def flag_problems(fleet) -> list[tuple[str, str]]:
    # deferred: the recipes and the argv read the image recipe models and the stack loader (pydantic models, about 500M
    # instructions): `plan fit` without --stack imports this module and must not pay for them
    from gpufleet.images.recipes import fleet_recipe
    from gpufleet.sizing.vllm_argv import vllm_args

    version = fleet_recipe(fleet.spec).pins.get("vllm")
    if not version:
        return []
    return [
        ("fleet.serving", f"{m} (image recipe {fleet.spec.image.recipe} pins vLLM {version})")
        for m in flags.argv_problems(vllm_args(fleet)[2:], version)
    ]


def spec_problems(fleet) -> list[tuple[str, str]]:
    """(field path, message) for each sizing problem of the fleet."""
    return fit_problems(fleet) + flag_problems(fleet)
