"""Subscription billing (monthly, yearly): the floor is exactly replicas.min nodes, as declared and as priced.

Before: Tencent's AS group kept min_size = replicas.min pay-as-you-go nodes of its own and the replicas.min PREPAID
CVMs were attached as well (twice the floor, both billed), and Alibaba attached its PrePaid nodes as Entrusted, which
ESS AttachInstances refuses for subscription instances.
"""

import copy
from pathlib import Path

import pytest
import yaml

from gpufleet import preview, validation
from gpufleet.cost import estimate, usage
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]


def _monthly(stack: str, model: str = "monthly", **billing):
    raw = copy.deepcopy(yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]["gpufleet:fleet"])
    raw["billing"] = {"model": model, **billing}
    fleet = validation.validate(raw, stack=stack, file="x", sizing=False)
    return fleet, preview.preview_spec(raw, stack)


def _of(inv, token):
    return [r["inputs"] for r in inv.resources if r["type"] == token]


@pytest.mark.parametrize("model", ["monthly", "yearly"])
def test_tencent_subscription_floor_is_exactly_replicas_min(model):
    fleet, inv = _monthly("tencentcloud-ap-guangzhou-prod", model, **({"period_months": 12} if model == "yearly" else {}))
    n = fleet.spec.replicas.min
    (group,) = _of(inv, "tencentcloud:As/scalingGroup:ScalingGroup")
    assert group["minSize"] == 0 and group["desiredCapacity"] == max(fleet.spec.replicas.desired_or_min - n, 0)
    assert group["maxSize"] == fleet.spec.replicas.max  # attached nodes count towards the group's maximum
    prepaid = _of(inv, "tencentcloud:Instance/instance:Instance")
    assert len(prepaid) == n and all(p["instanceChargeType"] == "PREPAID" for p in prepaid)
    (protect,) = _of(inv, "tencentcloud:As/protectInstances:ProtectInstances")
    assert protect["protectedFromScaleIn"] is True and len(protect["instanceIds"]) == n
    assert estimate.declared_floor("tencentcloud", inv.resources) == n


def test_alibaba_subscription_nodes_are_attached_as_ess_allows():
    fleet, inv = _monthly("alicloud-cn-hangzhou-prod")
    (attachment,) = _of(inv, "alicloud:ess/attachment:Attachment")
    assert attachment["entrusted"] is False  # "You cannot specify this parameter for subscription instances"
    assert estimate.declared_floor("alicloud", inv.resources) == fleet.spec.replicas.min


@pytest.mark.parametrize("stack", ["tencentcloud-ap-guangzhou-prod", "alicloud-cn-hangzhou-prod"])
def test_cost_floor_scenario_prices_the_declared_floor(stack):
    fleet, inv = _monthly(stack)
    e = estimate.price_inventory(stack, fleet.spec, fleet.instance_type.type, inv.resources, usage.Usage())
    assert e.scenarios["floor"].nodes == fleet.spec.replicas.min
    # a program declaring more than replicas.min at the floor is priced as declared
    doubled = [dict(r) for r in inv.resources]
    for r in doubled:
        if r["type"].endswith("scalingGroup:ScalingGroup"):
            r["inputs"] = {**r["inputs"], "minSize": fleet.spec.replicas.min * 2}
    e2 = estimate.price_inventory(stack, fleet.spec, fleet.instance_type.type, doubled, usage.Usage())
    assert e2.scenarios["floor"].nodes > fleet.spec.replicas.min and "as declared" in e2.scenarios["floor"].how


@pytest.mark.parametrize("stack", loader.stack_names(ROOT))
def test_shipped_stacks_declare_replicas_min_at_the_floor(stack):
    fleet = validation.load_fleet(stack, ROOT)
    inv = preview.preview_stack(stack, ROOT)
    assert estimate.declared_floor(fleet.spec.cloud, inv.resources) == fleet.spec.replicas.min
