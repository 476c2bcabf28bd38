"""The summary's figures on runs written by hand (simulate/summary.py): the peak's nodes are ceil(peak / per node)
(docs/simulation.md, *The peak's nodes*), the time to them counts from the first step the load is above what is
serving, and a step no node serves has no TTFT, so it is over any SLO."""

from __future__ import annotations

import pytest
from simfixtures import START

from gpufleet import plan
from gpufleet.simulate import capacity, run, summary
from gpufleet.simulate.engine import Event, Node, Result
from gpufleet.simulate.trace import Trace

STEP_S = 10.0


def _result(arrivals: list[float], serving: list[int], ttft_s: list[float | None], per_node: float = 10.0) -> Result:
    """A run of Alibaba prod's fleet (its groups' max; no schedule, no event) with the given series, one per step."""
    p = plan.for_stack("alicloud-cn-hangzhou-prod")
    b = run.behaviour(p.fleet, p.resources)
    b.schedules = []
    n = len(arrivals)
    return Result(
        trace=Trace(START, STEP_S, list(arrivals)),
        behaviour=b,
        capacity=capacity.given(per_node),
        times=[i * STEP_S for i in range(n)],
        arrivals=list(arrivals),
        served=[min(a, s * per_node) * STEP_S for a, s in zip(arrivals, serving)],
        counts={"serving": list(serving)},
        queue=[0.0] * n,
        p95_wait_s=[None if s == 0 else 0.0 for s in serving],
        ttft_s=list(ttft_s),
    )


@pytest.mark.parametrize(
    ("rate", "per_node", "nodes"),
    [
        (20.0, 10.0, 2),  # exactly 2 nodes' worth: ceil(2) = 2, not 3
        (27.536, 13.768, 2),  # 2 x the example load test's knee
        (2.1, 0.7, 3),  # 2.1 / 0.7 is 3.0000000000000004 in floats: still 3 nodes of 0.7 req/s
        (20.5, 10.0, 3),  # above 2 nodes' worth: ceil(2.05) = 3
    ],
)
def test_the_peak_needs_ceil_of_peak_over_per_node(rate, per_node, nodes):
    assert summary.needed_nodes(rate, per_node) == nodes


def test_a_load_exactly_at_what_serves_is_never_short():
    """2 nodes x 10 req/s serve exactly 20 req/s: the load is never above what is serving, so there is no time to the
    peak's nodes (None, not 0); at 20.5 req/s it is short from the first step until 3 serve, 2 steps later (20 s)."""
    exact = summary.summary(_result([20.0] * 6, [2] * 6, [0.1] * 6), None)
    assert exact["peak_nodes_needed"] == 2
    assert exact["time_to_peak_nodes_s"] is None
    short = summary.summary(_result([20.5] * 6, [2, 2, 3, 3, 3, 3], [0.1] * 6), None)
    assert short["peak_nodes_needed"] == 3
    assert short["time_to_peak_nodes_s"] == 2 * STEP_S


def test_a_step_no_node_serves_counts_over_the_slo():
    """6 steps of 10 s, a 0.5 s TTFT SLO: one step at 0.8 s is over; two steps with no serving node (no TTFT) are over
    too; three at 0.1 s are not: 3 x 10 = 30 s over the SLO, 2 x 10 = 20 s never served."""
    r = _result([5.0] * 6, [1, 1, 0, 0, 1, 1], [0.1, 0.8, None, None, 0.1, 0.1])
    s = summary.summary(r, 0.5)
    assert s["never_served_s"] == 2 * STEP_S
    assert s["seconds_over_slo"] == 3 * STEP_S


def test_a_ttft_equal_to_the_slo_is_within_it():
    """A TTFT exactly at the SLO is within it, as the load test's knee is "within `--slo-p95-ms`" (docs/loadtest.md;
    loadstats.within_slo compares with <=): 6 steps at 0.5 s against a 0.5 s SLO are 0 s over; one at 0.51 s is 10 s."""
    assert summary.summary(_result([5.0] * 6, [1] * 6, [0.5] * 6), 0.5)["seconds_over_slo"] == 0.0
    one_over = summary.summary(_result([5.0] * 6, [1] * 6, [0.5, 0.5, 0.51, 0.5, 0.5, 0.5]), 0.5)
    assert one_over["seconds_over_slo"] == STEP_S


def _with_night_schedule(arrivals: list[float], fires_at_s: float) -> Result:
    """Alibaba prod's run with its declared schedules, the night one (stacks file: max 4 of the group's 8) firing
    once during the run, at fires_at_s; none before the start (the group at its own max 8)."""
    r = _result(arrivals, [2] * len(arrivals), [0.1] * len(arrivals))
    p = plan.for_stack("alicloud-cn-hangzhou-prod")
    r.behaviour = run.behaviour(p.fleet, p.resources)
    night = next(s for s in r.behaviour.schedules if s.name.endswith("-night"))
    r.events = [Event(fires_at_s, night.group, "schedule", night.name, night.desired)]
    return r


def test_the_max_at_the_peak_ignores_a_schedule_firing_after_it():
    """docs/simulation.md: `nodes_max_at_peak` is the groups' max while the peak arrives, its lowest over the peak's
    steps. The peak (30 req/s) is steps 0-2 (0-20 s); the night schedule (max 4) fires at 30 s, after it: the max at
    the peak is the group's own 8, held by no schedule. Fired at 20 s, in the peak's last step, it is 4, set by night."""
    after = summary.summary(_with_night_schedule([30.0, 30.0, 30.0, 5.0, 5.0, 5.0], 3 * STEP_S), None)
    assert after["nodes_max"] == 8
    assert after["nodes_max_at_peak"] == 8
    assert after["max_at_peak_set_by"] == []
    during = summary.summary(_with_night_schedule([30.0, 30.0, 30.0, 5.0, 5.0, 5.0], 2 * STEP_S), None)
    assert during["nodes_max_at_peak"] == 4
    assert [s["schedule"] for s in during["max_at_peak_set_by"]] == ["llm-prod-asg-schedule-night"]


def test_nodes_at_start_are_those_serving_at_the_start():
    """docs/simulation.md, *At the start*: the nodes a schedule left before the start serve at t = 0. Two such nodes
    (created and serving at 0) and two a schedule firing at t = 0 launches (created at 0, still booting: serving at
    400 s) give 2 nodes at the start, not 4."""
    r = _result([5.0] * 6, [2] * 6, [0.1] * 6)
    group = r.behaviour.groups[0].name
    r.nodes = [
        Node(0, group, "payg", 0.0, in_service=0.0, ready=0.0, serving=0.0),
        Node(1, group, "payg", 0.0, in_service=0.0, ready=0.0, serving=0.0),
        Node(2, group, "payg", 0.0, in_service=10.0, ready=390.0, serving=400.0),
        Node(3, group, "payg", 0.0, in_service=10.0, ready=390.0, serving=400.0),
    ]
    assert summary.summary(r, None)["nodes_at_start"] == 2
