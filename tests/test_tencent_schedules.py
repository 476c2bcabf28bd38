"""Tencent AS scheduled actions of a spot fleet act on the spot group above the on-demand base (components/
tencentcloud/scaling.py: the base is its own fixed-size group, base_group_args), so each schedule's min, max and
desired on that group are the schedule's own less the base: the two groups together run what the schedule says."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from gpufleet import preview, validation
from gpufleet.components.tencentcloud import scaling
from gpufleet.stacks import loader

STACK = "tencentcloud-ap-guangzhou-prod"
NOW = datetime(2026, 12, 1, tzinfo=UTC)
GROUP = "tencentcloud:As/scalingGroup:ScalingGroup"
SCHEDULE = "tencentcloud:As/schedule:Schedule"


def _spot_raw(base: int) -> dict:
    _, config = loader.read_stack_config(STACK)
    raw = copy.deepcopy(config[loader.CONFIG_KEY])
    raw["billing"] = {"model": "spot", "on_demand_base": base}
    return raw


def test_spot_schedules_leave_the_on_demand_base_out():
    fleet = validation.validate(_spot_raw(2), stack=STACK, file="x", sizing=False)
    # the stack's schedules: business-day min 3 / max 8 / desired 4, night min 2 / max 4 / desired 2
    assert [(s.name, s.min, s.max, s.desired) for s in fleet.spec.autoscaling.schedules] == [
        ("business-day", 3, 8, 4),
        ("night", 2, 4, 2),
    ]
    got = {
        a["schedule_action_name"]: (a["min_size"], a["max_size"], a["desired_capacity"])
        for a in scaling.schedule_args(fleet, NOW)
    }
    # by hand, less the base of 2: business-day 3-2, 8-2, 4-2; night 2-2, 4-2, 2-2
    assert got == {"business-day": (1, 6, 2), "night": (0, 2, 0)}


def test_the_base_group_and_the_scheduled_spot_group_add_up_to_each_schedule():
    inv = preview.preview_spec(_spot_raw(2), STACK)
    groups = {r["name"]: r["inputs"] for r in inv.resources if r["type"] == GROUP}
    (base,) = [g for name, g in groups.items() if "base" in name]
    assert (base["minSize"], base["maxSize"], base["desiredCapacity"]) == (2, 2, 2)  # nothing scales the base
    schedules = {r["inputs"]["scheduleActionName"]: r["inputs"] for r in inv.resources if r["type"] == SCHEDULE}
    # 2 base nodes + the spot group's schedule max = the schedule's max: 2 + 6 = 8 on business days, 2 + 2 = 4 at night
    assert {n: base["maxSize"] + s["maxSize"] for n, s in schedules.items()} == {"business-day": 8, "night": 4}
    assert {n: base["minSize"] + s["minSize"] for n, s in schedules.items()} == {"business-day": 3, "night": 2}
