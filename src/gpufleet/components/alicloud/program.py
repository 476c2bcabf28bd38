"""The Alibaba Cloud fleet: network -> security -> role -> load balancer -> scaling -> alarms."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from gpufleet import naming
from gpufleet.components.alicloud.alarms import Alarms
from gpufleet.components.alicloud.loadbalancer import LoadBalancer
from gpufleet.components.alicloud.network import Network
from gpufleet.components.alicloud.role import NodeRole
from gpufleet.components.alicloud.scaling import Scaling
from gpufleet.components.alicloud.security import Security
from gpufleet.stacks.loader import Fleet


def declare(fleet: Fleet, parent: pulumi.Resource) -> dict:
    name = fleet.prefix
    tags = {**fleet.spec.tags, "gpufleet:fleet": naming.base(fleet.spec), "gpufleet:env": fleet.spec.environment}
    provider = alicloud.Provider(f"{name}-alicloud", region=fleet.spec.region, opts=pulumi.ResourceOptions(parent=parent))
    opts = pulumi.ResourceOptions(parent=parent, providers={"alicloud": provider})
    net = Network(f"{name}-net", fleet, tags, opts)
    sec = Security(f"{name}-sec", fleet, net.vpc.id, tags, opts)
    role = NodeRole(f"{name}-role", fleet, opts)
    lb = LoadBalancer(f"{name}-lb", fleet, net.switches[0].id, tags, opts)
    alarms = Alarms(f"{name}-alarms", fleet, opts)
    backend = lb.server_group
    scalings = [
        Scaling(
            f"{group.group_prefix}-asg",
            group,
            net.switches,
            sec.group.id,
            lb.clb.id,
            lb.listener,
            role.role_name,
            alarms.metrics_group.id,
            tags,
            opts,
            backend=(backend.id, weight) if backend is not None else None,
        )
        for group, weight in fleet.serving_groups()
    ]
    ids = [s.group.id for s in scalings]
    role.attach_policy(ids[0] if len(ids) == 1 else ids)
    outputs = {
        "endpoint": lb.endpoint,
        "vpc_id": net.vpc.id,
        "scaling_group_id": scalings[0].group.id,
        "security_group_ids": [sec.group.id],
    }
    if fleet.spec.rollout is not None:
        outputs["candidate_scaling_group_id"] = scalings[-1].group.id
    return outputs
