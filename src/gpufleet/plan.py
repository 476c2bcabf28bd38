"""A Plan: the validated fleet of a stack and the inventory its program declares, computed once per run.

Preview, cost (estimate, diff, compare), sizing and region new read the same Plan instead of each loading,
validating and declaring the stack again. Orchestration lives here, not in the CLI modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec import Struct

from gpufleet import validation
from gpufleet.stacks import loader


class Plan(Struct):
    """A stack's validated fleet and, once previewed, what its program declares."""

    stack: str
    fleet: loader.Fleet
    raw: dict[str, Any]  # the `gpufleet:fleet` mapping the fleet was validated from (read-only)
    root: Path | None = None
    from_file: bool = True  # the stack file (the program loads it) or data (cost compare's options)
    _inventory: Any = None  # the preview, once run

    @property
    def inventory(self):
        """What the program declares under the mock engine (gpufleet.preview.Inventory), run on first use."""
        if self._inventory is None:
            # deferred: the preview imports the SDK and providers (~100 ms); plan fit --stack needs no preview
            from gpufleet import preview

            if self.from_file:
                self._inventory = preview.preview_stack(self.stack, self.root)
            else:
                self._inventory = preview.preview_fleet(self.fleet, self.raw)
        return self._inventory

    @property
    def resources(self) -> list[dict]:
        return [dict(r) for r in self.inventory.resources]


_PLANS: dict[tuple, Plan] = {}


def for_stack(stack: str, root: Path | None = None) -> Plan:
    """The stack's plan (validated once; the inventory once, when first asked)."""
    fleet = validation.load_fleet(stack, root)
    key = (stack, str(root), id(fleet))
    if key not in _PLANS:
        _, config = loader.read_stack_config(stack, root)
        _PLANS[key] = Plan(stack=stack, fleet=fleet, raw=config[loader.CONFIG_KEY], root=root)
    return _PLANS[key]


def for_spec(raw: dict[str, Any], stack: str, file: str) -> Plan:
    """A plan of a spec given as data (validated here, once)."""
    return Plan(stack=stack, fleet=validation.validate(raw, stack=stack, file=file), raw=raw, from_file=False)
