"""When Alibaba's ESS alarm fires in the simulation: after exactly `evaluation_count` breaching periods, not one
later. alibabacloud_ess20220222 1.13.3, CreateAlarmRequest.evaluation_count: "The number of consecutive times that
the threshold must be reached before a scaling rule is executed ... must reach or exceed 80% three times in a row"."""

from __future__ import annotations

from simfixtures import START

from gpufleet import plan
from gpufleet.simulate import check, run

STACK = "alicloud-cn-hangzhou-prod"


def test_the_scale_out_alarm_fires_at_the_end_of_its_second_breaching_period(cap):
    p = plan.for_stack(STACK)
    b = run.behaviour(p.fleet, p.resources)
    (out,) = [a for a in b.alarms if a.adjustment > 0]
    # the stack's ess_alarm: the queue above 4 a node, period 60 s, evaluation_count 2 (evaluation_minutes 2)
    assert (out.period_s, out.evaluation_count, out.conditions) == (60.0, 2, (("queue", ">", 4.0),))
    r = check.step_result(b, cap, START)
    first = next(e for e in r.events if e.kind == "out" and e.time_s >= check.STEP_AT_S)
    # By hand: the load steps up 5x at 3600 s, a whole number of 60 s periods after the start (the alarm evaluates
    # at 60 s, 120 s, ...), and 5x the load on 2 nodes puts the queue over 4 a node at once. The two nodes publish at
    # phases 0 s and 7 s of each minute (engine: node id x 7 s), at 3600 s and 3607 s, before 3660 - 15 s (the report
    # lag, alicloud/simulation.yaml): the period ending at 3660 s already breaches, the one ending at 3720 s is the
    # second in a row and executes the rule, 2 x 60 = 120 s after the step. A rule at 180 s fired a period late.
    assert b.timing("report_lag_s") == 15 and b.timing("metric_publish_s") == 60
    assert first.time_s - check.STEP_AT_S == out.evaluation_count * out.period_s == 120.0
