"""ESS scaling group across the zones, its scaling configuration, rules, schedules and subscription baseline."""

from __future__ import annotations

import base64

import pulumi
import pulumi_alicloud as alicloud
from gpufleet.components.registry import profile
from gpufleet.stacks.loader import Fleet


def disk_args(fleet: Fleet) -> dict:
    cats = profile("alicloud").disk_categories
    system, data = fleet.spec.disks.system, fleet.spec.disks.data
    return {
        "system_disk_category": cats[system.tier]["category"],
        "system_disk_performance_level": cats[system.tier]["performance_level"],
        "system_disk_size": system.size_gib,
        "data_disks": [
            {
                "category": cats[data.tier]["category"],
                "performance_level": cats[data.tier]["performance_level"],
                "size": data.size_gib,
                "delete_with_instance": True,
            }
        ],
    }


def spot_args(fleet: Fleet) -> dict:
    billing = fleet.spec.billing
    if billing.model != "spot":
        return {"spot_strategy": "NoSpot"}
    if billing.spot_price_limit is None:
        return {"spot_strategy": "SpotAsPriceGo"}
    return {
        "spot_strategy": "SpotWithPriceLimit",
        "spot_price_limits": [{"instance_type": fleet.instance_type.type, "price_limit": billing.spot_price_limit}],
    }


def group_args(fleet: Fleet) -> dict:
    r = fleet.spec.replicas
    return {
        "min_size": r.min,
        "max_size": r.max,
        "desired_capacity": r.desired_or_min,
        "default_cooldown": fleet.spec.autoscaling.cooldown_s,
        "multi_az_policy": "COST_OPTIMIZED" if fleet.spec.billing.model == "spot" else "BALANCE",
        "health_check_types": ["ECS", "LOAD_BALANCER"],
        "removal_policies": ["OldestScalingConfiguration", "OldestInstance"],
        "group_deletion_protection": fleet.spec.environment == "prod",
    }


def schedule_args(fleet: Fleet) -> list[dict]:
    return [
        {
            "scheduled_task_name": s.name,
            "recurrence_type": "Cron",
            "recurrence_value": s.cron,
            "min_value": s.min,
            "max_value": s.max,
            "desired_capacity": s.desired if s.desired is not None else s.min,
            "launch_time": "2027-01-01T00:00Z",
            "recurrence_end_time": "2099-12-31T00:00Z",
            "task_enabled": True,
        }
        for s in fleet.spec.autoscaling.schedules
    ]


class Scaling(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        fleet: Fleet,
        switches,
        security_group_id,
        clb_id,
        listener,
        role_name: str,
        user_data: str,
        tags: dict,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpufleet:alicloud:Scaling", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec = fleet.spec
        self.group = alicloud.ess.ScalingGroup(
            f"{name}-group",
            scaling_group_name=f"{name}-group",
            vswitch_ids=[s.id for s in switches],
            loadbalancer_ids=[clb_id],
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[listener]),
            **group_args(fleet),
        )
        encoded = base64.b64encode(user_data.encode()).decode()
        self.configuration = alicloud.ess.ScalingConfiguration(
            f"{name}-config",
            scaling_group_id=self.group.id,
            scaling_configuration_name=f"{name}-config",
            instance_type=fleet.instance_type.type,
            image_id=fleet.image_id,
            security_group_id=security_group_id,
            internet_max_bandwidth_out=0,
            role_name=role_name,
            user_data=encoded,
            active=True,
            enable=True,
            force_delete=True,
            instance_name=f"{name}-node",
            tags=tags,
            opts=child,
            **disk_args(fleet),
            **spot_args(fleet),
        )
        a = spec.autoscaling
        for direction, adjustment, threshold, operator in (
            ("out", 1, a.scale_out_above, ">="),
            ("in", -1, a.scale_in_below, "<="),
        ):
            rule = alicloud.ess.ScalingRule(
                f"{name}-scale-{direction}",
                scaling_group_id=self.group.id,
                scaling_rule_name=f"{name}-scale-{direction}",
                scaling_rule_type="SimpleScalingRule",
                adjustment_type="QuantityChangeInCapacity",
                adjustment_value=adjustment,
                cooldown=a.cooldown_s,
                opts=child,
            )
            alicloud.ess.Alarm(
                f"{name}-scale-{direction}",
                name=f"{name}-scale-{direction}",
                scaling_group_id=self.group.id,
                alarm_actions=[rule.ari],
                metric_type="system",
                metric_name="CpuUtilization",
                statistics="Average",
                comparison_operator=operator,
                threshold=str(threshold),
                period=60,
                evaluation_count=a.evaluation_minutes,
                description=f"scale {direction} on CPU utilisation (ESS reads no GPU metric)",
                opts=child,
            )
        for args in schedule_args(fleet):
            alicloud.ess.ScheduledTask(
                f"{name}-schedule-{args['scheduled_task_name']}", scaling_group_id=self.group.id, opts=child, **args
            )
        if spec.billing.model in ("monthly", "yearly"):
            self._subscription_baseline(name, fleet, switches, security_group_id, role_name, encoded, tags)
        self.register_outputs({"scaling_group_id": self.group.id})

    def _subscription_baseline(self, name, fleet: Fleet, switches, security_group_id, role_name, encoded, tags):
        """ESS creates no subscription instances: the min replicas are PrePaid ECS attached to the group."""
        child = pulumi.ResourceOptions(parent=self)
        disks = disk_args(fleet)
        months = fleet.spec.billing.term_months
        nodes = []
        for i in range(fleet.spec.replicas.min):
            switch = switches[i % len(switches)]
            nodes.append(
                alicloud.ecs.Instance(
                    f"{name}-base-{i}",
                    instance_name=f"{name}-base-{i}",
                    instance_type=fleet.instance_type.type,
                    image_id=fleet.image_id,
                    vswitch_id=switch.id,
                    security_groups=[security_group_id],
                    internet_max_bandwidth_out=0,
                    role_name=role_name,
                    user_data=encoded,
                    instance_charge_type="PrePaid",
                    period=months if months < 12 else months // 12,
                    period_unit="Month" if months < 12 else "Year",
                    auto_renew_period=1,
                    renewal_status="AutoRenewal",
                    system_disk_category=disks["system_disk_category"],
                    system_disk_performance_level=disks["system_disk_performance_level"],
                    system_disk_size=disks["system_disk_size"],
                    data_disks=[{k: v for k, v in d.items()} for d in disks["data_disks"]],
                    tags=tags,
                    opts=child,
                )
            )
        alicloud.ess.Attachment(
            f"{name}-base",
            scaling_group_id=self.group.id,
            instance_ids=[n.id for n in nodes],
            force=True,
            entrusted=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.configuration]),
        )
