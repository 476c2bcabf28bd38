"""The provider contract over the spec space, the known defects it refuses, and the spec's range limits."""

from __future__ import annotations

import copy
import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpufleet import contract, cron, validation
from gpufleet.errors import UserError
from gpufleet.stacks import loader

from . import sweep

NOW = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setenv("GPUFLEET_NOW", NOW.isoformat())


def test_sweep_covers_all_pairs_and_passes_the_contract():
    start = time.monotonic()
    rows = sweep.all_pairs(sweep.dimensions())
    dims = sweep.dimensions()
    for a in dims:
        for b in dims:
            if a < b:
                covered = {(r[a], r[b]) for r in rows}
                assert covered == {(x, y) for x in dims[a] for y in dims[b]}, (a, b)
    found = []
    for name, cloud, inv in sweep.inventories():
        found += [f"{name}: {v}" for v in contract.check_inventory(inv["resources"], NOW, cloud)]
    assert found == []
    assert time.monotonic() - start < 60


def test_no_variant_of_the_sweep_is_refused_by_spec_validation():
    assert [(name, [str(p) for p in problems]) for name, _, problems in sweep.refusals()] == []


def test_tencent_spot_without_a_limit_is_capped_at_the_catalog_payg_price():
    from gpufleet.components.tencentcloud import scaling
    from gpufleet.cost import catalog

    raw = _raw("tencentcloud-ap-guangzhou-prod")
    raw["billing"] = {"model": "spot", "on_demand_base": raw["replicas"]["min"]}
    fleet = validation.validate(raw, stack="s", file="x", sizing=False)
    row = catalog.load("tencentcloud", fleet.spec.region).get(f"instance/{fleet.instance_type.type}", "payg")
    assert scaling.charge_args(fleet)["spot_max_price"] == f"{row.price:.4f}"
    no_price = _resource(
        "tencentcloud:As/scalingConfig:ScalingConfig", instance_charge_type="SPOTPAID", spot_instance_type="one-time"
    )
    (v,) = contract.check_inventory([no_price], NOW, "tencentcloud")
    assert v.spec_field == "fleet.billing.spot_price_limit" and "spot_max_price" in v.message + v.rule.source


def _resource(type_, **inputs):
    return {"type": type_, "name": "r", "inputs": {contract.camel(k): v for k, v in inputs.items()}}


@pytest.mark.parametrize(
    "cloud, resource, spec_field",
    [
        ("alicloud", _resource("alicloud:slb/listener:Listener", request_timeout=300), "fleet.load_balancer.request_timeout_s"),
        (
            "alicloud",
            _resource("alicloud:ess/scheduledTask:ScheduledTask", recurrence_end_time="2099-12-31T00:00Z"),
            "fleet.autoscaling.schedule_window_start",
        ),
        (
            "alicloud",
            # the provider page's form; the API documents, and the provider's acceptance tests send, 2027-06-01T00:00Z
            _resource("alicloud:ess/scheduledTask:ScheduledTask", recurrence_end_time="2027-06-01T00:00:00Z"),
            "fleet.autoscaling.schedule_window_start",
        ),
        (
            "alicloud",
            _resource("alicloud:ess/scheduledTask:ScheduledTask", launch_time="2027-04-01T00:00Z"),
            "fleet.autoscaling.schedule_window_start",
        ),
        (
            "tencentcloud",
            _resource("tencentcloud:As/schedule:Schedule", start_time="2026-11-30T00:00:00+08:00"),
            "fleet.autoscaling.schedule_window_start",
        ),
        ("alicloud", _resource("alicloud:ecs/instance:Instance", period_unit="Year"), "fleet.billing.model"),
        ("alicloud", _resource("alicloud:ecs/instance:Instance", role_name="x"), "(program)"),
        ("alicloud", _resource("alicloud:slb/listener:Listener", acl_id="acl-1"), "(program)"),
        ("alicloud", _resource("alicloud:slb/listener:Listener", acl_status="on"), "(program)"),
        ("tencentcloud", _resource("tencentcloud:Nat/gateway:Gateway", bandwidth=150), "fleet.egress.bandwidth_mbps"),
        ("alicloud", _resource("alicloud:ess/lifecycleHook:LifecycleHook", heartbeat_timeout=10), None),
        ("tencentcloud", _resource("tencentcloud:Vpc/instance:Instance", cidr_block="10.20.0.1/16"), "fleet.network.vpc_cidr"),
        ("tencentcloud", _resource("tencentcloud:Nat/gateway:Gateway", assigned_eip_sets=["eip-1"]), None),
        ("alicloud", _resource("alicloud:vpc/network:Network", vpc_name="a", name="b"), None),
    ],
)
def test_known_defects_are_refused_with_citation(cloud, resource, spec_field):
    found = contract.check_inventory([resource], NOW, cloud)
    assert len(found) == 1
    assert "terraform-provider" in str(found[0]) or "alibabacloud.com" in str(found[0])
    if spec_field:
        assert found[0].spec_field == spec_field


