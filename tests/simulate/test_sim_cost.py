"""The trace's bill (`plan scaling`'s cost) covers what `cost estimate` covers: the node-hours at one node-month, and
every other line of the estimate for the trace's share of a month (docs/simulation.md, *Cost of the trace*)."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

import pytest

from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.resources import NODE_CATEGORIES
from gpufleet.finance.stack import stack_estimate
from gpufleet.simulate import cost

DAY_S = 24 * 3600


@pytest.mark.parametrize("stack", ["alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"])
def test_the_trace_cost_holds_every_line_outside_the_node_month(stack):
    """The image snapshot is a disk line, but shared: not in one node's month (cost tokens leaves it out), so it is
    one of the fleet's other lines. The trace's bill left it out (12.00 CNY a month on Alibaba, 10.23 on Tencent)."""
    _, est = stack_estimate(stack)
    result = SimpleNamespace(trace=SimpleNamespace(duration_s=DAY_S))
    c = cost.trace_cost(stack, result, {"payg": 48.0}, None)
    items = {x["item"] for x in c["lines"]}
    # one node's own: its instance and disks (cost tokens' node-month), never a cost the stacks share
    others = [l for l in est.lines if l.category not in NODE_CATEGORIES or l.shared]
    assert any("image snapshot" in l.component for l in others)  # the line the trace's bill lacked
    assert {f"{l.resource_name}: {l.component}" for l in others} <= items
    # the other lines add up to the estimate's total outside the node's own lines, for a day of 730 hours
    outside = sum((Decimal(x["cost"]) for x in c["lines"] if not x["item"].startswith("nodes (") and x["cost"]), Decimal(0))
    expected = sum((l.monthly_cost for l in others if l.monthly_cost is not None), Decimal(0)) * 24 / HOURS_PER_MONTH
    assert abs(outside - expected) <= Decimal("0.01") * len(others)
