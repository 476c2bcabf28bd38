"""The images program: `pulumi up -s <stack>` in this folder (images/program/ of a gpufleet project), whose stack
files Pulumi.<stack>.yaml sit beside it; `gpufleet image pipeline` runs it under mocks (docs/images.md)."""

from pathlib import Path

import pulumi

from gpufleet.images.pipeline import program

program(Path(__file__).parent / f"Pulumi.{pulumi.get_stack()}.yaml")
