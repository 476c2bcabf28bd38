"""The engine's parts on prod, each by hand from the documented inputs (docs/simulation.md, "The model").

Prod (stacks/Pulumi.alicloud-cn-hangzhou-prod.yaml): health check every 5 s, 2 healthy / 3 unhealthy checks; a launch
hook completed once vLLM serves (timeout 900 s) and a leaving hook completed by the drain (`drain_timeout_s` 660).
Timings: instance_create_s 90 (components/alicloud/simulation.yaml), os_boot_s 4, vllm_load_s 33, cuda_graphs_s 29
(behaviour/data/node.yaml); weights_fetch_s is the checkpoint at 1 Gbit/s (pinned by hand in
test_weights_fetch_time.py).
"""

from __future__ import annotations

import copy

import pytest
from simfixtures import START

from gpufleet import plan
from gpufleet.simulate import engine, run
from gpufleet.simulate.capacity import NodeCapacity
from gpufleet.simulate.trace import Trace

PROD = "alicloud-cn-hangzhou-prod"
GIVEN = NodeCapacity(13.8, "given")


def _behaviour(stack: str = PROD, billing: dict | None = None):
    p = plan.for_stack(stack)
    if billing is None:
        return run.behaviour(p.fleet, p.resources)
    raw = copy.deepcopy(p.raw)
    raw["billing"] = billing
    q = plan.for_spec(raw, stack, "x")
    return run.behaviour(q.fleet, q.resources)


def _sim(b, cap: NodeCapacity = GIVEN, steps: int = 1) -> engine.Simulation:
    return engine.Simulation(b, cap, Trace(START, 10.0, [0.0] * steps))


def test_a_launched_node_is_ready_after_boot_weights_vllm_and_cuda_graphs_then_serves_after_the_healthy_checks():
    """docs/simulation.md: created (instance_create_s), boots, fetches the weights, loads vLLM and captures CUDA graphs;
    it serves once the load balancer has seen it healthy (healthy_threshold x interval)."""
    b = _behaviour()
    assert (b.health.interval_s, b.health.healthy_threshold) == (5.0, 2)
    fetch = b.timing("weights_fetch_s")
    sim = _sim(b)
    (g,) = sim.groups.values()
    n = sim._start_node(g)
    sim.env.process(sim._launch(n))
    sim.env.run()
    assert n.in_service == 90.0  # instance_create_s
    # by hand: os_boot 4 + weights fetch + vllm_load 33 + cuda_graphs 29
    assert n.ready - n.in_service == pytest.approx(4 + fetch + 33 + 29)
    # the launch hook lets it go at ready (before its 900 s timeout); then 2 healthy checks x 5 s = 10 s
    assert n.hook_wait_s == 0.0
    assert n.serving - n.ready == pytest.approx(10.0)


@pytest.mark.parametrize(
    ("p95_s", "drain_s"),
    [
        (30.0, 45.0),  # 3 unhealthy checks x 5 s + the running requests' 30 s p95 = 45 s, inside the hook's 660 s
        (700.0, 660.0),  # 15 + 700 = 715 s: bounded by the leaving hook's timeout (drain_timeout_s 660)
    ],
)
def test_a_leaving_node_drains_the_unhealthy_checks_then_the_load_tests_p95_bounded_by_the_hook(p95_s, drain_s):
    """docs/simulation.md: leaving, it drains (unhealthy checks, then its running requests at the load test's p95
    latency), bounded by the leaving hook."""
    b = _behaviour()
    sim = _sim(b, NodeCapacity(13.8, "given", latency_p95_s=p95_s))
    (g,) = sim.groups.values()
    n = sim._start_node(g, at_start=True)
    assert sim._drain_s(n) == pytest.approx(drain_s)


@pytest.mark.parametrize(("notice_s", "drain_s"), [(300.0, 45.0), (20.0, 20.0)])
def test_a_spot_reclaim_cuts_the_drain_at_the_notice_and_no_later(notice_s, drain_s):
    """docs/simulation.md: a spot reclaim cuts the drain at the notice. The drain is 45 s (3 x 5 s + a 30 s p95):
    min(45, notice), so a 300 s notice leaves the node gone after 45 s, a 20 s one after 20 s."""
    b = _behaviour()
    sim = _sim(b, NodeCapacity(13.8, "given", latency_p95_s=30.0))
    (g,) = sim.groups.values()
    n = sim._start_node(g, at_start=True)
    sim.env.process(sim._leave(n, within_s=notice_s))
    sim.env.run()
    assert n.gone - n.leaving == pytest.approx(drain_s)


