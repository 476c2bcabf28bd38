"""What the simulation bills each node of a spot group with an on-demand base. alibabacloud_ess20220222 1.13.3,
CreateScalingGroupRequest: OnDemandBaseCapacity "The minimum number of on-demand instances required in the scaling
group ... If the number of on-demand instances is less than this value, Auto Scaling preferentially creates on-demand
instances"; OnDemandPercentageAboveBaseCapacity "The percentage of on-demand instances among the excess instances
after the minimum number of on-demand instances (`OnDemandBaseCapacity`) is met" (0: every node above the base is
spot)."""

from __future__ import annotations

import copy

from simfixtures import START

from gpufleet import plan
from gpufleet.simulate import check, run

STACK = "alicloud-cn-hangzhou-prod"


def test_a_spot_group_launches_its_base_on_demand_and_every_node_above_it_as_spot(cap):
    raw = copy.deepcopy(plan.for_stack(STACK).raw)
    raw["billing"] = {"model": "spot", "on_demand_base": 2, "on_demand_above_base_percent": 0}
    p = plan.for_spec(raw, STACK, "x")
    b = run.behaviour(p.fleet, p.resources)
    (group,) = b.groups
    assert (group.billing, group.on_demand_base, group.on_demand_above_base_percent, group.min) == ("spot", 2, 0, 2)
    r = check.step_result(b, cap, START)
    assert any(e.kind == "out" for e in r.events)  # the step scales the group above its base
    assert len(r.nodes) > 2
    # by hand: the first 2 nodes are the base, pay-as-you-go; 0 % above the base: the rest spot
    assert [n.billing for n in r.nodes] == ["payg", "payg"] + ["spot"] * (len(r.nodes) - 2)


def test_a_spot_group_all_on_demand_above_its_base_bills_no_spot_node(cap):
    """OnDemandPercentageAboveBaseCapacity 100: every instance above the base is on-demand (docs/scaling.md,
    `on_demand_percentage_above_base_capacity`), so the step's scale-out adds pay-as-you-go nodes and the run has no
    spot node-hours."""
    raw = copy.deepcopy(plan.for_stack(STACK).raw)
    raw["billing"] = {"model": "spot", "on_demand_base": 2, "on_demand_above_base_percent": 100}
    p = plan.for_spec(raw, STACK, "x")
    b = run.behaviour(p.fleet, p.resources)
    (group,) = b.groups
    assert (group.billing, group.on_demand_base, group.on_demand_above_base_percent) == ("spot", 2, 100)
    r = check.step_result(b, cap, START)
    assert len(r.nodes) > 2  # the step scales the group above its base
    assert [n.billing for n in r.nodes] == ["payg"] * len(r.nodes)
    assert "spot" not in r.billing_node_s
