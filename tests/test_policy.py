"""Security and topology invariants over the mock-engine inventory of every shipped stack of both clouds.

Each cloud has a view (tests/views.py) that reads its resource types into the same facts; the invariants are then
written once. A shipped stack of a cloud without a view fails test_every_cloud_has_a_view.
"""

import importlib
import inspect
import ipaddress
from functools import cache
from pathlib import Path

import pytest
from contract import docstrings
from views import VIEWS, of, tag_map, tencentcloud_view

from gpufleet import naming, registry, validation
from gpufleet.preview import preview_spec, preview_stack
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
STACKS = loader.stack_names(ROOT)


@cache
def inventory(stack):
    return preview_stack(stack, ROOT)


def view(stack):
    return VIEWS[validation.load_fleet(stack, ROOT).spec.cloud](inventory(stack))


def test_every_cloud_has_a_view_and_a_shipped_stack():
    from gpufleet.stacks.catalog import CLOUDS

    assert set(VIEWS) == set(CLOUDS)
    assert {validation.load_fleet(s, ROOT).spec.cloud for s in STACKS} == set(CLOUDS)


@pytest.mark.parametrize("stack", STACKS)
def test_no_world_open_ingress_on_nodes(stack):
    ingress = view(stack)["node_ingress"]
    assert ingress, "node security group accepts nothing at all"
    ssh_cidrs = validation.load_fleet(stack, ROOT).spec.network.ssh_cidrs
    for cidr, port in ingress:
        assert ipaddress.ip_network(cidr).prefixlen > 0, (cidr, port)
        if port == "22":
            assert cidr in ssh_cidrs


@pytest.mark.parametrize("stack", STACKS)
def test_no_public_ip_on_gpu_nodes(stack):
    v = view(stack)
    assert v["node_public_bandwidth"] and all(bw == 0 for bw in v["node_public_bandwidth"])
    assert not any(v["node_public_ip"])


@pytest.mark.parametrize("stack", STACKS)
def test_nat_egress_for_every_zone(stack):
    v = view(stack)
    assert v["nat_with_eip"]
    assert v["subnets_routed_to_nat"] == v["subnets"] == len(validation.load_fleet(stack, ROOT).spec.zones)


@pytest.mark.parametrize("stack", STACKS)
def test_health_check_replaces_broken_nodes(stack):
    v = view(stack)
    assert v["health_check_path"] == validation.load_fleet(stack, ROOT).spec.load_balancer.health_check.path
    assert v["group_replaces_lb_unhealthy"]


@pytest.mark.parametrize("stack", STACKS)
def test_zones_and_replicas(stack):
    v = view(stack)
    fleet = validation.load_fleet(stack, ROOT)
    assert v["group_zones"] == len(fleet.spec.zones) == v["subnets"]
    if fleet.spec.environment == "prod":
        assert v["group_zones"] >= 2 and v["group_min"] >= 2


@pytest.mark.parametrize("stack", STACKS)
def test_user_data_holds_no_secret_and_runs_vllm(stack):
    for text in view(stack)["user_data"]:
        assert '["serve", ' in text  # vLLM's argv (JSON) for the image's launcher
        assert "VLLM_API_KEY" not in text  # the key is fetched at boot by the image's prepare program
        assert "--api-key" not in text
        assert len(text.encode()) < 16 * 1024  # Tencent's limit on user data; Alibaba's is 32 KB


FLEET_TAG = "gpufleet:fleet"  # FleetSpec.stack_tags; the value is naming.base(spec), as program.py's `tags` send it
# Types the SDK lets carry tags that the fleet leaves untagged, each with why.
UNTAGGED = {
    "alicloud:cms/monitorGroup:MonitorGroup": "the provider tags a CMS application group with AddTags after "
    "CreateMonitorGroup (resource_alicloud_cms_monitor_group.go, CmsService.SetResourceTags), and AddTags takes at most "
    "3 tags (Tag.N, 'N can be from 1 to 3') of at most 64 characters (alibabacloud_cms20190101 4.0.10 AddTagsRequest): "
    "fewer than the fleet's tags (gpufleet's 2 and up to 18 of the spec's, values up to 128 characters)",
}


def _provider(token: str) -> str:
    return token.split(":")[2] if token.startswith("pulumi:providers:") else token.split(":")[0]


