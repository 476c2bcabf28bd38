"""AS group across the zones behind the CLB listener, its launch configuration, scaling policies and schedules."""

from __future__ import annotations

import base64
from datetime import datetime

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from gpufleet import clock, cron
from gpufleet.components import userdata
from gpufleet.components.tencentcloud import rules
from gpufleet.components.tencentcloud.checks import cron_to_utc8
from gpufleet.naming import physical
from gpufleet.registry import profile
from gpufleet.stacks.loader import Fleet
from gpufleet.stacks.rollout import DEFAULT_WEIGHT


def _utc8(when: datetime) -> str:
    """AS scheduled actions take times as YYYY-MM-DDThh:mm:ss+08:00 (as_schedule docs, rules.SCHEDULE_FORMAT)."""
    return when.astimezone(cron.zone(rules.CRON_ZONE_HOURS)).strftime("%Y-%m-%dT%H:%M:%S+08:00")


def disk_args(fleet: Fleet) -> dict:
    cats = profile("tencentcloud").disk_categories
    system, data = fleet.spec.disks.system, fleet.spec.disks.data
    return {
        "system_disk_type": cats[system.tier]["category"],
        "system_disk_size": system.size_gib,
        "data_disks": [{"disk_type": cats[data.tier]["category"], "disk_size": data.size_gib, "delete_with_instance": True}],
    }


def prod(fleet: Fleet) -> bool:
    return fleet.spec.environment == "prod"


def charge_args(fleet: Fleet) -> dict:
    """The launch configuration: spot (SPOTPAID, one-time) or pay-as-you-go; subscriptions are the baseline nodes."""
    billing = fleet.spec.billing
    if billing.model == "spot":
        args = {"instance_charge_type": "SPOTPAID", "spot_instance_type": "one-time"}
        price = spot_max_price(fleet)
        if price is not None:
            args["spot_max_price"] = price
        return args
    return {"instance_charge_type": "POSTPAID_BY_HOUR"}


def spot_max_price(fleet: Fleet) -> str | None:
    """SPOTPAID must set spot_max_price (as_scaling_config docs). Without billing.spot_price_limit the cap is the
    pay-as-you-go price of the instance type in the cost catalog (dated and sourced there), as Alibaba's
    SpotAsPriceGo caps at the pay-as-you-go price; None when the catalog has no price (the contract then asks for
    billing.spot_price_limit)."""
    limit = fleet.spec.billing.spot_price_limit
    if limit is not None:
        return f"{limit:.4f}"
    from gpufleet.cost import catalog

    try:
        row = catalog.load("tencentcloud", fleet.spec.region).get(f"instance/{fleet.instance_type.type}", "payg")
    except (FileNotFoundError, KeyError, ValueError):
        return None
    return None if row is None or row.price is None else f"{row.price:.4f}"


def baseline_args(fleet: Fleet) -> dict:
    """A subscribed (PREPAID) baseline node: the spec's term, renewed automatically."""
    return {
        "instance_charge_type": "PREPAID",
        "instance_charge_type_prepaid_period": fleet.spec.billing.term_months,
        "instance_charge_type_prepaid_renew_flag": "NOTIFY_AND_AUTO_RENEW",
    }


def group_args(fleet: Fleet) -> dict:
    """The group the schedules and the scaling policies act on: all nodes, or with spot over an on-demand base, the
    spot nodes above the base (the base is its own fixed-size group, base_group_args)."""
    r = fleet.spec.replicas
    base, floor = base_size(fleet), subscription_floor(fleet)
    return {
        "min_size": max(r.min - base - floor, 0),
        "max_size": r.max - base,
        "desired_capacity": max(r.desired_or_min - base - floor, 0),
        **_group_common(fleet),
    }


def subscription_floor(fleet: Fleet) -> int:
    """With billing monthly / yearly: the replicas.min PREPAID CVMs attached to the group and protected from scale-in
    (_subscription_baseline). The group launches none of its own for them: its min_size and desired_capacity leave the
    floor out, so the floor is exactly replicas.min nodes (before, the group launched replicas.min pay-as-you-go nodes
    and the subscription nodes were attached as well: twice the floor, both billed). Attached instances count towards
    max_size; AS removes the nodes it created before attached ones and never a protected one (SetInstancesProtection:
    "实例设置保护之后，当发生不健康替换、报警策略、期望值变更等自动缩容时，将不对此实例缩容操作", tccli 3.1.189.1
    autoscaling v20180419)."""
    return fleet.spec.replicas.min if fleet.spec.billing.model in ("monthly", "yearly") else 0


