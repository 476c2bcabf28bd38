"""Least-privilege security groups: nodes take the serving port from the VPC and CLB health checks only, SSH
from operators only; the CLB's own group admits the spec's client CIDRs on the listener port.

The CLB passes traffic to its targets (load_balancer_pass_to_target), so client addresses are checked by the
CLB's group and never need a rule on the nodes.
"""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud
from gpufleet.stacks.loader import Fleet

CLB_HEALTH_CHECK_RANGE = "100.64.0.0/10"  # health_source_ip_type = 1 on the listener


def node_ingress_rules(fleet: Fleet) -> list[dict]:
    """Ingress of the node group, in order; the last rule drops everything else (pure: tested without Pulumi)."""
    port = str(fleet.spec.serving.port)
    rules = [
        {
            "action": "ACCEPT",
            "protocol": "TCP",
            "port": port,
            "cidr_block": fleet.spec.network.vpc_cidr,
            "description": "vLLM from the VPC",
        },
        {
            "action": "ACCEPT",
            "protocol": "TCP",
            "port": port,
            "cidr_block": CLB_HEALTH_CHECK_RANGE,
            "description": "vLLM health checks from the CLB range",
        },
        {
            "action": "ACCEPT",
            "protocol": "TCP",
            "port": str(fleet.spec.serving.gateway.metrics_port),
            "cidr_block": fleet.spec.network.vpc_cidr,
            "description": "gateway metrics port (vLLM, node, GPU) from the VPC only",
        },
    ]
    rules += [
        {"action": "ACCEPT", "protocol": "TCP", "port": "22", "cidr_block": cidr, "description": "SSH from operators"}
        for cidr in fleet.spec.network.ssh_cidrs
    ]
    rules.append({"action": "DROP", "protocol": "ALL", "port": "ALL", "cidr_block": "0.0.0.0/0", "description": "nothing else"})
    return rules


def clb_ingress_rules(fleet: Fleet) -> list[dict]:
    lb = fleet.spec.load_balancer
    rules = [
        {"action": "ACCEPT", "protocol": "TCP", "port": str(lb.listener_port), "cidr_block": cidr, "description": "clients"}
        for cidr in lb.allowed_cidrs
    ]
    rules.append({"action": "DROP", "protocol": "ALL", "port": "ALL", "cidr_block": "0.0.0.0/0", "description": "nothing else"})
    return rules


EGRESS_ALL = [
    {
        "action": "ACCEPT",
        "protocol": "ALL",
        "port": "ALL",
        "cidr_block": "0.0.0.0/0",
        "description": "egress through the NAT gateway (model pulls, package mirrors)",
    }
]


class Security(pulumi.ComponentResource):
    def __init__(self, name: str, fleet: Fleet, tags: dict, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:tencentcloud:Security", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.group = tencentcloud.security.Group(
            f"{name}-nodes",
            name=f"{name}-nodes",
            description="gpufleet GPU nodes: no ingress from 0.0.0.0/0",
            tags=tags,
            opts=child,
        )
        tencentcloud.security.GroupRuleSet(
            f"{name}-nodes", security_group_id=self.group.id, ingresses=node_ingress_rules(fleet), egresses=EGRESS_ALL, opts=child
        )
        self.clb_group = tencentcloud.security.Group(
            f"{name}-clb",
            name=f"{name}-clb",
            description="gpufleet CLB: the listener port from the allowed clients",
            tags=tags,
            opts=child,
        )
        tencentcloud.security.GroupRuleSet(
            f"{name}-clb",
            security_group_id=self.clb_group.id,
            ingresses=clb_ingress_rules(fleet),
            egresses=EGRESS_ALL,
            opts=child,
        )
        self.register_outputs({"security_group_id": self.group.id})
