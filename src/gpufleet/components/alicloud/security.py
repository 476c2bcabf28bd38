"""Least-privilege security group for GPU nodes: serving port from the VPC only, SSH from operators only."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud
from msgspec import Struct

from gpufleet.naming import Names


class SecurityArgs(Struct, frozen=True):
    """What the node security group uses (built by program.security_args)."""

    names: Names
    vpc_id: pulumi.Input[str]
    vpc_cidr: str
    serving_port: int
    metrics_port: int  # the gateway's
    ssh_cidrs: tuple[str, ...]
    tags: dict[str, str]


def node_ingress_rules(args: SecurityArgs) -> list[dict]:
    """Ingress rules of the node security group (pure: tested without Pulumi)."""
    port = args.serving_port
    rules = [
        {
            "key": "serving",
            "ip_protocol": "tcp",
            "port_range": f"{port}/{port}",
            "cidr_ip": args.vpc_cidr,
            "description": "vLLM from the load balancer and the VPC",
        },
    ]
    # CLB health checks and forwarded traffic come from the 100.64.0.0/10 service range.
    rules.append(
        {
            "key": "serving-clb",
            "ip_protocol": "tcp",
            "port_range": f"{port}/{port}",
            "cidr_ip": "100.64.0.0/10",
            "description": "vLLM from the CLB service range (health checks, forwarding)",
        }
    )
    metrics = args.metrics_port
    rules.append(
        {
            "key": "metrics",
            "ip_protocol": "tcp",
            "port_range": f"{metrics}/{metrics}",
            "cidr_ip": args.vpc_cidr,
            "description": "gateway metrics port (vLLM, node, GPU) from the VPC only",
        }
    )
    for i, cidr in enumerate(args.ssh_cidrs):
        rules.append(
            {"key": f"ssh-{i}", "ip_protocol": "tcp", "port_range": "22/22", "cidr_ip": cidr, "description": "SSH from operators"}
        )
    return rules


class Security(pulumi.ComponentResource):
    def __init__(self, name: str, args: SecurityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:alicloud:Security", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        physical, tags = args.names, args.tags
        self.group = alicloud.ecs.SecurityGroup(
            f"{name}-nodes",
            security_group_name=physical(f"{name}-nodes"),
            vpc_id=args.vpc_id,
            inner_access_policy="Drop",
            tags=tags,
            opts=child,
            description="gpufleet GPU nodes: no ingress from 0.0.0.0/0",
        )
        for rule in node_ingress_rules(args):
            rule_args = {k: v for k, v in rule.items() if k != "key"}
            alicloud.ecs.SecurityGroupRule(
                f"{name}-in-{rule['key']}",
                type="ingress",
                policy="accept",
                nic_type="intranet",
                priority=1,
                security_group_id=self.group.id,
                opts=child,
                **rule_args,
            )
        alicloud.ecs.SecurityGroupRule(
            f"{name}-out-all",
            type="egress",
            policy="accept",
            nic_type="intranet",
            priority=1,
            ip_protocol="all",
            port_range="-1/-1",
            cidr_ip="0.0.0.0/0",
            security_group_id=self.group.id,
            opts=child,
            description="egress through the NAT gateway (model pulls, package mirrors)",
        )
        self.register_outputs({"security_group_id": self.group.id})