@pytest.mark.parametrize(
    "cidr, refused",
    [
        ("10.0.0.0/8", True),  # was accepted: CreateVpc takes blocks inside 10.0.0.0/12-wide ranges at the widest
        ("10.0.0.0/11", True),
        ("172.16.0.0/12", False),
        ("10.16.0.0/12", False),
        ("10.30.0.0/16", False),  # the shipped Tencent stacks' ranges
        ("192.168.0.0/16", False),
        ("192.168.0.0/15", True),
        ("10.30.0.0/28", False),
        ("10.30.0.0/29", True),
    ],
)
def test_tencent_vpc_cidr_is_a_12_to_28_block_of_the_private_ranges(cidr, refused):
    found = contract.check_inventory([_resource("tencentcloud:Vpc/instance:Instance", cidr_block=cidr)], NOW, "tencentcloud")
    assert bool(found) == refused, found
    if refused:
        assert found[0].spec_field == "fleet.network.vpc_cidr"
        # the page the rule rests on (review C3), not the member, whose 10.0.0.0/12 would refuse the shipped 10.30.0.0/16
        assert "tencentcloud.com/document/product/215/31795" in found[0].rule.source and "/12 to /28" in str(found[0])
        assert "tccli==" not in found[0].rule.source


def _raw(stack: str) -> dict:
    _, config = loader.read_stack_config(stack, sweep.ROOT)
    return copy.deepcopy(config[loader.CONFIG_KEY])


@pytest.mark.parametrize(
    "stack, path, value, field, limit",
    [
        ("alicloud-cn-hangzhou-dev", ("disks", "system", "size_gib"), 600, "fleet.disks.system.size_gib", "20-500"),
        ("tencentcloud-ap-guangzhou-dev", ("disks", "system", "size_gib"), 40, "fleet.disks.system.size_gib", "50-500"),
        (
            "alicloud-cn-hangzhou-dev",
            ("disks", "system"),
            {"tier": "high", "size_gib": 100},
            "fleet.disks.system.size_gib",
            "461-2048",
        ),
        (
            "alicloud-cn-hangzhou-dev",
            ("disks", "data"),
            {"tier": "high", "size_gib": 200},
            "fleet.disks.data.size_gib",
            "461-65536",
        ),
        ("alicloud-cn-hangzhou-dev", ("egress", "bandwidth_mbps"), 300, "fleet.egress.bandwidth_mbps", "1-200"),
        (
            "alicloud-cn-hangzhou-dev",
            ("load_balancer", "request_timeout_s"),
            300,
            "fleet.load_balancer.request_timeout_s",
            "1-180",
        ),
        (
            "tencentcloud-ap-guangzhou-dev",
            ("load_balancer", "health_check"),
            {"interval_s": 5, "timeout_s": 1},
            "fleet.load_balancer.health_check.timeout_s",
            "2-60",
        ),
        (
            "alicloud-cn-hangzhou-dev",
            ("load_balancer", "health_check"),
            {"path": "/" + "h" * 90},
            "fleet.load_balancer.health_check.path",
            "1-80",
        ),
        (
            "alicloud-cn-hangzhou-dev",
            ("load_balancer", "health_check"),
            {"grace_period_s": 20},
            "fleet.load_balancer.health_check.grace_period_s",
            "30-21600",
        ),
    ],
)
def test_spec_refuses_what_the_provider_refuses(stack, path, value, field, limit):
    raw = _raw(stack)
    node = raw
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    with pytest.raises(UserError) as err:
        validation.validate(raw, stack=stack, file="x.yaml", sizing=False)
    hits = [p for p in err.value.problems if p.path == field]
    assert hits and limit in hits[0].message and "refuses" in hits[0].message


