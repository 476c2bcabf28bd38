"""AS group across the zones behind the CLB listener, its launch configuration, scaling policies and schedules."""

from __future__ import annotations

import base64
from datetime import datetime

import pulumi
import tencentcloud_iac_pulumi as tencentcloud
from gpufleet.components.registry import profile
from gpufleet.components.tencentcloud import rules
from gpufleet.components.tencentcloud.checks import cron_to_utc8
from gpufleet.stacks.loader import Fleet

from gpufleet import clock, cron


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
    r = fleet.spec.replicas
    return {
        "min_size": r.min,
        "max_size": r.max,
        "desired_capacity": r.desired_or_min,
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
    out = []
    for s in fleet.spec.autoscaling.schedules:
        w = cron.window(s.cron, fleet.spec.autoscaling, now)
        out.append(
            {
                "schedule_action_name": s.name,
                "recurrence": cron_to_utc8(s.cron),
                "min_size": s.min,
                "max_size": s.max,
                "desired_capacity": s.desired if s.desired is not None else s.min,
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
    a = fleet.spec.autoscaling
    return [
        {
            "direction": direction,
            "metric_name": "CPU_UTILIZATION",
            "comparison_operator": operator,
            "threshold": threshold,
            "period": 60,
            "continuous_time": min(a.evaluation_minutes, 10),
            "statistic": "AVERAGE",
            "adjustment_type": "CHANGE_IN_CAPACITY",
            "adjustment_value": adjustment,
            "cooldown": a.cooldown_s,
        }
        for direction, adjustment, threshold, operator in (
            ("out", 1, a.scale_out_above, "GREATER_THAN_OR_EQUAL_TO"),
            ("in", -1, a.scale_in_below, "LESS_THAN_OR_EQUAL_TO"),
        )
    ]


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
        user_data: str,
        tags: dict,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpufleet:tencentcloud:Scaling", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        encoded = base64.b64encode(user_data.encode()).decode()
        self.configuration = tencentcloud.as_.ScalingConfig(
            f"{name}-config",
            configuration_name=f"{name}-config",
            instance_types=[fleet.instance_type.type],
            image_id=fleet.image_id,
            security_group_ids=[security_group_id],
            cam_role_name=role_name,
            user_data=encoded,
            internet_max_bandwidth_out=0,
            public_ip_assigned=False,
            enhanced_monitor_service=True,
            enhanced_security_service=True,
            keep_image_login=True,  # the golden image has no password: nodes get none (no random root password)
            instance_name_settings={"instance_name": f"{name}-node"},
            instance_tags=tags,
            tags=tags,
            opts=child,
            **disk_args(fleet),
            **charge_args(fleet),
        )
        self.group = tencentcloud.as_.ScalingGroup(
            f"{name}-group",
            scaling_group_name=f"{name}-group",
            configuration_id=self.configuration.id,
            vpc_id=vpc_id,
            subnet_ids=[s.id for s in subnets],
            forward_balancer_ids=[
                {
                    "load_balancer_id": clb_id,
                    "listener_id": listener.listener_id,
                    **({"rule_id": rule.rule_id} if rule is not None else {}),
                    "target_attributes": [{"port": fleet.spec.serving.port, "weight": 10}],
                }
            ],
            tags=tags,
            # AS groups have no deletion-protection argument in provider v1.82.42 (rules.GAPS): Pulumi protects prod's
            opts=pulumi.ResourceOptions(parent=self, protect=prod(fleet)),
            **group_args(fleet),
        )
        for args in policy_args(fleet):
            direction = args.pop("direction")
            tencentcloud.as_.ScalingPolicy(
                f"{name}-scale-{direction}",
                policy_name=f"{name}-scale-{direction}",
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
        if fleet.spec.billing.model in ("monthly", "yearly"):
            self._subscription_baseline(name, fleet, vpc_id, subnets, security_group_id, role_name, encoded, tags)
        self.register_outputs({"scaling_group_id": self.group.id})

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
                    instance_name=f"{name}-base-{i}",
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
