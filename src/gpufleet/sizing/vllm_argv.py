"""The `vllm serve` argv a node runs, from the spec's serving section and the image recipe's layout.

A module of its own (no jinja2, no node files): user-data writes it (components/userdata.py argv_text) and the
loader's flag check reads it (sizing/checks.py flag_problems) on every command that loads a stack.
"""

from __future__ import annotations

from gpufleet.images.recipes import Layout, fleet_recipe
from gpufleet.sizing.prompt_logging import forced_flags
from gpufleet.stacks.loader import Fleet


def layout(fleet: Fleet) -> Layout:
    return fleet_recipe(fleet.spec).layout


def vllm_args(fleet: Fleet) -> list[str]:
    """`vllm serve` argv from the spec's serving section (flag = field name with - for _)."""
    s = fleet.spec.serving
    args = [
        "vllm",
        "serve",
        f"{layout(fleet).models}/current",
        "--served-model-name",
        fleet.spec.model.name,
        *fleet.spec.model.aliases,
        "--host",
        "127.0.0.1",  # behind the gateway (images/gateway.py), which alone listens on serving.port
        "--port",
        str(s.gateway.vllm_port),
    ]
    flags = {
        "dtype": s.dtype,
        "quantization": s.quantization,
        "kv_cache_dtype": s.kv_cache_dtype,
        "max_model_len": s.max_model_len,
        "gpu_memory_utilization": s.gpu_memory_utilization,
        "max_num_seqs": s.max_num_seqs,
        "max_num_batched_tokens": s.max_num_batched_tokens,
        "tensor_parallel_size": s.tensor_parallel_size,
        **s.extra_args,
    }
    for name, value in flags.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return args + forced_flags(fleet_recipe(fleet.spec).pins.get("vllm"))
