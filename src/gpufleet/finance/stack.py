"""A stack priced: its plan's inventory (gpufleet.plan) through the cost engine, with its usage profile and discounts.

Here, not in gpufleet.plan, so that the plan (validation and the preview) imports nothing of cost and the cost
commands build on the plan in one direction."""

from __future__ import annotations

from gpufleet import plan
from gpufleet.cost import estimate, usage


def stack_estimate(stack: str, usage_file: str | None = None, discounts_file: str | None = None):
    """(fleet, Estimate) of a stack: its plan's inventory priced with its usage profile and discounts."""
    p = plan.for_stack(stack)
    fleet = p.fleet
    return fleet, estimate.price_inventory(
        stack,
        fleet.spec,
        fleet.instance_type.type,
        p.resources,
        usage.load(stack, usage_file),
        estimate.load_discounts(discounts_file),
    )