@cache
def takes_tags(token: str) -> bool | None:
    """Whether the installed provider SDK (pulumi_alicloud, tencentcloud_iac_pulumi) takes a `tags` input for the
    resource type: the `tags` parameter of its `<Class>Args` (of `ProviderArgs` for the provider resource). None
    when the provider has no SDK here (a cloud a test registers, e.g. tests/fake_cloud)."""
    if _provider(token) not in docstrings.PACKAGES:
        return None
    if token.startswith("pulumi:providers:"):
        args = importlib.import_module(docstrings.PACKAGES[_provider(token)]).ProviderArgs
    else:
        cls = docstrings.resource_class(token)
        assert getattr(cls, "pulumi_type", None) == token, f"{cls} is not the SDK class of {token}"
        args = getattr(inspect.getmodule(cls), f"{cls.__name__}Args")
    return "tags" in inspect.signature(args.__init__).parameters


@pytest.mark.parametrize("stack", STACKS)
def test_every_resource_is_tagged_or_untaggable(stack):
    """Every resource whose type the provider SDK lets carry tags is sent the fleet's tag (naming.base, the value
    `cost reconcile` matches bills by), but the UNTAGGED types; whether a type takes tags is the installed SDK's
    answer, not the program's. A cloud without a Pulumi provider package (a test's fake cloud) has no SDK to ask:
    there, the types it sends tags to."""
    spec = validation.load_fleet(stack, ROOT).spec
    custom = [r for r in inventory(stack).resources if r["custom"]]
    sent = {r["type"] for r in custom if "tags" in r["inputs"]}

    def taggable(token):
        answer = takes_tags(token)
        if answer is None:
            package = registry.profile(spec.cloud).provider_package
            assert not package, f"{token}: add {package}'s Python SDK to tests/contract/docstrings.PACKAGES"
            return token in sent
        return answer and token not in UNTAGGED

    tagged = [r for r in custom if taggable(r["type"])]
    assert tagged
    untagged = [(r["type"], r["name"]) for r in tagged if tag_map(r["inputs"].get("tags")).get(FLEET_TAG) != naming.base(spec)]
    assert not untagged, f"taggable resources without {FLEET_TAG}={naming.base(spec)}: {untagged}"


def test_the_untagged_exceptions_are_taggable_types_a_stack_declares():
    declared = {r["type"] for stack in STACKS for r in inventory(stack).resources}
    for token, why in UNTAGGED.items():
        assert why and token in declared and takes_tags(token), token


@pytest.mark.parametrize("stack", STACKS)
def test_outputs(stack):
    assert set(inventory(stack).outputs) == {"endpoint", "vpc_id", "scaling_group_id", "security_group_ids"}


def _variant(stack, **changes):
    _, config = loader.read_stack_config(stack, ROOT)
    raw = dict(config[loader.CONFIG_KEY], **changes)
    return raw, preview_spec(raw, f"{stack}-variant")


def test_spot_and_subscription_variants_alicloud():
    raw, inv = _variant(
        "alicloud-cn-hangzhou-prod",
        billing={"model": "spot", "spot_price_limit": 5.0, "on_demand_base": 2, "on_demand_above_base_percent": 25},
    )
    (config_in,) = of(inv, "alicloud:ess/scalingConfiguration:ScalingConfiguration")
    assert config_in["spotStrategy"] == "SpotWithPriceLimit"
    # spot over an on-demand base of replicas.min: ESS's mix, which needs COST_OPTIMIZED, and every offered type capped
    (group,) = of(inv, "alicloud:ess/scalingGroup:ScalingGroup")
    assert group["multiAzPolicy"] == "COST_OPTIMIZED"
    assert group["onDemandBaseCapacity"] == raw["replicas"]["min"] and group["onDemandPercentageAboveBaseCapacity"] == 25
    types = config_in.get("instanceTypes") or [config_in["instanceType"]]
    assert group["spotInstancePools"] == len(types) and group["spotInstanceRemedy"] is True
    assert {lim["instanceType"] for lim in config_in["spotPriceLimits"]} == set(types)
    raw, inv = _variant("alicloud-cn-hangzhou-prod", billing={"model": "monthly"})
    baseline = of(inv, "alicloud:ecs/instance:Instance")
    assert len(baseline) == raw["replicas"]["min"] and all(b["instanceChargeType"] == "PrePaid" for b in baseline)
    assert of(inv, "alicloud:ess/attachment:Attachment")


