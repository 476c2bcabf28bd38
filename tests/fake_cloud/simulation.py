"""How the fleet simulation reads the fake cloud: one group (fakecloud:compute/group:Group) that nothing scales."""

from __future__ import annotations

from pathlib import Path

from gpufleet.behaviour import timings as timing_data
from gpufleet.behaviour.model import Behaviour, Group

TIMINGS = Path(__file__).parent / "simulation.yaml"


def behaviour(resources: list[dict], node: dict, node_completes: bool | None = None) -> Behaviour:
    groups = [
        Group(r["name"], int(r["inputs"]["minSize"]), int(r["inputs"]["maxSize"]), int(r["inputs"]["minSize"]), 300.0, "payg")
        for r in resources
        if r["type"] == "fakecloud:compute/group:Group"
    ]
    return Behaviour(
        cloud="fakecloud", groups=groups, timings={**node, **timing_data.read(TIMINGS)}, notes=["nothing scales the group"]
    )
