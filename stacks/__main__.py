"""The Pulumi program: `pulumi up -s <stack>` runs this; `gpufleet preview` runs it under mocks."""
import pulumi

from gpufleet.components.fleet import GpuFleet
from gpufleet.stacks.loader import load_fleet

fleet = load_fleet(pulumi.get_stack())
gpu_fleet = GpuFleet(fleet.prefix, fleet)
for key, value in gpu_fleet.outputs.items():
    pulumi.export(key, value)
