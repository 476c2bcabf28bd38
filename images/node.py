"""The node's serving files, owned by the image recipe: the units, the prepare program and the vLLM launcher.

The serving-layout step installs them (images/templates/serving_layout.sh.j2); the fleet's user-data writes
only the environment they read (components/userdata.py: Layout.env_file and Layout.argv_file). Both sides
take every path from the recipe's Layout, so they cannot disagree (tests/test_userdata.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.components import registry
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

    return [
        NodeFile(f"/etc/systemd/system/{lay.unit}", "0644", render("vllm.service")),
        NodeFile(f"/etc/systemd/system/{lay.prepare_unit}", "0644", render("gpufleet-prepare.service")),
        NodeFile(f"{lay.bin}/gpufleet-prepare", "0755", render("gpufleet-prepare.sh")),
        NodeFile(f"{lay.bin}/gpufleet-vllm-launch", "0755", render("gpufleet-vllm-launch.py")),
    ]


def file(recipe: Recipe, path: str) -> NodeFile:
    return next(f for f in files(recipe) if f.path == path)