def base_size(fleet: Fleet) -> int:
    """Pay-as-you-go nodes of a spot fleet's on-demand base (billing.on_demand_base); 0 without spot."""
    return fleet.spec.billing.base if fleet.spec.billing.model == "spot" else 0


def base_group_args(fleet: Fleet) -> dict:
    """The on-demand base of a spot fleet: a second AS group of exactly billing.on_demand_base pay-as-you-go nodes behind
    the same listener. The AS group of provider v1.82.42 has no mixed on-demand / spot allocation (no
    on_demand_base_capacity or instances-distribution argument in as/resource_tc_as_scaling_group.go), so the mix is two
    groups; nothing scales this one, the scaling policies and schedules act on the spot group."""
    base = base_size(fleet)
    return {"min_size": base, "max_size": base, "desired_capacity": base, **_group_common(fleet)}


def _group_common(fleet: Fleet) -> dict:
    return {
        "default_cooldown": fleet.spec.autoscaling.cooldown_s,
        "multi_zone_subnet_policy": "EQUALITY",
        "health_check_type": "CLB",
        "lb_health_check_grace_period": fleet.spec.load_balancer.health_check.grace_period_s,
        "replace_load_balancer_unhealthy": True,
        "replace_monitor_unhealthy": True,
        "replace_mode": "RECREATE",
        "termination_policies": "OLDEST_INSTANCE",
        "retry_policy": "INCREMENTAL_INTERVALS",
    }


def schedule_args(fleet: Fleet, now: datetime | None = None) -> list[dict]:
    """AS scheduled actions: start_time is the cron's first firing after the run (the API refuses a start before the
    current time: StartTimeBeforeCurrentTime), end_time the end of the spec's window."""
    now = now or clock.now()
    base = base_size(fleet)
    out = []
    for s in fleet.spec.autoscaling.schedules:
        w = cron.window(s.cron, fleet.spec.autoscaling, now)
        out.append(
            {
                "schedule_action_name": s.name,
                "recurrence": cron_to_utc8(s.cron),
                # the schedules act on the spot group above the on-demand base (base_group_args)
                "min_size": max(s.min - base, 0),
                "max_size": max(s.max - base, 1),
                "desired_capacity": max((s.desired if s.desired is not None else s.min) - base, 0),
                "start_time": _utc8(w.first),
                "end_time": _utc8(w.end),
            }
        )
    return out


def schedule_ignored(fleet: Fleet) -> list[str]:
    """Dates kept as created: the start always (only meaningful at creation), the end unless the spec stores the window."""
    stored = fleet.spec.autoscaling.schedule_window_start is not None
    return ["start_time"] if stored else ["start_time", "end_time"]


def policy_args(fleet: Fleet) -> list[dict]:
    """AS scaling policies, out then in. metric cpu_utilization: AS's own CPU alarm decides. metric queue / kv_cache:
    the SCF scaler (autoscaler.py) executes them; their alarm can never hold (rules.NEVER_OUT / NEVER_IN), because a
    SIMPLE policy must carry one and AS reads no custom metric."""
    a = fleet.spec.autoscaling
    cpu = a.metric == "cpu_utilization"
    out = []
    for direction, adjustment, threshold, operator, minutes, never in (
        ("out", 1, a.scale_out_above, "GREATER_THAN_OR_EQUAL_TO", a.evaluation_minutes, rules.NEVER_OUT),
        ("in", -1, a.scale_in_below, "LESS_THAN_OR_EQUAL_TO", a.scale_in_evaluation_minutes, rules.NEVER_IN),
    ):
        out.append(
            {
                "direction": direction,
                "metric_name": "CPU_UTILIZATION",
                "comparison_operator": operator if cpu else never["comparison_operator"],
                "threshold": threshold if cpu else never["threshold"],
                "period": 60,
                "continuous_time": minutes,
                "statistic": "AVERAGE",
                "adjustment_type": "CHANGE_IN_CAPACITY",
                "adjustment_value": adjustment,
                "cooldown": a.cooldown_s,
            }
        )
    return out


