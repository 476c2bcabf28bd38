"""The summary's figures on runs written by hand (simulate/summary.py): the peak's nodes are ceil(peak / per node)
(docs/simulation.md, *The peak's nodes*), the time to them counts from the first step the load is above what is
serving, and a step no node serves has no TTFT, so it is over any SLO."""

from __future__ import annotations

import pytest
from simfixtures import START

from gpufleet import plan
from gpufleet.simulate import capacity, run, summary
from gpufleet.simulate.engine import Result
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
