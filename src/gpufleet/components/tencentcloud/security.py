"""Least-privilege security groups: nodes take the serving port from the VPC and CLB health checks only, SSH
from operators only; the CLB's own group admits the spec's client CIDRs on the listener port.

Clients reach the nodes through the CLB with their own source address (TCP listener, components/tencentcloud/
gateway.py), yet the node group needs no rule for them: the CLB is declared with load_balancer_pass_to_target=True
(loadbalancer.py), and then only the CLB's security group is checked for traffic the CLB forwards, the backend's
group is bypassed. Sources, read 2026-12-03:
- tencentcloudstack/terraform-provider-tencentcloud tencentcloud/resource_tc_clb_instance.go (and
  website/docs/r/clb_instance.html.markdown), `load_balancer_pass_to_target`: "If value is true, only check security
  group of clb, or check both clb and backend instance security group";
- Tencent CLB docs, "Configuring CLB Security Group" (https://www.tencentcloud.com/document/product/214/14733): with
  the backend bypass on, client IP and service port need no rule in the CVM's group (the CLB's group alone filters
  them); it holds only for CVM/ENI real servers in the same VPC, and traffic from public IPs/EIPs straight to a CVM
  still passes the CVM's group (the nodes have no public address).
So the CLB group below is the one that admits clients (load_balancer.allowed_cidrs). The node rules on the serving
port (VPC, and 100.64.0.0/10 for health checks) admit VPC callers, and would keep health checks working if the
bypass were ever turned off; with it off, clients would need their CIDRs on the node group as well.
"""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud
from msgspec import Struct

from gpufleet.naming import Names
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
    if fleet.spec.autoscaling.metric != "cpu_utilization":
        # the SCF scaler (autoscaler.py) runs in the first zone's subnet and reads /metrics/vllm on the metrics port
        rules.append(
            {
                "action": "ACCEPT",
                "protocol": "TCP",
                "port": str(fleet.spec.serving.gateway.metrics_port),
                "cidr_block": fleet.subnets[0],
                "description": "SCF scaler: the metrics port from its subnet only",
            }
        )
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


class SecurityArgs(Struct, frozen=True):
    """What the two security groups use (built by program.security_args): their ingress rules, in order."""

    names: Names
    node_ingresses: tuple[dict, ...]  # node_ingress_rules(fleet)
    clb_ingresses: tuple[dict, ...]  # clb_ingress_rules(fleet)
    tags: dict[str, str]


class Security(pulumi.ComponentResource):
    def __init__(self, name: str, args: SecurityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:tencentcloud:Security", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        physical, tags = args.names, args.tags
        self.group = tencentcloud.security.Group(
            f"{name}-nodes",
            name=physical(f"{name}-nodes"),
            description="gpufleet GPU nodes: no ingress from 0.0.0.0/0",
            tags=tags,
            opts=child,
        )
        tencentcloud.security.GroupRuleSet(
            f"{name}-nodes", security_group_id=self.group.id, ingresses=list(args.node_ingresses), egresses=EGRESS_ALL, opts=child
        )
        self.clb_group = tencentcloud.security.Group(
            f"{name}-clb",
            name=physical(f"{name}-clb"),
            description="gpufleet CLB: the listener port from the allowed clients",
            tags=tags,
            opts=child,
        )
        tencentcloud.security.GroupRuleSet(
            f"{name}-clb",
            security_group_id=self.clb_group.id,
            ingresses=list(args.clb_ingresses),
            egresses=EGRESS_ALL,
            opts=child,
        )
        self.register_outputs({"security_group_id": self.group.id})
