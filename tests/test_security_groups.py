"""The node security groups of the shipped stacks, rule by rule, written out by hand from the stack files (not from
the goldens, which record the program's own output): serving.port 8000, the gateway's metrics port 9180 (the spec's
default, stacks/spec.py), network.vpc_cidr and ssh_cidrs, and the CLB health-check range 100.64.0.0/10 (Alibaba CLB
and Tencent CLB with health_source_ip_type 1 check from it). The metrics port is open to the VPC only; on Tencent the
SCF scaler reads it from the first zone's subnet, the first /24 carved from the VPC (10.31.0.0/16 -> 10.31.0.0/24)."""

from __future__ import annotations

import pytest

from gpufleet import plan

SSH = "198.51.100.0/24"
CLB = "100.64.0.0/10"
ALI_VPC = {
    "alicloud-cn-hangzhou-dev": "10.10.0.0/16",
    "alicloud-cn-hangzhou-prod": "10.20.0.0/16",
    "alicloud-cn-hangzhou-staging": "10.0.0.0/16",
}
TC_VPC = {
    "tencentcloud-ap-guangzhou-dev": ("10.31.0.0/16", "10.31.0.0/24"),
    "tencentcloud-ap-guangzhou-prod": ("10.30.0.0/16", "10.30.0.0/24"),
    "tencentcloud-ap-guangzhou-staging": ("10.32.0.0/16", "10.32.0.0/24"),
}


@pytest.mark.parametrize("stack", sorted(ALI_VPC))
def test_alibaba_node_ingress_by_hand(stack):
    vpc = ALI_VPC[stack]
    rules = [
        r["inputs"]
        for r in plan.for_stack(stack).resources
        if r["type"] == "alicloud:ecs/securityGroupRule:SecurityGroupRule" and r["inputs"]["type"] == "ingress"
    ]
    assert sorted((r["portRange"], r["cidrIp"]) for r in rules) == sorted(
        [("8000/8000", vpc), ("8000/8000", CLB), ("9180/9180", vpc), ("22/22", SSH)]
    )
    assert all(r["policy"] == "accept" and r["ipProtocol"] == "tcp" for r in rules)


@pytest.mark.parametrize("stack", sorted(TC_VPC))
def test_tencent_node_ingress_by_hand(stack):
    vpc, scaler_subnet = TC_VPC[stack]
    (nodes,) = [
        r["inputs"]
        for r in plan.for_stack(stack).resources
        if r["type"] == "tencentcloud:Security/groupRuleSet:GroupRuleSet" and r["name"].endswith("-sec-nodes")
    ]
    assert [(i["action"], i["protocol"], i["port"], i["cidrBlock"]) for i in nodes["ingresses"]] == [
        ("ACCEPT", "TCP", "8000", vpc),
        ("ACCEPT", "TCP", "8000", CLB),
        ("ACCEPT", "TCP", "9180", vpc),
        ("ACCEPT", "TCP", "9180", scaler_subnet),  # autoscaling.metric queue (the default): the SCF scaler's subnet
        ("ACCEPT", "TCP", "22", SSH),
        ("DROP", "ALL", "ALL", "0.0.0.0/0"),  # evaluated in order: nothing else
    ]