def _spec_field(path: str) -> bool:
    """Whether `fleet.a.b` is a field of FleetSpec (through optional, list and union members)."""
    import typing

    from pydantic import BaseModel

    from gpufleet.stacks.spec import FleetSpec

    def models(annotation) -> list[type[BaseModel]]:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [annotation]
        return [m for arg in typing.get_args(annotation) for m in models(arg)]

    level: list[type[BaseModel]] = [FleetSpec]
    for part in path.split(".")[1:]:
        fields = [m.model_fields[part] for m in level if part in m.model_fields]
        if not fields:
            return False
        level = [m for f in fields for m in models(f.annotation)]
    return True


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_every_rule_names_a_spec_field_that_exists(cloud):
    """A broken rule is said on its `spec` field: one the spec lacks sent the user to no key of the stack file
    (alicloud VPC / vSwitch cidr_block said fleet.network.cidr, Tencent EIP bandwidth fleet.network.nat_bandwidth_mbps)."""
    wrong = sorted({f"{r.type} {r.arg}: {r.spec}" for r in contract.rules_for(cloud) if r.spec and not _spec_field(r.spec)})
    assert wrong == []


def test_preview_refuses_a_broken_rule_naming_the_spec_field(monkeypatch):
    from gpufleet.components.alicloud import rules
    from gpufleet.preview import preview_spec

    stricter = contract.Rule(
        "alicloud:slb/listener:Listener",
        "request_timeout",
        "between",
        "test citation",
        low=1,
        high=100,
        spec="fleet.load_balancer.request_timeout_s",
    )
    monkeypatch.setattr(rules, "RULES", (*rules.RULES, stricter))
    with pytest.raises(UserError) as err:
        preview_spec(_raw("alicloud-cn-hangzhou-dev"), "alicloud-cn-hangzhou-dev")
    (problem,) = err.value.problems
    assert problem.path == "fleet.load_balancer.request_timeout_s" and "test citation" in problem.message


def test_schedule_dates_follow_the_clock_and_stay_in_the_windows():
    from gpufleet.components.alicloud import scaling as ali
    from gpufleet.components.tencentcloud import scaling as tc

    for stack, module, keys in (
        ("alicloud-cn-hangzhou-prod", ali, ("launch_time", "recurrence_end_time")),
        ("tencentcloud-ap-guangzhou-prod", tc, ("start_time", "end_time")),
    ):
        fleet = validation.validate(_raw(stack), stack=stack, file="x", sizing=False)
        a = module.schedule_args(fleet, NOW)
        b = module.schedule_args(fleet, datetime(2027, 3, 1, tzinfo=UTC))
        assert a and all(x[k] != y[k] for x, y in zip(a, b) for k in keys)
        assert module.schedule_ignored(fleet) == [keys[0], keys[1]]
        res = [
            {"type": t, "name": "s", "inputs": {contract.camel(k): v for k, v in args.items()}}
            for args in a
            for t in [
                {"alicloud": "alicloud:ess/scheduledTask:ScheduledTask"}.get(
                    fleet.spec.cloud, "tencentcloud:As/schedule:Schedule"
                )
            ]
        ]
        assert contract.check_inventory(res, NOW, fleet.spec.cloud) == []
    raw = _raw("alicloud-cn-hangzhou-prod")
    raw["autoscaling"]["schedule_window_start"] = "2025-12-20"
    fleet = validation.validate(raw, stack="s", file="x", sizing=False)
    assert ali.schedule_ignored(fleet) == ["launch_time"]
    notes = contract.schedule_notes(fleet.spec, NOW)
    assert any(n.startswith("WARNING schedule business-day") for n in notes)


def test_schedule_notes_show_the_provider_zone_and_utc():
    fleet = validation.validate(_raw("tencentcloud-ap-guangzhou-prod"), stack="s", file="x", sizing=False)
    notes = contract.schedule_notes(fleet.spec, NOW)
    assert any("UTC+8" in n and "UTC;" in n for n in notes)
    first = cron.next_firing(fleet.spec.autoscaling.schedules[0].cron, NOW)
    assert f"{first:%Y-%m-%d %H:%M} UTC" in notes[0]


def test_schedule_notes_in_a_utc_zone_give_the_time_once():
    """Alibaba reads its cron in UTC: `next firing 2026-12-08 01:00 UTC = 2026-12-08 01:00 UTC` said one time twice."""
    fleet = validation.validate(_raw("alicloud-cn-hangzhou-prod"), stack="s", file="x", sizing=False)
    notes = [n for n in contract.schedule_notes(fleet.spec, NOW) if n.startswith("schedule ")]
    first = cron.next_firing(fleet.spec.autoscaling.schedules[0].cron, NOW)
    assert notes and all(" = " not in n for n in notes), notes
    assert f"next firing {first:%Y-%m-%d %H:%M} UTC; window ends " in notes[0]


