"""What each cloud's reader (components/<cloud>/simulation.py) takes for an input the program leaves out: the
provider's documented default.

- ess.Alarm: terraform-provider-alicloud r/ess_alarm: period "Defaults to 300", evaluation_count "Defaults to 3",
  comparison_operator "Defaults to >=" (an `expressions` entry's period and operator too).
"""

from __future__ import annotations

import copy

from gpufleet import plan
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
