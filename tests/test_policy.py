"""Security and topology invariants over the mock-engine inventory of every shipped stack."""
import base64
import ipaddress
from functools import lru_cache
from pathlib import Path

import pytest

from gpufleet.preview import preview_stack
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
STACKS = loader.stack_names(ROOT)
ALICLOUD = [s for s in STACKS if s.startswith("alicloud-")]


@lru_cache(maxsize=None)
def inventory(stack):
    return preview_stack(stack, ROOT)


def of(inv, token):
    return [r["inputs"] for r in inv.resources if r["type"] == token]


@pytest.mark.parametrize("stack", ALICLOUD)
def test_no_world_open_ingress_on_nodes(stack):
    rules = of(inventory(stack), "alicloud:ecs/securityGroupRule:SecurityGroupRule")
    ingress = [r for r in rules if r["type"] == "ingress"]
    assert ingress, "node security group has no ingress rules at all"
    for rule in ingress:
        net = ipaddress.ip_network(rule["cidrIp"])
        assert net.prefixlen > 0, rule
        if rule["portRange"] == "22/22":
            assert rule["cidrIp"] in loader.load_fleet(stack, ROOT).spec.network.ssh_cidrs


@pytest.mark.parametrize("stack", ALICLOUD)
def test_no_public_ip_on_gpu_nodes(stack):
    inv = inventory(stack)
    for config in of(inv, "alicloud:ess/scalingConfiguration:ScalingConfiguration") + of(inv, "alicloud:ecs/instance:Instance"):
        assert config.get("internetMaxBandwidthOut") == 0


@pytest.mark.parametrize("stack", ALICLOUD)
def test_nat_egress_for_every_zone(stack):
    inv = inventory(stack)
    fleet = loader.load_fleet(stack, ROOT)
    (nat,) = of(inv, "alicloud:vpc/natGateway:NatGateway")
    assert nat["natType"] == "Enhanced"
    assert of(inv, "alicloud:ecs/eipAssociation:EipAssociation")[0]["instanceType"] == "Nat"
    assert len(of(inv, "alicloud:vpc/snatEntry:SnatEntry")) == len(fleet.spec.zones)


@pytest.mark.parametrize("stack", ALICLOUD)
def test_health_check_replaces_broken_nodes(stack):
    inv = inventory(stack)
    fleet = loader.load_fleet(stack, ROOT)
    (listener,) = of(inv, "alicloud:slb/listener:Listener")
    assert listener["healthCheck"] == "on" and listener["healthCheckUri"] == fleet.spec.load_balancer.health_check.path
    (group,) = of(inv, "alicloud:ess/scalingGroup:ScalingGroup")
    assert "LOAD_BALANCER" in group["healthCheckTypes"] and group["loadbalancerIds"]


@pytest.mark.parametrize("stack", ALICLOUD)
def test_zones_and_replicas(stack):
    inv = inventory(stack)
    fleet = loader.load_fleet(stack, ROOT)
    (group,) = of(inv, "alicloud:ess/scalingGroup:ScalingGroup")
    assert len(group["vswitchIds"]) == len(fleet.spec.zones) == len(of(inv, "alicloud:vpc/switch:Switch"))
    if fleet.spec.environment == "prod":
        assert len(group["vswitchIds"]) >= 2 and group["minSize"] >= 2


@pytest.mark.parametrize("stack", ALICLOUD)
def test_user_data_holds_no_secret_and_runs_vllm(stack):
    inv = inventory(stack)
    (config,) = of(inv, "alicloud:ess/scalingConfiguration:ScalingConfiguration")
    text = base64.b64decode(config["userData"]).decode()
    assert "vllm serve" in text or "'vllm' 'serve'" in text or "vllm serve" in text.replace("'", "")
    assert "VLLM_API_KEY=" not in text.split("printf")[0]  # only written at boot, from the secrets manager
    assert "--api-key" not in text


@pytest.mark.parametrize("stack", STACKS)
def test_every_resource_is_tagged_or_untaggable(stack):
    inv = inventory(stack)
    for r in inv.resources:
        if "tags" in r["inputs"]:
            assert r["inputs"]["tags"].get("gpufleet:fleet"), r["name"]


@pytest.mark.parametrize("stack", STACKS)
def test_outputs(stack):
    assert set(inventory(stack).outputs) == {"endpoint", "vpc_id", "scaling_group_id", "security_group_ids"}


def test_spot_and_subscription_variants():
    from gpufleet.preview import preview_spec

    _, config = loader.read_stack_config("alicloud-cn-hangzhou-prod", ROOT)
    raw = dict(config[loader.CONFIG_KEY], billing={"model": "spot", "spot_price_limit": 5.0})
    inv = preview_spec(raw, "alicloud-cn-hangzhou-spot")
    (config_in,) = of(inv, "alicloud:ess/scalingConfiguration:ScalingConfiguration")
    assert config_in["spotStrategy"] == "SpotWithPriceLimit"
    raw = dict(raw, billing={"model": "monthly"})
    inv = preview_spec(raw, "alicloud-cn-hangzhou-monthly")
    baseline = of(inv, "alicloud:ecs/instance:Instance")
    assert len(baseline) == raw["replicas"]["min"] and all(b["instanceChargeType"] == "PrePaid" for b in baseline)
    assert of(inv, "alicloud:ess/attachment:Attachment")
