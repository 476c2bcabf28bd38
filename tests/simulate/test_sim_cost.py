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


def test_the_node_hours_cost_one_node_month_over_730_hours():
    """docs/simulation.md, *Cost of the trace*: node-hours x one node-month / 730. Alibaba prod's pay-as-you-go
    node-month is 7336.50 CNY (docs/cost-reports.md, by hand: 9.53 x 730 + 73.00 + 306.60), so 48 node-hours cost
    7336.50 x 48 / 730 = 352152 / 730 = 482.40 CNY (over 720 hours it would be 489.10)."""
    result = SimpleNamespace(trace=SimpleNamespace(duration_s=DAY_S))
    c = cost.trace_cost("alicloud-cn-hangzhou-prod", result, {"payg": 48.0}, None)
    (nodes,) = [x for x in c["lines"] if x["item"] == "nodes (payg)"]
    assert nodes["node_hours"] == 48.0
    assert Decimal(nodes["per_node_month"]) == Decimal("7336.50")
    assert Decimal(nodes["cost"]) == Decimal("482.40")


def test_an_unpriced_line_makes_the_trace_cost_a_lower_bound():
    """docs/simulation.md: "an unpriced line makes it a lower bound (`>=`)": JSON `complete: false`, and the line is
    listed with no cost, never counted as zero. Alibaba prod's estimate has lines with no price outside the node's own
    (the load balancer's LCU, the bucket's storage: `cost estimate` shows them unpriced)."""
    _, est = stack_estimate("alicloud-cn-hangzhou-prod")
    unpriced = [l for l in est.lines if (l.category not in NODE_CATEGORIES or l.shared) and l.monthly_cost is None]
    assert unpriced  # else this test proves nothing
    result = SimpleNamespace(trace=SimpleNamespace(duration_s=DAY_S))
    c = cost.trace_cost("alicloud-cn-hangzhou-prod", result, {"payg": 48.0}, None)
    assert c["complete"] is False
    listed = {x["item"]: x["cost"] for x in c["lines"]}
    assert all(listed[f"{l.resource_name}: {l.component}"] is None for l in unpriced)


def test_the_cost_per_million_output_tokens_is_the_total_over_the_tokens_times_a_million():
    """Per million output tokens = total / tokens x 10^6 (docs/simulation.md): a trace that served exactly 10^6 tokens
    costs its total per million, and 4 x 10^6 tokens a quarter of it (the total rounded to the cent either way)."""
    result = SimpleNamespace(trace=SimpleNamespace(duration_s=DAY_S))
    one = cost.trace_cost("alicloud-cn-hangzhou-prod", result, {"payg": 48.0}, 1_000_000)
    assert Decimal(one["per_million_output_tokens"]) == Decimal(one["total"])
    four = cost.trace_cost("alicloud-cn-hangzhou-prod", result, {"payg": 48.0}, 4_000_000)
    assert abs(Decimal(four["per_million_output_tokens"]) - Decimal(four["total"]) / 4) <= Decimal("0.005")