def test_scale_in_removes_spot_nodes_before_the_on_demand_base():
    """docs/scaling.md ("Spot over an on-demand base"): the base of `on_demand_base` on-demand nodes is what keeps one
    spot reclaim from taking the fleet below its minimum; ESS's OnDemandBaseCapacity is "the minimum number of
    on-demand instances required in the scaling group". A group of 2 pay-as-you-go (the base, 2) and 1 spot node scaled
    in to 2 keeps both pay-as-you-go nodes: the spot one leaves."""
    b = _behaviour(billing={"model": "spot", "on_demand_base": 2, "on_demand_above_base_percent": 0})
    sim = _sim(b)
    (g,) = sim.groups.values()
    assert g.spec.on_demand_base == 2
    for billing in ("payg", "payg", "spot"):
        sim._start_node(g, at_start=True, billing=billing)
    g.desired = 2
    sim.env.process(sim._activity(g, None))
    sim.env.run()
    assert [n.billing for n in sim.members(g.spec.name)] == ["payg", "payg"]


def test_node_hours_count_each_step_for_its_length():
    """dev (replicas 1/1/1, pay-as-you-go, no schedule) runs its one node from before the trace: over 36 steps of 10 s
    (360 s) it bills 1 node x 360 s, whatever the load."""
    b = _behaviour("alicloud-cn-hangzhou-dev")
    (group,) = b.groups
    assert (group.min, group.max, group.desired, group.billing, b.schedules) == (1, 1, 1, "payg", [])
    r = run.simulate(b, GIVEN, Trace(START, 10.0, [1.0] * 36))
    assert r.billing_node_s == {"payg": 360.0}


def test_the_load_balancer_splits_by_serving_nodes_times_weight():
    """docs/simulation.md: split by serving nodes x per-node weight. 2 nodes at 95 and 1 at 5: 190 and 5 of 195."""
    shares = engine.load_split({"a": 2, "b": 1}, {"a": 95, "b": 5})
    assert shares == pytest.approx({"a": 190 / 195, "b": 5 / 195})
    assert sum(shares.values()) == pytest.approx(1.0)


def test_a_reclaimed_spot_node_is_replaced_at_the_notice_when_the_group_remedies_spot():
    """docs/simulation.md reads ESS's `spot_instance_remedy` (the program sets it on every spot group,
    components/alicloud/scaling.py): ESS launches a replacement when the reclaim notice arrives. dev switched to spot
    with no on-demand base (replicas 1/1/1): its one spot node is reclaimed at 600 s; a new node is created at 600 s,
    and at the end the group holds its one node again. Before, the replacement counted the reclaimed node as a member
    (its leave had not started yet), so none was launched and nothing served for the rest of the trace."""
    b = _behaviour("alicloud-cn-hangzhou-dev", billing={"model": "spot", "on_demand_base": 0, "on_demand_above_base_percent": 0})
    (group,) = b.groups
    assert (group.billing, group.spot_remedy, group.desired) == ("spot", True, 1)
    r = run.simulate(b, GIVEN, Trace(START, 10.0, [1.0] * 360), reclaim_at=(600.0,))
    assert [e.kind for e in r.events if e.kind == "reclaim"] == ["reclaim"]
    reclaimed, replacement = r.nodes
    assert reclaimed.leaving == 600.0 and replacement.created == 600.0
    assert replacement.leaving == float("inf") and replacement.serving < 3600.0


def test_reclaims_per_hour_are_evenly_spread_the_first_one_interval_after_the_start():
    """`--reclaim-per-hour R`: "spot reclaims per hour, evenly spread" (the CLI's help), a rate, so one every 3600 / R
    s, the first one interval after the start (an hour at R reclaims starts with no reclaim due: the start is not a
    reclaim). Staging on spot (replicas 1/2/1, no on-demand base: its one node at the start is spot) over 3700 s at
    R = 1: the one reclaim due is at 3600 s, none at 0."""
    b = _behaviour(
        "alicloud-cn-hangzhou-staging", billing={"model": "spot", "on_demand_base": 0, "on_demand_above_base_percent": 0}
    )
    (group,) = b.groups
    assert (group.min, group.desired, group.billing, group.on_demand_base) == (1, 1, "spot", 0)
    r = run.simulate(b, GIVEN, Trace(START, 10.0, [1.0] * 370), reclaim_per_hour=1.0)
    assert [e.time_s for e in r.events if e.kind == "reclaim"] == [3600.0]


def test_a_reclaimed_tencent_spot_node_is_replaced_once_the_spot_service_has_destroyed_it():
    """Tencent AS without CapacityRebalance (its default, FALSE; the provider has no argument for it) "waits until the
    spot instance is destroyed, then scales out to the desired capacity" (tccli autoscaling api.json,
    CreateAutoScalingGroup CapacityRebalance). dev switched to spot (1 node): reclaimed at 600 s, the replacement is
    created when the notice ends, 600 + spot_notice_s (components/tencentcloud/simulation.yaml), not at 600."""
    b = _behaviour(
        "tencentcloud-ap-guangzhou-dev", billing={"model": "spot", "on_demand_base": 0, "on_demand_above_base_percent": 0}
    )
    (group,) = b.groups
    assert (group.billing, group.spot_remedy, group.desired) == ("spot", False, 1)
    r = run.simulate(b, GIVEN, Trace(START, 10.0, [1.0] * 360), reclaim_at=(600.0,))
    reclaimed, replacement = r.nodes
    assert reclaimed.leaving == 600.0
    assert replacement.created == 600.0 + b.timing("spot_notice_s")
