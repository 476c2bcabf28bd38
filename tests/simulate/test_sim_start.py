"""Where a run starts: the declared schedules that fired before the trace's start hold the groups there, as the
cloud applied them (a run starting at 03:00 UTC on a weekday began at the group's base min of 2, below the
business-day schedule's 3, and held it all day)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpufleet import cron, plan
from gpufleet.simulate import run, summary
from gpufleet.simulate.trace import Trace

MONDAY = datetime(2026, 12, 7, tzinfo=UTC)


def test_last_firing_is_the_one_strictly_before():
    business = "0 1 * * 1-5"
    assert cron.last_firing(business, MONDAY.replace(hour=3)) == MONDAY.replace(hour=1)
    assert cron.last_firing(business, MONDAY.replace(hour=1)) == datetime(2026, 12, 4, 1, tzinfo=UTC)  # Friday's
    assert cron.last_firing("0 9 * * *", MONDAY, cron.zone(8)) == datetime(2026, 12, 6, 9, tzinfo=cron.zone(8))
    assert cron.last_firing("0 0 1 1 *", datetime(1, 1, 3, tzinfo=UTC)) == datetime(1, 1, 1, tzinfo=UTC)
    assert cron.last_firing("0 0 2 1 *", datetime(1, 1, 1, 12, tzinfo=UTC)) is None  # before Python's first date


@pytest.mark.parametrize("stack", ["alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"])
def test_a_run_starts_where_the_schedules_left_the_group(stack, cap):
    p = plan.for_stack(stack)
    b = run.behaviour(p.fleet, p.resources)
    business = next(s for s in b.schedules if s.name.endswith("business-day"))  # 0 1 * * 1-5: min 3, desired 4
    flat = [1.0] * (3 * 360)  # 1 req/s for 3 hours at 10 s: far below what the floor serves

    def at(hour: int):
        return run.simulate(b, cap, Trace(MONDAY.replace(hour=hour), 10.0, flat))

    late, early = at(3), at(0)  # 03:00 UTC Monday, two hours after the business-day schedule; and before it
    assert [(e.group, e.detail, e.time_s) for e in late.at_start] == [(business.group, business.name, -7200.0)]
    assert summary.summary(late, None)["nodes_at_start"] == business.desired
    assert min(late.counts["serving"]) >= business.min  # never below the schedule's floor
    # started before the schedule fired or after it, the fleet settles at its min
    assert late.counts["serving"][-1] == early.counts["serving"][-1] == business.min
    assert early.at_start[0].detail.endswith("night")  # Sunday's 14:00 UTC: min 2
