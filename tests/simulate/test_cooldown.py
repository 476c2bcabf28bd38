"""Which scaling activities start a group's cooldown, per cloud (the reader's Group.cooldown_after).

Alibaba ESS: only an activity an event-triggered task (ess.Alarm) started; "Scaling requests from manual execution of
scheduled tasks or adjustments to the expected/minimum/maximum instance count are unaffected"
(alibabacloud.com/help/en/auto-scaling/user-guide/cooldown-period). Tencent AS: any scaling activity (AS FAQ,
intl.cloud.tencent.com/document/product/377/4166).

The run: prod, Tuesday 2026-12-08 from 00:30 UTC, 10 s steps, 10 req/s for 35 min then 100 req/s (the review's
surge trace, built below), 13.8 req/s a node. It starts where Monday's 14:00 UTC night schedule left the
group (2 nodes); the business-day schedule (min 3, desired 4) fires at 01:00 UTC = 1800 s and launches 2 nodes; the
load jumps 5x at 2100 s, beyond what 4 nodes serve (55.2 req/s), so the queue grows from the first step.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from gpufleet import plan
from gpufleet.behaviour.model import Group
from gpufleet.simulate import engine, run
from gpufleet.simulate.capacity import NodeCapacity
from gpufleet.simulate.trace import Trace

START = datetime(2026, 12, 8, 0, 30, tzinfo=UTC)  # a Tuesday
SURGE_AT_S = 2100.0
SURGE = Trace(START, 10.0, [10.0] * int(SURGE_AT_S / 10) + [100.0] * int((3 * 3600 - SURGE_AT_S) / 10))
CAP = NodeCapacity(13.8, "given")


def _run(stack: str, change=None):
    p = plan.for_stack(stack)
    resources = copy.deepcopy(p.resources)
    if change:
        change(resources)
    b = run.behaviour(p.fleet, resources)
    return b, run.simulate(b, CAP, SURGE)


def _after_schedule(r) -> list[tuple[float, str]]:
    return [(e.time_s, e.kind) for e in r.events if e.kind != "schedule"]


def test_alibaba_a_schedules_activity_does_not_hold_the_alarm_back():
    b, r = _run("alicloud-cn-hangzhou-prod")
    (group,) = b.groups
    (out,) = [a for a in b.alarms if a.adjustment > 0]
    assert [(e.time_s, e.desired) for e in r.events if e.kind == "schedule"] == [(1800.0, 4)]
    assert (group.cooldown_s, group.cooldown_after, out.period_s, out.evaluation_count) == (600.0, "rule", 60.0, 2)
    ready_s = sum(b.timing(t) for t in ("instance_create_s", "os_boot_s", "weights_fetch_s", "vllm_load_s", "cuda_graphs_s"))
    assert ready_s == 90 + 4 + 121.9 + 33 + 29 == 277.9  # the launch hook holds a node until vLLM serves
    # By hand. The schedule's activity: 2 nodes created at 1800 s, released by the launch hook at 1800 + 277.9 =
    # 2077.9 s (serving 10 s later: 5 s x 2 healthy checks). The alarm (queue > 4 a node, period 60 s, 2 periods)
    # evaluates at 60 s multiples; the period ending at 2160 s reads each node's last report before 2160 - 15 s
    # (report lag): the 4 nodes publish at 2100, 2107, 2114 and 2121 s (phases 0, 7, 14, 21 s), all after the jump,
    # all over 4 a node; the one ending at 2220 s is the second in a row: the rule executes at 2220 s. Had the
    # schedule's activity started the 600 s cooldown (to 2677.9 s), the rule would have waited to 2700 s.
    # Its own activity (1 node) ends at 2220 + 277.9 = 2497.9 s and starts the cooldown, to 3097.9 s: the next
    # scale-out is at the first evaluation after it, 3120 s.
    assert _after_schedule(r)[:2] == [(2220.0, "out"), (3120.0, "out")]


def test_tencent_a_schedules_activity_still_holds_the_scaler_back():
    b, r = _run("tencentcloud-ap-guangzhou-prod")
    (group,) = b.groups
    (scaler,) = b.pollers
    assert [(e.time_s, e.desired) for e in r.events if e.kind == "schedule"] == [(1800.0, 4)]  # 0 9 * * 1-5, UTC+8
    assert (group.cooldown_s, group.cooldown_after, scaler.period_s) == (600.0, "any", 60.0)
    assert not [h for h in b.hooks if h.transition == "out"] and b.timing("instance_create_s") == 90
    # By hand. The schedule's activity: 2 nodes created at 1800 s, in service (no launch hook: the activity's end)
    # at 1890 s; AS locks the group for the cooldown after it, to 1890 + 600 = 2490 s. The scaler runs every 60 s and
    # wants a node from the first run after the jump at 2100 s; every run before 2490 s is refused, so the first
    # activity after the schedule is the scale-out of the run at 2520 s.
    assert _after_schedule(r)[0] == (2520.0, "out")


def _scale_out_rule_cooldown(seconds: float):
    def change(resources):
        (rule,) = [r for r in resources if r["type"].endswith("ScalingRule") and r["name"].endswith("scale-out")]
        rule["inputs"]["cooldown"] = seconds

    return change


def test_alibaba_the_rules_own_cooldown_takes_priority_over_the_groups():
    b, r = _run("alicloud-cn-hangzhou-prod", _scale_out_rule_cooldown(300.0))
    (group,) = b.groups
    (out,) = [a for a in b.alarms if a.adjustment > 0]
    assert (group.cooldown_s, out.cooldown_s) == (600.0, 300.0)  # defaultCooldown 600; the rule's cooldown 300
    # By hand, as above: the rule executes at 2220 s, its activity ends at 2497.9 s, then the rule's 300 s (not the
    # group's 600 s) to 2797.9 s: the next scale-out is at the first evaluation after it, 2820 s (3120 s with 600 s).
    assert _after_schedule(r)[:2] == [(2220.0, "out"), (2820.0, "out")]


def test_alibaba_a_rule_without_its_own_cooldown_has_the_groups():
    def unset(resources):
        for r in resources:
            if r["type"].endswith("ScalingRule"):
                del r["inputs"]["cooldown"]

    b, r = _run("alicloud-cn-hangzhou-prod", unset)
    assert [a.cooldown_s for a in b.alarms] == [None, None]
    assert _after_schedule(r)[:2] == [(2220.0, "out"), (3120.0, "out")]


def test_which_activity_starts_the_cooldown():
    rule = Group("g", 1, 4, 1, 600.0, "payg", cooldown_after="rule")
    any_ = Group("g", 1, 4, 1, 600.0, "payg", cooldown_after="any")
    assert engine.cooldown_after(rule, by_rule=True) == engine.cooldown_after(any_, by_rule=True) == 600.0
    assert engine.cooldown_after(rule, by_rule=False) is None
    assert engine.cooldown_after(any_, by_rule=False) == 600.0
    for group in (rule, any_):  # a rule's own cooldown, when it has one, for the activity it starts
        assert engine.cooldown_after(group, by_rule=True, rule_cooldown_s=300.0) == 300.0
        assert engine.cooldown_after(group, by_rule=True, rule_cooldown_s=0.0) == 0.0
    assert engine.cooldown_after(rule, by_rule=False, rule_cooldown_s=300.0) is None
