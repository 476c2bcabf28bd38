"""The images program: `pulumi up -s <stack>` in this folder; `gpufleet image pipeline` runs it under mocks."""

from pathlib import Path

import pulumi

from gpufleet.images.pipeline import program

program(Path(__file__).parent / f"Pulumi.{pulumi.get_stack()}.yaml")
