"""The node's user-data: the fleet's environment only, one cloud-init template for both clouds; cloud differences
are data (each cloud's profile.py).

The image recipe owns the serving units, the root prepare program and the vLLM launcher (images/node.py);
user-data writes the two files they read, at the paths of the recipe's Layout:
- Layout.env_file: KEY=VALUE lines (images.node_env.ENV_KEYS), read by systemd's EnvironmentFile= only;
- Layout.argv_file: vLLM's argv after the program name, a JSON list the launcher execs without a shell;
- Layout.gateway_env_file: the gateway's KEY=VALUE lines (images/gateway.py env_text), read by the image's
  root oneshot that renders nginx's config and by the exporters' units (EnvironmentFile=).
"""

from __future__ import annotations

import base64
import json

from gpufleet.images.node_env import ENV_KEYS
from gpufleet.registry import profile
from gpufleet.sizing.vllm_argv import layout, vllm_args
from gpufleet.stacks.loader import Fleet
from gpufleet.stacks.spec import ENV_VALUE  # what systemd's EnvironmentFile= takes literally: no quote, backslash, $ or space

# The user-data is this one short document, built here rather than from a Jinja template: every preview renders it, and
# importing jinja2 for it cost 82M instructions, about 4 % of a preview's floor (scripts/bench.py --instructions).
HEADER = """#cloud-config
# Rendered by gpufleet (components/userdata.py). Only the fleet's environment: the units, the prepare program,
# the vLLM launcher and the gateway come with the image (images/node.py). Holds no secret: the API key is read at
# boot from the cloud's secrets manager through the instance role ({role_kind}).
write_files:"""
WRITE_FILE = """
  - path: {path}
    owner: root:root
    permissions: "0644"
    content: |
{content}"""


def environment(fleet: Fleet, role_name: str, metrics_group: str = "", scaling_group: str = "") -> dict[str, str]:
    """The fleet's environment for the image's prepare program: exactly images.node_env.ENV_KEYS.

    metrics_group: the CloudMonitor group the node publishes its scaling metrics into (Alibaba; "" where the cloud
    reads them otherwise); scaling_group: the id of the scaling group the node belongs to ("" where the cloud creates
    the launch configuration before the group, docs/scaling.md). Both are resource ids, never secrets."""
    spec = fleet.spec
    env = {
        "GPUFLEET_FLEET": fleet.prefix,
        "GPUFLEET_CLOUD": spec.cloud,
        "GPUFLEET_REGION": spec.region,
        "GPUFLEET_ROLE": role_name,
        "GPUFLEET_DATA_DISK": profile(spec.cloud).data_disk,
        "MODEL_SOURCE": spec.model.source,
        "MODEL_SHA256": spec.model.sha256,
        "API_KEY_SECRET": spec.serving.api_key_secret or "",
        "GPUFLEET_METRICS_GROUP": str(metrics_group),
        "GPUFLEET_SCALING_GROUP": str(scaling_group),
    }
    assert tuple(env) == ENV_KEYS
    bad = [k for k, v in env.items() if not ENV_VALUE.match(v)]
    if bad:  # the spec validates these fields by pattern; this is the last line before a unit file
        raise ValueError(f"values of {', '.join(bad)} hold characters systemd's EnvironmentFile= would interpret")
    return env


def env_text(fleet: Fleet, role_name: str, metrics_group: str = "", scaling_group: str = "") -> str:
    return "".join(f"{k}={v}\n" for k, v in environment(fleet, role_name, metrics_group, scaling_group).items())


def argv_text(fleet: Fleet) -> str:
    return json.dumps(vllm_args(fleet)[1:]) + "\n"


def gateway_env_text(fleet: Fleet) -> str:
    """The gateway's environment (images/gateway.py), held to the same EnvironmentFile= character rule."""
    # deferred: keeps jinja2 (images.templating) off the preview path
    from gpufleet.images import gateway

    env = gateway.env_map(gateway.values_from_fleet(fleet))
    bad = [k for k, v in env.items() if not ENV_VALUE.match(v)]
    if bad:
        raise ValueError(f"values of {', '.join(bad)} hold characters systemd's EnvironmentFile= would interpret")
    return "".join(f"{k}={v}\n" for k, v in env.items())


def render(fleet: Fleet, role_name: str, metrics_group: str = "", scaling_group: str = "") -> str:
    lay = layout(fleet)
    files = [
        (lay.env_file, env_text(fleet, role_name, metrics_group, scaling_group)),
        (lay.argv_file, argv_text(fleet)),
        (lay.gateway_env_file, gateway_env_text(fleet)),
    ]
    return (
        HEADER.format(role_kind=profile(fleet.spec.cloud).role_kind)
        + "".join(WRITE_FILE.format(path=path, content=block_content(text.rstrip("\n"))) for path, text in files)
        + "\n"
    )


def block_content(text: str, width: int = 6) -> str:
    """text as the content of a YAML literal block: every line indented by width but empty ones (as Jinja's
    indent(width, first=True) filter does, which rendered it before; tests/test_userdata.py compares the two)."""
    first, *rest = (text + "\n").splitlines()
    return " " * width + "\n".join([first, *(" " * width + line if line else line for line in rest)])


def render_output(fleet: Fleet, role_name: str, metrics_group="", scaling_group=""):
    """render() once the ids are known: a pulumi Output of the user-data when an id is a resource's output."""
    # deferred: the Pulumi SDK and providers (~100 ms): only the program and the image pipeline need them
    import pulumi

    return pulumi.Output.all(metrics_group, scaling_group).apply(lambda ids: render(fleet, role_name, *ids))


def base64_output(text) -> object:
    """User-data as the providers take it: Base64 of the text (a str or a pulumi Output of one)."""

    # deferred: the Pulumi SDK and providers (~100 ms): only the program and the image pipeline need them
    import pulumi

    return pulumi.Output.from_input(text).apply(lambda t: base64.b64encode(t.encode()).decode())
