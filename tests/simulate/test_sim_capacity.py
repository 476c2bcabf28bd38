"""Capacity planning meets the simulation: plan capacity's per-node rule (ceil(peak / per node)) is the simulated
steady state at the peak; and nodes held ready above the floor are what keep the ramp of a step within the SLO while
a scale-out boots (the declared floor queues for minutes; a floor at the peak's nodes never queues)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from simfixtures import START

from gpufleet import plan
from gpufleet.simulate import capacity as sim_capacity
from gpufleet.simulate import check, run, summary
from gpufleet.sizing import capacity as plan_capacity

STACK = "alicloud-cn-hangzhou-prod"


def _fleet(min_nodes: int):
    """Alibaba prod as declared, its launch hook completed by the node (issue 26's fix), the group's floor at min_nodes;
    without its schedules (the night schedule, fired at 14:00 UTC, would hold the group at min 2 at the 15:00 start)."""
    p = plan.for_stack(STACK)
    res = [r for r in copy.deepcopy(p.resources) if r["type"] != "alicloud:ess/scheduledTask:ScheduledTask"]
    for r in res:
        if r["type"] == "alicloud:ess/scalingGroup:ScalingGroup":
            r["inputs"].update(minSize=min_nodes, desiredCapacity=min_nodes)
    return run.behaviour(p.fleet, res, node_completes=True)


def test_steady_state_is_plan_capacity_and_the_spare_buys_the_ramp(cap):
    base = _fleet(2)
    trace = run.default_trace("step", base, cap, START)  # the step sized on the declared floor of 2
    peak = max(trace.rates)
    planned = plan_capacity.plan(peak, cap.requests_per_s, redundancy=1)  # N+1, the seed's rule
    carrying = planned.nodes - planned.redundancy
    without = run.simulate(base, cap, trace)
    high_end = without.times.index(check.STEP_AT_S + check.HIGH_S - trace.step_s)
    assert without.counts["serving"][high_end] == carrying  # the simulation settles where plan capacity says
    spare = run.simulate(_fleet(carrying), cap, trace)  # the floor raised by the nodes the step adds
    s0, s1 = summary.summary(without, 1.5), summary.summary(spare, 1.5)
    assert s0["seconds_over_slo"] > 0 and s1["seconds_over_slo"] == 0
    assert s1["peak_queue"] == 0 < s0["peak_queue"]


def test_the_ttft_estimate_never_falls_as_the_load_rises(cap):
    """The curve took the saturated concurrency-32 level (13.484 req/s, TTFT p95 386 ms) as a point below the knee
    (13.768 req/s, 158 ms): less load gave 2.4x the TTFT and failed a 300 ms SLO that more load passed."""
    loads = [i / 100 for i in range(0, 2001)]
    ttfts = [cap.ttft_s(x) for x in loads]
    assert all(a <= b for a, b in zip(ttfts, ttfts[1:]))
    assert cap.ttft_s(13.484) <= cap.ttft_s(13.768) == pytest.approx(0.1582)  # the knee's own TTFT p95
    assert max(t for _, t in cap.ttft_curve) == pytest.approx(0.1582)  # beyond the knee: the queue the simulation models


def test_the_knee_gives_tokens_per_request_and_a_latency_in_seconds(cap):
    """examples/loadtest-example.json's knee is concurrency 16: 13.768 requests/s, 1762.268 output tokens/s, latency
    p95 1125.1 ms. Tokens per request = 1762.268 / 13.768 = 128.0 (the example's max_tokens 128; docs/cost-reports.md
    "128.0 output tokens per request"); the latency a drain waits for is 1.1251 s (with the prod stack's health check,
    5 s x 3 unhealthy + 1.1251 s, about 16 s, not the 660 s drain timeout a latency read as seconds would reach)."""
    assert cap.requests_per_s == pytest.approx(13.768)
    assert cap.output_tokens_per_request == pytest.approx(1762.268 / 13.768)
    assert cap.output_tokens_per_request == pytest.approx(128.0, abs=0.01)
    assert cap.latency_p95_s == pytest.approx(1.1251)


def test_a_level_with_errors_is_left_out_of_the_ttft_curve():
    """The knee is the highest level within the SLO "with no errors" (docs/loadtest.md; loadstats.within_slo), and the
    curve is read by the same rule. examples/loadtest-example.json with its concurrency-4 level (11.303 req/s) given 2
    errors of its 64 requests and a TTFT p95 of 900 ms: that level is not a point on the curve, which keeps the clean
    levels up to the knee: 6.499 req/s at 53.6 ms and the knee's 13.768 req/s at 158.2 ms (not 900 ms from 11.303 on)."""
    data = json.loads((Path(__file__).resolve().parents[2] / "examples" / "loadtest-example.json").read_text())
    errored = data["levels"][1]
    assert (errored["concurrency"], errored["requests"]) == (4, 64)
    errored.update(errors=2, error_rate=2 / 64, ttft_ms={**errored["ttft_ms"], "p95": 900.0})
    curve = sim_capacity.from_loadtest_result(data, "loadtest-example.json").ttft_curve
    assert [v for point in curve for v in point] == pytest.approx([6.499, 0.0536, 13.768, 0.1582])
