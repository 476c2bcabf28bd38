"""The Pulumi program: `pulumi up -s <stack>` runs this; `gpufleet preview` runs it under mocks."""

import pulumi

from gpufleet.components.fleet import declare_program
from gpufleet.validation import load_fleet

declare_program(load_fleet(pulumi.get_stack()))
