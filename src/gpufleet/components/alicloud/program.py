"""The Alibaba Cloud fleet: network -> security -> role -> load balancer -> scaling -> alarms.

Each component takes `(name, args, opts)`: its `…Args` struct holds exactly what it uses, built here from the Fleet
by the small pure functions below (the components never see the spec)."""

from __future__ import annotations

from functools import partial

import pulumi
import pulumi_alicloud as alicloud

from gpufleet import naming
from gpufleet.components import userdata
from gpufleet.components.alicloud import scaling
from gpufleet.components.alicloud.alarms import Alarms
from gpufleet.components.alicloud.loadbalancer import LoadBalancer, LoadBalancerArgs, weighted
from gpufleet.components.alicloud.network import Network
from gpufleet.components.alicloud.role import NodeRole, NodeRoleArgs
from gpufleet.components.alicloud.scaling import Scaling, ScalingArgs
from gpufleet.components.alicloud.security import Security, SecurityArgs
from gpufleet.components.shared_args import alarms_args, network_args
from gpufleet.stacks.loader import Fleet


def security_args(fleet: Fleet, vpc_id: pulumi.Input[str], tags: dict[str, str]) -> SecurityArgs:
    spec = fleet.spec
    return SecurityArgs(
        names=naming.names(fleet),
        vpc_id=vpc_id,
        vpc_cidr=spec.network.vpc_cidr,
        serving_port=spec.serving.port,
        metrics_port=spec.serving.gateway.metrics_port,
        ssh_cidrs=tuple(spec.network.ssh_cidrs),
        tags=tags,
    )


def role_args(fleet: Fleet, tags: dict[str, str]) -> NodeRoleArgs:
    """The node role is the fleet's: with a rollout, its candidate's nodes read their model and secret too."""
    specs = [fleet.spec] + ([fleet.candidate.spec] if fleet.candidate is not None else [])
    return NodeRoleArgs(
        names=naming.names(fleet),
        region=fleet.spec.region,
        model_sources=tuple(s.model.source for s in specs),
        api_key_secrets=tuple(s.serving.api_key_secret for s in specs if s.serving.api_key_secret),
        lifecycle_wait=bool(fleet.spec.load_balancer.health_check.grace_period_s),
        tags=tags,
    )


def load_balancer_args(fleet: Fleet, switch_id: pulumi.Input[str], tags: dict[str, str]) -> LoadBalancerArgs:
    spec = fleet.spec
    return LoadBalancerArgs(
        names=naming.names(fleet),
        lb=spec.load_balancer,
        serving_port=spec.serving.port,
        switch_id=switch_id,
        prod=spec.environment == "prod",
        weighted=weighted(spec),
        tags=tags,
    )


def scaling_args(
    group: Fleet,
    net: Network,
    sec: Security,
    lb: LoadBalancer,
    role: NodeRole,
    alarms: Alarms,
    tags: dict[str, str],
    backend: tuple[pulumi.Input[str], int] | None,
) -> ScalingArgs:
    """One serving group's scaling (the fleet's own, or a rollout's candidate) over the shared components."""
    spec = group.spec
    return ScalingArgs(
        names=naming.names(group),
        region=spec.region,
        prod=spec.environment == "prod",
        replicas=spec.replicas,
        autoscaling=spec.autoscaling,
        billing=spec.billing,
        disks=spec.disks,
        grace_period_s=spec.load_balancer.health_check.grace_period_s,
        serving_port=spec.serving.port,
        image_id=group.image_id,
        instance_types=tuple(scaling.instance_types(group)),
        schedules=tuple(scaling.schedule_args(group)),
        schedule_ignored=tuple(scaling.schedule_ignored(group)),
        switch_ids=[s.id for s in net.switches],
        security_group_id=sec.group.id,
        clb_id=lb.clb.id,
        listener=lb.listener,
        role_name=role.role_name,
        metrics_group_id=alarms.metrics_group.id,
        user_data=partial(userdata.render_output, group, role.role_name, alarms.metrics_group.id),
        tags=tags,
        backend=backend,
    )


def declare(fleet: Fleet, parent: pulumi.Resource) -> dict:
    name = fleet.prefix
    tags = {**fleet.spec.tags, "gpufleet:fleet": naming.base(fleet.spec), "gpufleet:env": fleet.spec.environment}
    provider = alicloud.Provider(f"{name}-alicloud", region=fleet.spec.region, opts=pulumi.ResourceOptions(parent=parent))
    opts = pulumi.ResourceOptions(parent=parent, providers={"alicloud": provider})
    net = Network(f"{name}-net", network_args(fleet, tags), opts)
    sec = Security(f"{name}-sec", security_args(fleet, net.vpc.id, tags), opts)
    role = NodeRole(f"{name}-role", role_args(fleet, tags), opts)
    lb = LoadBalancer(f"{name}-lb", load_balancer_args(fleet, net.switches[0].id, tags), opts)
    alarms = Alarms(f"{name}-alarms", alarms_args(fleet), opts)
    backend = lb.server_group
    scalings = [
        Scaling(
            f"{group.group_prefix}-asg",
            scaling_args(group, net, sec, lb, role, alarms, tags, backend=(backend.id, weight) if backend is not None else None),
            opts,
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
