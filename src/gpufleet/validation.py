"""A stack validated in full: what gpufleet.stacks.loader checks (spec, catalog, the clouds' rules, the image lock),
then the image recipe's checks and the sizing checks (the model fits, the vLLM flags are valid), which need the
engines above the stacks layer. Every command and the Pulumi program load fleets through here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpufleet.images import checks as image_checks
from gpufleet.sizing import checks as sizing_checks
from gpufleet.stacks import loader
from gpufleet.stacks.loader import Fleet

IMAGE_CHECKS: tuple[loader.Check, ...] = (image_checks.spec_problems,)
ALL_CHECKS: tuple[loader.Check, ...] = (image_checks.spec_problems, sizing_checks.spec_problems)


def checks(sizing: bool = True) -> tuple[loader.Check, ...]:
    """The checks on a resolved fleet; sizing=False skips the fit and flag checks (to plan a fleet that does not fit)."""
    return ALL_CHECKS if sizing else IMAGE_CHECKS


def load_fleet(stack: str, root: Path | None = None, sizing: bool = True) -> Fleet:
    return loader.load_fleet(stack, root, checks=checks(sizing))


def validate(raw: dict[str, Any], stack: str, file: str, sizing: bool = True) -> Fleet:
    return loader.validate(raw, stack=stack, file=file, checks=checks(sizing))
