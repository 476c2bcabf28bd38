"""The node's user-data: one cloud-init template for both clouds; cloud differences are data (each cloud's profile.py)."""

from __future__ import annotations

import shlex
from pathlib import Path

import jinja2
from gpufleet.components.registry import profile
from gpufleet.stacks.loader import Fleet

TEMPLATES = Path(__file__).parent / "templates"
ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
)


def vllm_args(fleet: Fleet) -> list[str]:
    """`vllm serve` argv from the spec's serving section (flag = field name with - for _)."""
    s = fleet.spec.serving
    args = [
        "vllm",
        "serve",
        "/data/models/current",
        "--served-model-name",
        fleet.spec.model.name,
        "--host",
        "0.0.0.0",
        "--port",
        str(s.port),
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
    return args


def render_scripts(fleet: Fleet, role_name: str) -> dict[str, str]:
    """The shell scripts and unit embedded in user-data (also checked by shellcheck / systemd-analyze)."""
    cloud = profile(fleet.spec.cloud)
    return {
        "fetch-model": ENV.get_template("fetch-model.sh.j2").render(
            scheme=fleet.spec.model.source.split("://", 1)[0], role=role_name
        ),
        "fetch-secret": ENV.get_template("fetch-secret.sh.j2").render(secret_command=cloud.secret_command(role_name)),
        "vllm.service": ENV.get_template("vllm.service.j2").render(
            model_name=fleet.spec.model.name,
            exec_start=" ".join(shlex.quote(a) for a in vllm_args(fleet)),
            start_timeout_s=fleet.spec.load_balancer.health_check.grace_period_s,
        ),
    }


def render(fleet: Fleet, role_name: str) -> str:
    scripts = render_scripts(fleet, role_name)
    return ENV.get_template("cloud-init.yaml.j2").render(
        cloud=profile(fleet.spec.cloud),
        fleet_name=fleet.prefix,
        region=fleet.spec.region,
        model=fleet.spec.model,
        api_key_secret=fleet.spec.serving.api_key_secret or "",
        fetch_model=scripts["fetch-model"],
        fetch_secret=scripts["fetch-secret"],
        unit=scripts["vllm.service"],
    )
