"""GpuFleet: the whole serving fleet of one stack, as one component over the cloud's program."""

from __future__ import annotations

import pulumi

from gpufleet import registry
from gpufleet.stacks.loader import Fleet, candidate_field
from gpufleet.stacks.lock import BUILD_AND_LOCK


class GpuFleet(pulumi.ComponentResource):
    def __init__(self, name: str, fleet: Fleet, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:index:GpuFleet", name, None, opts)
        self.outputs = registry.program(fleet.spec.cloud).declare(fleet, self)
        self.register_outputs(self.outputs)


def placeholder_problem(fleet: Fleet) -> str | None:
    """Why `pulumi up` must not deploy this fleet: a group's image is a placeholder of images/lock.json (no image was
    built), on which nodes launch and never boot; None when every group has a built image."""
    groups = [("the fleet", fleet), *([("the rollout's candidate", fleet.candidate)] if fleet.candidate else [])]
    held = [f"{who}'s {f.image_id} ({f.spec.image.recipe})" for who, f in groups if f.image_placeholder]
    if not held:
        return None
    field = "fleet.image.recipe" if fleet.image_placeholder else candidate_field("fleet.image.recipe")
    return (
        f"{fleet.file}: {field}: images/lock.json holds only a placeholder for {' and '.join(held)} in "
        f"{fleet.spec.cloud}/{fleet.spec.region}, not a built image: {BUILD_AND_LOCK} before `pulumi up`; nothing was "
        "created"
    )


def declare_program(fleet: Fleet) -> GpuFleet:
    """What stacks/__main__.py does, for a fleet already loaded. A deployment (not a preview) of a placeholder image is
    refused before any resource is registered."""
    if not pulumi.runtime.is_dry_run() and (why := placeholder_problem(fleet)):
        raise pulumi.RunError(why)  # Pulumi prints a RunError's message alone, without a traceback
    gpu_fleet = GpuFleet(fleet.prefix, fleet)
    for key, value in gpu_fleet.outputs.items():
        pulumi.export(key, value)
    return gpu_fleet
