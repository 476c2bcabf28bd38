"""The node's serving files, owned by the image recipe: the units, the prepare program and the vLLM launcher.

The serving-layout step installs them (images/templates/serving_layout.sh.j2); the fleet's user-data writes
only the environment they read (components/userdata.py: Layout.env_file and Layout.argv_file). Both sides
take every path from the recipe's Layout, so they cannot disagree (tests/test_userdata.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from msgspec import Struct
from msgspec.structs import asdict

from gpufleet import registry
from gpufleet.images import agent_settings, gateway, node_agent, scaling_signals
from gpufleet.images.node_env import AGENT_ENV_KEYS
from gpufleet.images.recipes import Recipe
from gpufleet.images.templating import environment

AGENT_FILE = "node_agent.py"
AGENT_CONFIG = "agent.json"
AGENT_CLOUDS = "clouds"  # beside the agent: <cloud>.py, each cloud's node module (registry.node_module_file)
# The signals a drain waits on (keys of scaling_metrics.yaml): requests waiting and running.
DRAIN_SIGNALS = ("queue", "running")
SYSTEMCTL = "/usr/bin/systemctl"  # Ubuntu's systemd package (usr-merged since 20.04 images)


def scaling_metrics() -> dict:
    return scaling_signals.raw()


def agent_config(recipe: Recipe) -> dict:
    """The node agent's config (agent.json beside it): the signals from images/data/scaling_metrics.yaml, the
    timings from images/node_agent.yaml, the files it reads from the recipe's layout, each cloud's metadata facts."""
    lay, sm = recipe.layout, scaling_metrics()
    clouds = {}
    for name in registry.names():
        prof = registry.profile(name)
        clouds[name] = {
            "module": f"{lay.gateway_lib}/{AGENT_CLOUDS}/{name}.py" if registry.node_module_file(name) else None,
            "metadata": asdict(prof.instance_metadata) if prof.instance_metadata else None,
            "metrics_api": prof.node_metrics_api,
            "metrics_note": prof.node_metrics_note,
            "lifecycle_api": prof.node_lifecycle_api,
            "lifecycle_note": prof.node_lifecycle_note,
        }
    return {
        "env_files": [lay.env_file, lay.gateway_env_file],
        "env_keys": list(AGENT_ENV_KEYS),
        "drain_flag": gateway.DRAIN_FLAG,
        "drain_signals": list(DRAIN_SIGNALS),
        # `ready` ends the scale-out wait with ABANDON when one of these has failed: the node cannot serve (no weights,
        # no key, or the gateway failed closed) and will not recover by itself (both are oneshots without Restart=)
        "failed_units": [lay.prepare_unit, lay.gateway_unit],
        "systemctl": SYSTEMCTL,
        "period_s": sm["period_s"],
        "dimension": sm["dimension"],
        "metrics": sm["metrics"],
        **agent_settings.load(),
        "clouds": clouds,
    }


class NodeFile(Struct, frozen=True):
    path: str
    mode: str
    content: str


def files(recipe: Recipe) -> list[NodeFile]:
    """Every file the image installs for serving, rendered from the recipe (Jinja2, StrictUndefined)."""
    env = environment(recipe)
    lay = recipe.layout
    values = {
        "recipe": recipe,
        "pins": recipe.pins,
        "layout": lay,
        "clouds": [registry.profile(c) for c in registry.names()],
        "agent": f"{lay.gateway_lib}/{AGENT_FILE}",
        "agent_config": f"{lay.gateway_lib}/{AGENT_CONFIG}",
        "agent_settings": dict(agent_settings.load()),
    }

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
        # The node agent (docs/scaling-node.md): scaling signals, drain, spot notice.
        NodeFile(f"{lay.gateway_lib}/{AGENT_FILE}", "0644", Path(node_agent.__file__).read_text()),
        *(
            NodeFile(f"{lay.gateway_lib}/{AGENT_CLOUDS}/{name}.py", "0644", path.read_text())
            for name in registry.names()
            if (path := registry.node_module_file(name))
        ),
        NodeFile(f"{lay.gateway_lib}/{AGENT_CONFIG}", "0644", json.dumps(agent_config(recipe), indent=1) + "\n"),
        NodeFile(f"{units}/{lay.metrics_unit}", "0644", render("gpufleet-metrics.service")),
        NodeFile(f"{units}/{lay.spot_unit}", "0644", render("gpufleet-spot-watch.service")),
        NodeFile(f"{units}/{lay.ready_unit}", "0644", render("gpufleet-ready.service")),
        NodeFile(lay.drain_command, "0755", render("gpufleet-drain.sh")),
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
        lay.metrics_unit,
        lay.spot_unit,
        lay.ready_unit,
    ]


# What the serving-layout step removes (the distribution's default site would listen on port 80 beside the gateway)
# and the folders it creates (the gateway's access log, images/gateway.py ACCESS_LOG).
REMOVED = ("/etc/nginx/sites-enabled/default",)


def folders() -> tuple[str, ...]:
    return (str(Path(gateway.ACCESS_LOG).parent),)


def file(recipe: Recipe, path: str) -> NodeFile:
    return next(f for f in files(recipe) if f.path == path)
