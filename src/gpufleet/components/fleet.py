"""GpuFleet: the whole serving fleet of one stack, as one component over the cloud's program."""

from __future__ import annotations

import pulumi

from gpufleet import registry
from gpufleet.stacks.loader import Fleet


class GpuFleet(pulumi.ComponentResource):
    def __init__(self, name: str, fleet: Fleet, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:GpuFleet", name, None, opts)
        self.outputs = registry.program(fleet.spec.cloud).declare(fleet, self)
        self.register_outputs(self.outputs)


def declare_program(fleet: Fleet) -> GpuFleet:
    """What stacks/__main__.py does, for a fleet already loaded."""
    gpu_fleet = GpuFleet(fleet.prefix, fleet)
    for key, value in gpu_fleet.outputs.items():
        pulumi.export(key, value)
    return gpu_fleet