def test_spot_and_subscription_variants_tencentcloud():
    stack = "tencentcloud-ap-guangzhou-prod"
    raw, inv = _variant(stack, billing={"model": "spot", "spot_price_limit": 5.0, "on_demand_base": 2})
    configs = {c["configurationName"]: c for c in of(inv, "tencentcloud:As/scalingConfig:ScalingConfig")}
    config_in = configs["llm-ap-guangzhou-prod-asg-config"]
    assert config_in["instanceChargeType"] == "SPOTPAID" and config_in["spotMaxPrice"] == "5.0000"
    assert config_in["spotInstanceType"] == "one-time"
    # the on-demand base: its own pay-as-you-go group of exactly replicas.min nodes behind the same listener
    assert configs["llm-ap-guangzhou-prod-asg-base-config"]["instanceChargeType"] == "POSTPAID_BY_HOUR"
    groups = {g["scalingGroupName"]: g for g in of(inv, "tencentcloud:As/scalingGroup:ScalingGroup")}
    base, spot = groups["llm-ap-guangzhou-prod-asg-base-group"], groups["llm-ap-guangzhou-prod-asg-group"]
    assert base["minSize"] == base["maxSize"] == base["desiredCapacity"] == raw["replicas"]["min"]
    assert spot["minSize"] == 0 and spot["maxSize"] == raw["replicas"]["max"] - raw["replicas"]["min"]
    assert base["forwardBalancerIds"] == spot["forwardBalancerIds"]
    # the scaling policies act on the spot group; the SCF scaler reads the nodes of both
    assert {p["scalingGroupId"] for p in of(inv, "tencentcloud:As/scalingPolicy:ScalingPolicy")} == {"llm-prod-asg-group_id"}
    (fn,) = of(inv, "tencentcloud:Scf/function:Function")
    assert fn["environment"]["GPUFLEET_SCALING_GROUP"] == "llm-prod-asg-group_id,llm-prod-asg-base-group_id"
    raw, inv = _variant(stack, billing={"model": "yearly", "period_months": 24})
    (config_in,) = of(inv, "tencentcloud:As/scalingConfig:ScalingConfig")
    assert config_in["instanceChargeType"] == "POSTPAID_BY_HOUR"  # nodes above min
    baseline = of(inv, "tencentcloud:Instance/instance:Instance")
    assert len(baseline) == raw["replicas"]["min"]
    assert all(b["instanceChargeType"] == "PREPAID" and b["instanceChargeTypePrepaidPeriod"] == 24 for b in baseline)
    assert {b["availabilityZone"] for b in baseline} == set(raw["zones"])  # spread over the zones
    (attach,) = of(inv, "tencentcloud:As/attachment:Attachment")
    (protect,) = of(inv, "tencentcloud:As/protectInstances:ProtectInstances")
    assert len(attach["instanceIds"]) == len(protect["instanceIds"]) == raw["replicas"]["min"] and protect["protectedFromScaleIn"]
    v = tencentcloud_view(inv)
    assert not any(v["node_public_ip"]) and all(bw == 0 for bw in v["node_public_bandwidth"])


def test_tencent_alarms_cover_gpu_load_and_hardware_health():
    inv = inventory("tencentcloud-ap-guangzhou-prod")
    fleet = validation.load_fleet("tencentcloud-ap-guangzhou-prod", ROOT)
    policies = of(inv, "tencentcloud:Monitor/alarmPolicy:AlarmPolicy")
    rules = {r["metricName"]: r for p in policies for r in p["conditions"]["rules"]}
    assert set(rules) == {"Gpuutil", "Gpumemusage", "Gpueccterminateapp", "Gpuretiredpagepending"}
    assert float(rules["Gpuutil"]["value"]) == fleet.spec.alarms.gpu_utilization.threshold_percent
    assert rules["Gpuutil"]["continuePeriod"] == fleet.spec.alarms.gpu_utilization.minutes
    assert float(rules["Gpumemusage"]["value"]) == fleet.spec.alarms.gpu_memory.threshold_percent
    for p in policies:
        assert p["namespace"] == "cvm_device" and p["policyTags"] == [{"key": "gpufleet:fleet", "value": naming.base(fleet.spec)}]
        assert p["noticeIds"] == [fleet.spec.alarms.contact_group]


@pytest.mark.parametrize("prod_stack", [s for s in STACKS if s.endswith("-prod")])
def test_prod_scales_on_the_queue_and_drains_before_a_node_goes(prod_stack):
    """(named prod_stack: the fake cloud's autoscaler reads no metric, it does not run this)"""
    v = view(prod_stack)
    assert v["scales_on"] == "queue" and v["drains_on_scale_in"]


@pytest.mark.parametrize("prod_stack", [s for s in STACKS if s.endswith("-prod")])
def test_a_spot_prod_fleet_keeps_replicas_min_on_demand(prod_stack):
    """(named prod_stack: the fake cloud, which bills by the hour only, does not run it)"""
    _, config = loader.read_stack_config(prod_stack, ROOT)
    raw = {**config[loader.CONFIG_KEY]}
    raw["billing"] = {"model": "spot", "on_demand_base": raw["replicas"]["min"]}
    fleet = validation.validate(raw, stack=prod_stack, file="x", sizing=False)
    v = VIEWS[fleet.spec.cloud](preview_spec(raw, prod_stack))
    assert v["on_demand_base"] >= raw["replicas"]["min"] and v["drains_on_scale_in"]