def test_every_argument_sent_has_a_rule_or_a_checked_no_constraint_entry():
    missing, counts = [], {}
    for _, cloud, inv in sweep.inventories():
        module = contract.rules_module(cloud)
        keys = {r.key for r in module.RULES}
        for r in inv["resources"]:
            if not r["custom"] or r["type"].startswith("pulumi:"):
                continue
            for arg in r["inputs"]:
                key = (r["type"], contract.snake(arg))
                kind = "rule" if key in keys else "none" if module.no_constraint(*key) else None
                counts.setdefault(cloud, {}).setdefault(kind, set()).add(key)
                if kind is None:
                    missing.append(key)
    assert sorted(set(missing)) == []
    for cloud, by in counts.items():
        print(cloud, {k: len(v) for k, v in by.items()})


def test_schedule_dates_reach_the_engine_under_ignore_changes(monkeypatch):
    """What the engine receives: the scheduled tasks' first-firing and end fields are ignored after creation."""
    from gpufleet import mockengine, preview

    seen = {}
    original = mockengine._Recorder.RegisterResource

    def register(self, request):
        if request.type in ("alicloud:ess/scheduledTask:ScheduledTask", "tencentcloud:As/schedule:Schedule"):
            seen[request.type] = sorted(request.ignoreChanges)
        return original(self, request)

    monkeypatch.setattr(mockengine._Recorder, "RegisterResource", register)
    for stack in ("alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"):
        preview.preview_stack(stack, sweep.ROOT)
    assert seen == {
        "alicloud:ess/scheduledTask:ScheduledTask": ["launchTime", "recurrenceEndTime"],
        "tencentcloud:As/schedule:Schedule": ["endTime", "startTime"],
    }


def test_the_tat_drain_commands_tags_are_set_at_creation_only(monkeypatch):
    """The provider's update of a TAT command refuses any change of its tags ("`tags` do not support change now.",
    resource_tc_tat_command.go): the program ignores later changes, so a tag change cannot fail `pulumi up`."""
    from gpufleet import mockengine, preview

    seen = {}
    original = mockengine._Recorder.RegisterResource

    def register(self, request):
        if request.type == "tencentcloud:Tat/command:Command":
            seen[request.name] = sorted(request.ignoreChanges)
        return original(self, request)

    monkeypatch.setattr(mockengine._Recorder, "RegisterResource", register)
    preview.preview_stack("tencentcloud-ap-guangzhou-prod", sweep.ROOT)
    assert seen and all(v == ["tags"] for v in seen.values()), seen


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_an_argument_is_either_ruled_or_unconstrained_not_both(cloud):
    module = contract.rules_module(cloud)
    keys = {r.key for r in module.RULES}
    both = [(t, a) for t, (_, args) in module.NO_CONSTRAINT.items() for a in args if (t, a) in keys]
    assert both == []
    assert all(r.source for r in module.RULES)  # every rule cites its source


def test_alicloud_loading_grace_is_a_lifecycle_hook_the_node_role_may_complete():
    inv = __import__("gpufleet.preview", fromlist=["preview_stack"]).preview_stack("alicloud-cn-hangzhou-prod", sweep.ROOT)
    fleet = validation.load_fleet("alicloud-cn-hangzhou-prod", sweep.ROOT, sizing=False)
    hooks = [r["inputs"] for r in inv.resources if r["type"] == "alicloud:ess/lifecycleHook:LifecycleHook"]
    (hook,) = [h for h in hooks if h["lifecycleTransition"] == "SCALE_OUT"]
    assert hook["defaultResult"] == "CONTINUE"
    assert hook["heartbeatTimeout"] == fleet.spec.load_balancer.health_check.grace_period_s
    (policy,) = [
        r["inputs"] for r in inv.resources if r["type"] == "alicloud:ram/policy:Policy" and r["name"].endswith("-role-node")
    ]
    statements = json.loads(policy["policyDocument"])["Statement"]
    ess = [s for s in statements if any(a.startswith("ess:") for a in s["Action"])]
    assert ess == [
        {
            "Effect": "Allow",
            "Action": ["ess:DescribeScalingActivities", "ess:CompleteLifecycleAction"],
            "Resource": ["acs:ess:cn-hangzhou:*:scalinggroup/llm-prod-asg-group_id"],
        },
        {"Effect": "Allow", "Action": ["ess:DescribeLifecycleActions"], "Resource": ["*"]},
    ]
    # exactly the ESS operations the node agent calls (Alibaba's node module, components/alicloud/node_agent.py:
    # Lifecycle.call("<Action>", ...))
    from gpufleet.components.alicloud import node_agent

    source = Path(node_agent.__file__).read_text()
    called = set(re.findall(r'self\.call\(\s*"(\w+)"', source))
    assert {a.removeprefix("ess:") for s in ess for a in s["Action"]} == called
