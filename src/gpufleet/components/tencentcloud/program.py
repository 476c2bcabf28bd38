"""The Tencent Cloud fleet: network -> security -> role -> load balancer -> scaling -> alarms."""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from gpufleet import naming
from gpufleet.components.tencentcloud.alarms import Alarms
from gpufleet.components.tencentcloud.autoscaler import Autoscaler
from gpufleet.components.tencentcloud.loadbalancer import LoadBalancer
from gpufleet.components.tencentcloud.network import Network
from gpufleet.components.tencentcloud.role import NodeRole
from gpufleet.components.tencentcloud.scaling import Scaling
from gpufleet.components.tencentcloud.security import Security
from gpufleet.stacks.loader import Fleet


def declare(fleet: Fleet, parent: pulumi.Resource) -> dict:
    name = fleet.prefix
    tags = {**fleet.spec.tags, "gpufleet:fleet": naming.base(fleet.spec), "gpufleet:env": fleet.spec.environment}
    provider = tencentcloud.Provider(f"{name}-tencentcloud", region=fleet.spec.region, opts=pulumi.ResourceOptions(parent=parent))
    opts = pulumi.ResourceOptions(parent=parent, providers={"tencentcloud": provider})
    net = Network(f"{name}-net", fleet, tags, opts)
    sec = Security(f"{name}-sec", fleet, tags, opts)
    role = NodeRole(f"{name}-role", fleet, tags, opts)
    lb = LoadBalancer(f"{name}-lb", fleet, net.vpc.id, net.subnets[0].id, sec.clb_group.id, tags, opts)
    scalings = []
    for group, weight in fleet.serving_groups():
        prefix = group.group_prefix
        scaling = Scaling(
            f"{prefix}-asg",
            group,
            net.vpc.id,
            net.subnets,
            sec.group.id,
            lb.clb.id,
            lb.listener,
            lb.rule,
            role.role_name,
            tags,
            opts,
            weight=weight,
        )
        if group.spec.autoscaling.metric != "cpu_utilization":
            Autoscaler(f"{prefix}-scaler", group, net.vpc.id, net.subnets[0].id, scaling, tags, opts)
        scalings.append(scaling)
    Alarms(f"{name}-alarms", fleet, opts)
    outputs = {
        "endpoint": lb.endpoint,
        "vpc_id": net.vpc.id,
        "scaling_group_id": scalings[0].group.id,
        "security_group_ids": [sec.group.id],
    }
    if fleet.spec.rollout is not None:
        outputs["candidate_scaling_group_id"] = scalings[-1].group.id
    return outputs
