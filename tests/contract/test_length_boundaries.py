"""Length rules at their limits: a value exactly as long as a rule allows passes, one character more is refused, on
every `length` rule of both clouds; and the Tencent AS group name's limit is the one tccli documents."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib.resources import files

import pytest

from gpufleet import contract

NOW = datetime(2026, 12, 1, tzinfo=UTC)
LENGTH_RULES = [
    pytest.param(rule, id=f"{cloud}:{rule.type.split(':')[-1]}.{rule.arg}")
    for cloud in ("alicloud", "tencentcloud")
    for rule in contract.rules_for(cloud)
    if rule.kind == "length"
]
GROUP = "tencentcloud:As/scalingGroup:ScalingGroup"


@pytest.mark.parametrize("rule", LENGTH_RULES)
def test_a_length_rule_allows_its_limits_and_refuses_one_more(rule):
    if rule.high is not None:
        assert contract.check_value(rule, "a" * int(rule.high), NOW) is None
        refused = contract.check_value(rule, "a" * (int(rule.high) + 1), NOW)
        assert refused is not None and refused.startswith(f"length {int(rule.high) + 1} is outside ")
    if rule.low:
        assert contract.check_value(rule, "a" * int(rule.low), NOW) is None
        assert contract.check_value(rule, "a" * (int(rule.low) - 1), NOW) is not None


def test_length_rules_exist_on_both_clouds():
    assert {p.id.split(":")[0] for p in LENGTH_RULES} == {"alicloud", "tencentcloud"}


def _group(name: str) -> dict:
    return {"type": GROUP, "name": "asg", "inputs": {"scalingGroupName": name}}


def test_tencent_scaling_group_name_is_at_most_55_bytes():
    """tccli 3.1.189.1, autoscaling v20180419 CreateAutoScalingGroupRequest.AutoScalingGroupName: "最大长度不能超55个字节"
    (at most 55 bytes). The pinned package's api.json is read here so a tccli that changes the text fails this test."""
    api = json.loads((files("tccli") / "services" / "autoscaling" / "v20180419" / "api.json").read_text())
    (member,) = [m for m in api["objects"]["CreateAutoScalingGroupRequest"]["members"] if m["name"] == "AutoScalingGroupName"]
    assert "最大长度不能超55个字节" in member["document"]
    assert contract.check_inventory([_group("g" * 55)], NOW, "tencentcloud") == []
    (v,) = contract.check_inventory([_group("g" * 56)], NOW, "tencentcloud")
    assert v.rule.arg == "scaling_group_name" and v.message == "length 56 is outside 1-55"
    assert v.spec_field == "fleet.name"
