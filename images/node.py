"""The node's serving files, owned by the image recipe: the units, the prepare program and the vLLM launcher.

The serving-layout step installs them (images/templates/serving_layout.sh.j2); the fleet's user-data writes
only the environment they read (components/userdata.py: Layout.env_file and Layout.argv_file). Both sides
take every path from the recipe's Layout, so they cannot disagree (tests/test_userdata.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpufleet.components import registry
from gpufleet.images import gateway
from gpufleet.images.recipes import Recipe

# The environment user-data writes to Layout.env_file: every name the prepare program reads, and only those.
ENV_KEYS = (
    "GPUFLEET_FLEET",
    "GPUFLEET_CLOUD",
    "GPUFLEET_REGION",
    "GPUFLEET_ROLE",
    "GPUFLEET_DATA_DISK",
    "MODEL_SOURCE",
    "MODEL_SHA256",
    "API_KEY_SECRET",
    "GPUFLEET_METRICS_GROUP",
    "GPUFLEET_SCALING_GROUP",
)


@dataclass(frozen=True)
class NodeFile:
    path: str
    mode: str
    content: str


def files(recipe: Recipe) -> list[NodeFile]:
    """Every file the image installs for serving, rendered from the recipe (Jinja2, StrictUndefined)."""
    from gpufleet.images.steps import environment

    env = environment(recipe)
    lay = recipe.layout
    values = {"recipe": recipe, "pins": recipe.pins, "layout": lay, "clouds": [registry.profile(c) for c in registry.names()]}

    def render(name: str) -> str:
        return env.get_template(f"node/{name}.j2").render(values)

    units = "/etc/systemd/system"
    return [
        NodeFile(f"{units}/{lay.unit}", "0644", render("vllm.service")),
        NodeFile(f"{units}/{lay.prepare_unit}", "0644", render("gpufleet-prepare.service")),
        NodeFile(f"{lay.bin}/gpufleet-prepare", "0755", render("gpufleet-prepare.sh")),
        NodeFile(f"{lay.bin}/gpufleet-vllm-launch", "0755", render("gpufleet-vllm-launch.py")),
        # The gateway (docs/gateway.md): its node-side renderer and templates as they are in this repository,
        # the root oneshot that runs it, nginx's drop-in; the exporters bound to 127.0.0.1.
        NodeFile(f"{lay.gateway_lib}/gateway.py", "0644", Path(gateway.__file__).read_text()),
        *(
            NodeFile(f"{lay.gateway_lib}/templates/{name}", "0644", (gateway.TEMPLATES / name).read_text())
            for name in gateway.NODE_TEMPLATES
        ),
        NodeFile(f"{units}/{lay.gateway_unit}", "0644", render("gpufleet-gateway-render.service")),
        NodeFile(f"{units}/nginx.service.d/gpufleet.conf", "0644", render("nginx-gpufleet.conf")),
        NodeFile(
            f"{units}/prometheus-node-exporter.service.d/gpufleet.conf", "0644", render("prometheus-node-exporter-gpufleet.conf")
        ),
        NodeFile(f"{units}/dcgm-exporter.service", "0644", render("dcgm-exporter.service")),
    ]


def enabled_units(recipe: Recipe) -> list[str]:
    """Units the serving-layout step enables (nginx and prometheus-node-exporter come with their packages)."""
    lay = recipe.layout
    return [
        lay.prepare_unit,
        lay.unit,
        lay.gateway_unit,
        "nginx.service",
        "prometheus-node-exporter.service",
        "dcgm-exporter.service",
    ]


# What the serving-layout step removes (the distribution's default site would listen on port 80 beside the gateway)
# and the folders it creates (the gateway's access log, images/gateway.py ACCESS_LOG).
REMOVED = ("/etc/nginx/sites-enabled/default",)


def folders() -> tuple[str, ...]:
    return (str(Path(gateway.ACCESS_LOG).parent),)


def file(recipe: Recipe, path: str) -> NodeFile:
    return next(f for f in files(recipe) if f.path == path)
