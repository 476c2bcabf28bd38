"""The Tencent Cloud fleet: network -> security -> role -> load balancer -> scaling (+ SCF scaler) -> alarms.

Each component takes `(name, args, opts)`: its `…Args` struct holds exactly what it uses, built here from the Fleet
by the small pure functions below (the components never see the spec)."""

from __future__ import annotations

import base64

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from gpufleet import naming
from gpufleet.components import userdata
from gpufleet.components.shared_args import alarms_args, network_args
from gpufleet.components.tencentcloud import scaling, security
from gpufleet.components.tencentcloud.alarms import Alarms
from gpufleet.components.tencentcloud.autoscaler import Autoscaler, AutoscalerArgs
from gpufleet.components.tencentcloud.loadbalancer import LoadBalancer, LoadBalancerArgs
from gpufleet.components.tencentcloud.network import Network
from gpufleet.components.tencentcloud.role import NodeRole, NodeRoleArgs
from gpufleet.components.tencentcloud.scaling import Scaling, ScalingArgs
from gpufleet.components.tencentcloud.security import Security, SecurityArgs
from gpufleet.stacks.loader import Fleet


def security_args(fleet: Fleet, tags: dict[str, str]) -> SecurityArgs:
    return SecurityArgs(
        names=naming.names(fleet),
        node_ingresses=tuple(security.node_ingress_rules(fleet)),
        clb_ingresses=tuple(security.clb_ingress_rules(fleet)),
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
        tags=tags,
    )


def load_balancer_args(fleet: Fleet, net: Network, sec: Security, tags: dict[str, str]) -> LoadBalancerArgs:
    spec = fleet.spec
    return LoadBalancerArgs(
        names=naming.names(fleet),
        lb=spec.load_balancer,
        serving_port=spec.serving.port,
        vpc_id=net.vpc.id,
        subnet_id=net.subnets[0].id,
        security_group_id=sec.clb_group.id,
        prod=spec.environment == "prod",
        tags=tags,
    )


def scaling_args(
    group: Fleet, net: Network, sec: Security, lb: LoadBalancer, role: NodeRole, tags: dict[str, str], weight: int
) -> ScalingArgs:
    """One serving group's scaling (the fleet's own, or a rollout's candidate) over the shared components."""
    spec = group.spec
    # AS creates the launch configuration before the group (as_scaling_group: configuration_id is required), so
    # the node cannot learn its group id from user-data here; nothing on a Tencent node needs it (docs/scaling.md)
    user_data = userdata.render(group, role.role_name)
    return ScalingArgs(
        names=naming.names(group),
        prod=spec.environment == "prod",
        replicas=spec.replicas,
        autoscaling=spec.autoscaling,
        billing=spec.billing,
        disks=spec.disks,
        grace_period_s=spec.load_balancer.health_check.grace_period_s,
        serving_port=spec.serving.port,
        zones=tuple(spec.zones),
        instance_type=group.instance_type.type,
        image_id=group.image_id,
        charge=scaling.charge_args(group),
        schedules=tuple(scaling.schedule_args(group)),
        schedule_ignored=tuple(scaling.schedule_ignored(group)),
        user_data=base64.b64encode(user_data.encode()).decode(),
        vpc_id=net.vpc.id,
        subnet_ids=[s.id for s in net.subnets],
        security_group_id=sec.group.id,
        clb_id=lb.clb.id,
        listener_id=lb.listener.listener_id,
        rule_id=lb.rule.rule_id if lb.rule is not None else None,
        role_name=role.role_name,
        tags=tags,
        weight=weight,
    )


def autoscaler_args(group: Fleet, net: Network, group_scaling: Scaling, tags: dict[str, str]) -> AutoscalerArgs:
    """The SCF scaler of one serving group, executing that group's scaling policies."""
    return AutoscalerArgs(
        names=naming.names(group),
        region=group.spec.region,
        autoscaling=group.spec.autoscaling,
        metrics_port=group.spec.serving.gateway.metrics_port,
        vpc_id=net.vpc.id,
        subnet_id=net.subnets[0].id,
        group_ids=[g.id for g in group_scaling.groups],
        out_policy_id=group_scaling.policies["out"].id,
        in_policy_id=group_scaling.policies["in"].id,
        tags=tags,
    )


def declare(fleet: Fleet, parent: pulumi.Resource) -> dict:
    name = fleet.prefix
    tags = {**fleet.spec.tags, "gpufleet:fleet": naming.base(fleet.spec), "gpufleet:env": fleet.spec.environment}
    provider = tencentcloud.Provider(f"{name}-tencentcloud", region=fleet.spec.region, opts=pulumi.ResourceOptions(parent=parent))
    opts = pulumi.ResourceOptions(parent=parent, providers={"tencentcloud": provider})
    net = Network(f"{name}-net", network_args(fleet, tags), opts)
    sec = Security(f"{name}-sec", security_args(fleet, tags), opts)
    role = NodeRole(f"{name}-role", role_args(fleet, tags), opts)
    lb = LoadBalancer(f"{name}-lb", load_balancer_args(fleet, net, sec, tags), opts)
    scalings = []
    for group, weight in fleet.serving_groups():
        prefix = group.group_prefix
        group_scaling = Scaling(f"{prefix}-asg", scaling_args(group, net, sec, lb, role, tags, weight), opts)
        if group.spec.autoscaling.metric != "cpu_utilization":
            Autoscaler(f"{prefix}-scaler", autoscaler_args(group, net, group_scaling, tags), opts)
        scalings.append(group_scaling)
    Alarms(f"{name}-alarms", alarms_args(fleet), opts)
    outputs = {
        "endpoint": lb.endpoint,
        "vpc_id": net.vpc.id,
        "scaling_group_id": scalings[0].group.id,
        "security_group_ids": [sec.group.id],
    }
    if fleet.spec.rollout is not None:
        outputs["candidate_scaling_group_id"] = scalings[-1].group.id
    return outputs
