"""A stack priced: its plan's inventory (gpufleet.plan) through the cost engine, with its usage profile and discounts.

Here, not in gpufleet.plan, so that the plan (validation and the preview) imports nothing of cost and the cost
commands build on the plan in one direction."""

from __future__ import annotations

from gpufleet import plan
from gpufleet.cost import estimate, usage


def stack_estimate(stack: str, usage_file: str | None = None, discounts_file: str | None = None):
    """(fleet, Estimate) of a stack: its plan's inventory priced with its usage profile and discounts."""
    p = plan.for_stack(stack)
    return p.fleet, plan_estimate(p, usage.load(stack, usage_file), estimate.load_discounts(discounts_file))


def read_stack(stack: str) -> tuple[plan.Plan, usage.Usage]:
    """What a stack's estimate reads of the project: the stack file (validated and previewed, as `gpufleet check`
    does) and its usage profile. A UserError here is bad input; one from plan_estimate after it is a price missing."""
    p = plan.for_stack(stack)
    _ = p.inventory  # the preview: the provider rules and a failing program refuse here, as in `gpufleet check`
    return p, usage.load(stack)


def plan_estimate(p: plan.Plan, use: usage.Usage, discounts: list[estimate.Discount] | None = None) -> estimate.Estimate:
    """The Estimate of a stack's plan, with its usage profile and discounts."""
    fleet = p.fleet
    return estimate.price_inventory(p.stack, fleet.spec, fleet.instance_type.type, p.resources, use, discounts or [])
