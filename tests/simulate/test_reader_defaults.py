"""What each cloud's reader (components/<cloud>/simulation.py) takes for an input the program leaves out: the
provider's documented default, one set per cloud.

- ess.Alarm: terraform-provider-alicloud r/ess_alarm: period "Defaults to 300", evaluation_count "Defaults to 3",
  comparison_operator "Defaults to >=" (an `expressions` entry's period and operator too).
- slb.Listener: terraform-provider-alicloud r/slb_listener: health_check_interval "Default to 2", healthy_threshold
  and unhealthy_threshold "Default to 3".
- clb listener / rule: terraform-provider-tencentcloud r/clb_listener_rule: health_check_interval_time "the default is
  `5` sec", health_check_health_num and health_check_unhealth_num "the default is `3`".
"""

from __future__ import annotations

import copy

from gpufleet import plan
from gpufleet.behaviour.model import HealthCheck
from gpufleet.simulate import run

ALICLOUD = "alicloud-cn-hangzhou-prod"
TENCENT = "tencentcloud-ap-guangzhou-prod"


def _behaviour(stack: str, change):
    p = plan.for_stack(stack)
    resources = copy.deepcopy(p.resources)
    change(resources)
    return run.behaviour(p.fleet, resources)


def _of(resources, token: str) -> list[dict]:
    return [r for r in resources if r["type"] == token]


def test_an_ess_alarm_that_leaves_out_period_count_and_operator_gets_the_providers_defaults():
    def leave_out(resources):
        for r in _of(resources, "alicloud:ess/alarm:Alarm"):
            i = r["inputs"]
            for key in ("period", "evaluationCount", "comparisonOperator"):
                i.pop(key, None)
            for e in i.get("expressions") or []:
                e.pop("period")
                e.pop("comparisonOperator")

    b = _behaviour(ALICLOUD, leave_out)
    # the shipped alarms declare 60 s, 2 (out) / 10 (in) periods and > / <: left out, 300 s x 3 and >=
    assert {a.name: (a.period_s, a.evaluation_count, [op for _, op, _ in a.conditions]) for a in b.alarms} == {
        "llm-prod-asg-scale-out": (300.0, 3, [">="]),
        "llm-prod-asg-scale-in": (300.0, 3, [">=", ">="]),
    }
    assert "300 s x 3" in b.reaction_how


def _health(b) -> HealthCheck:
    return b.health


def test_alibaba_one_set_of_health_check_defaults():
    def no_thresholds(resources):
        for r in _of(resources, "alicloud:slb/listener:Listener"):
            for key in ("healthCheckInterval", "healthyThreshold", "unhealthyThreshold"):
                r["inputs"].pop(key, None)

    def no_health_check(resources):
        for r in _of(resources, "alicloud:slb/listener:Listener"):
            for key in ("healthCheck", "healthCheckInterval", "healthyThreshold", "unhealthyThreshold"):
                r["inputs"].pop(key, None)

    declared, undeclared = _behaviour(ALICLOUD, no_thresholds), _behaviour(ALICLOUD, no_health_check)
    assert declared.health == undeclared.health == HealthCheck(2, 3, 3)
    assert any("(2 s, 3 healthy, 3 unhealthy)" in n for n in undeclared.notes)


def test_tencent_one_set_of_health_check_defaults():
    names = ("healthCheckIntervalTime", "healthCheckHealthNum", "healthCheckUnhealthNum")
    rules = ("tencentcloud:Clb/listenerRule:ListenerRule", "tencentcloud:Clb/listener:Listener")

    def no_thresholds(resources):
        for r in _of(resources, rules[0]) + _of(resources, rules[1]):
            for key in names:
                r["inputs"].pop(key, None)

    def no_health_check(resources):
        for r in _of(resources, rules[0]) + _of(resources, rules[1]):
            for key in ("healthCheckSwitch", *names):
                r["inputs"].pop(key, None)

    declared, undeclared = _behaviour(TENCENT, no_thresholds), _behaviour(TENCENT, no_health_check)
    assert declared.health == undeclared.health == HealthCheck(5, 3, 3)
    assert any("(5 s, 3 healthy, 3 unhealthy)" in n for n in undeclared.notes)