def drain_command_args(fleet: Fleet) -> dict:
    """The TAT command the INSTANCE_TERMINATING hook runs (as_lifecycle_hook lifecycle_command, provider v1.82.42):
    the image's drain, with the spec's drain time as the command's timeout. TAT needs its agent on the node (Tencent
    public images ship it; the golden image must keep it)."""
    timeout = fleet.spec.autoscaling.drain_timeout_s
    return {"content": rules.DRAIN_COMMAND, "command_type": "SHELL", "timeout": timeout, "username": "root"}


def drain_hook_args(fleet: Fleet) -> dict:
    return {
        "lifecycle_transition": "INSTANCE_TERMINATING",
        "default_result": "CONTINUE",
        "heartbeat_timeout": fleet.spec.autoscaling.drain_timeout_s,
    }


class Scaling(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        fleet: Fleet,
        vpc_id,
        subnets,
        security_group_id,
        clb_id,
        listener,
        rule,
        role_name: str,
        tags: dict,
        opts: pulumi.ResourceOptions | None = None,
        weight: int = DEFAULT_WEIGHT,
    ):
        """weight: the per-node backend weight of the group's nodes at the listener (stacks/rollout.py; AS
        ForwardLoadBalancers.TargetAttributes.Weight 0-100, rules.py; 0 = no requests)."""
        super().__init__("gpufleet:tencentcloud:Scaling", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # AS creates the launch configuration before the group (as_scaling_group: configuration_id is required), so
        # the node cannot learn its group id from user-data here; nothing on a Tencent node needs it (docs/scaling.md)
        user_data = userdata.render(fleet, role_name)
        encoded = base64.b64encode(user_data.encode()).decode()
        self._vpc_id, self._subnets, self._sg, self._role, self._encoded, self._tags = (
            vpc_id,
            subnets,
            security_group_id,
            role_name,
            encoded,
            tags,
        )
        balancer = [
            {
                "load_balancer_id": clb_id,
                "listener_id": listener.listener_id,
                **({"rule_id": rule.rule_id} if rule is not None else {}),
                "target_attributes": [{"port": fleet.spec.serving.port, "weight": weight}],
            }
        ]
        self.configuration = self._config(f"{name}-config", fleet, charge_args(fleet))
        self.group = tencentcloud.as_.ScalingGroup(
            f"{name}-group",
            scaling_group_name=physical(fleet, f"{name}-group"),
            configuration_id=self.configuration.id,
            vpc_id=vpc_id,
            subnet_ids=[s.id for s in subnets],
            forward_balancer_ids=balancer,
            tags=tags,
            # AS groups have no deletion-protection argument in provider v1.82.42 (rules.GAPS): Pulumi protects prod's
            opts=pulumi.ResourceOptions(parent=self, protect=prod(fleet)),
            **group_args(fleet),
        )
        named = [(f"{name}-group", self.group)]
        if base_size(fleet):
            base_config = self._config(f"{name}-base-config", fleet, {"instance_charge_type": "POSTPAID_BY_HOUR"})
            self.base_group = tencentcloud.as_.ScalingGroup(
                f"{name}-base-group",
                scaling_group_name=physical(fleet, f"{name}-base-group"),
                configuration_id=base_config.id,
                vpc_id=vpc_id,
                subnet_ids=[s.id for s in subnets],
                forward_balancer_ids=balancer,
                tags=tags,
                opts=pulumi.ResourceOptions(parent=self, protect=prod(fleet)),
                **base_group_args(fleet),
            )
            named.append((f"{name}-base-group", self.base_group))
        self.groups = [g for _, g in named]
        self.policies = {}
        for args in policy_args(fleet):
            direction = args.pop("direction")
            self.policies[direction] = tencentcloud.as_.ScalingPolicy(
                f"{name}-scale-{direction}",
                policy_name=physical(fleet, f"{name}-scale-{direction}"),
                scaling_group_id=self.group.id,
                opts=child,
                **args,
            )
        ignored = schedule_ignored(fleet)
        for args in schedule_args(fleet):
            tencentcloud.as_.Schedule(
                f"{name}-schedule-{args['schedule_action_name']}",
                scaling_group_id=self.group.id,
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=ignored),
                **args,
            )
        command = tencentcloud.tat.Command(
            f"{name}-drain",
            command_name=physical(fleet, f"{name}-drain"),
            description="gpufleet: drain the node before AS removes it",
            opts=child,
            **drain_command_args(fleet),
        )
        for group_name, group in named:
            tencentcloud.as_.LifecycleHook(
                f"{group_name}-drain",
                scaling_group_id=group.id,
                lifecycle_hook_name=physical(fleet, f"{group_name}-drain"),
                lifecycle_command={"command_id": command.id},
                opts=child,
                **drain_hook_args(fleet),
            )
        if fleet.spec.billing.model in ("monthly", "yearly"):
            self._subscription_baseline(name, fleet, vpc_id, subnets, security_group_id, role_name, encoded, tags)
        self.register_outputs({"scaling_group_id": self.group.id})

    def _config(self, name: str, fleet: Fleet, charge: dict):
        return tencentcloud.as_.ScalingConfig(
            name,
            configuration_name=physical(fleet, name),
            instance_types=[fleet.instance_type.type],
            image_id=fleet.image_id,
            security_group_ids=[self._sg],
            cam_role_name=self._role,
            user_data=self._encoded,
            internet_max_bandwidth_out=0,
            public_ip_assigned=False,
            enhanced_monitor_service=True,
            enhanced_security_service=True,
            keep_image_login=True,  # the golden image has no password: nodes get none (no random root password)
            instance_name_settings={"instance_name": physical(fleet, f"{name.removesuffix('-config')}-node")},
            instance_tags=self._tags,
            tags=self._tags,
            opts=pulumi.ResourceOptions(parent=self),
            **disk_args(fleet),
            **charge,
        )

    def _subscription_baseline(self, name, fleet: Fleet, vpc_id, subnets, security_group_id, role_name, encoded, tags):
        """The min replicas as PREPAID CVMs attached to the group and protected from scale-in; nodes above min are
        pay-as-you-go. (AS could start PREPAID nodes itself, but a node bought for a term and scaled in after a
        few hours is paid for the whole term.)"""
        child = pulumi.ResourceOptions(parent=self)
        disks = disk_args(fleet)
        nodes = []
        for i in range(fleet.spec.replicas.min):
            zone, subnet = fleet.spec.zones[i % len(subnets)], subnets[i % len(subnets)]
            nodes.append(
                tencentcloud.instance.Instance(
                    f"{name}-base-{i}",
                    instance_name=physical(fleet, f"{name}-base-{i}"),
                    availability_zone=zone,
                    instance_type=fleet.instance_type.type,
                    image_id=fleet.image_id,
                    vpc_id=vpc_id,
                    subnet_id=subnet.id,
                    orderly_security_groups=[security_group_id],
                    cam_role_name=role_name,
                    user_data=encoded,
                    allocate_public_ip=False,
                    internet_max_bandwidth_out=0,
                    system_disk_type=disks["system_disk_type"],
                    system_disk_size=disks["system_disk_size"],
                    data_disks=[
                        {
                            "data_disk_type": d["disk_type"],
                            "data_disk_size": d["disk_size"],
                            "delete_with_instance": True,
                            "encrypt": fleet.spec.disks.encrypted,
                        }
                        for d in disks["data_disks"]
                    ],
                    keep_image_login=True,
                    disable_api_termination=prod(fleet),
                    tags=tags,
                    opts=child,
                    **baseline_args(fleet),
                )
            )
        ids = [n.id for n in nodes]
        attached = tencentcloud.as_.Attachment(
            f"{name}-base",
            scaling_group_id=self.group.id,
            instance_ids=ids,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.configuration]),
        )
        tencentcloud.as_.ProtectInstances(
            f"{name}-base",
            auto_scaling_group_id=self.group.id,
            instance_ids=ids,
            protected_from_scale_in=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[attached]),
        )
