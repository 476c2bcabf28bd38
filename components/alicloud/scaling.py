"""ESS scaling group across the zones, its scaling configuration, rules, schedules and subscription baseline."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pulumi
import pulumi_alicloud as alicloud
from gpufleet.components.alicloud import rules
from gpufleet.components.registry import profile
from gpufleet.stacks.loader import Fleet

from gpufleet import clock, cron


def disk_args(fleet: Fleet) -> dict:
    cats = profile("alicloud").disk_categories
    system, data = fleet.spec.disks.system, fleet.spec.disks.data
    encrypted = fleet.spec.disks.encrypted  # with the account's default KMS key (no kms_key_id)
    return {
        "system_disk_category": cats[system.tier]["category"],
        "system_disk_performance_level": cats[system.tier]["performance_level"],
        "system_disk_size": system.size_gib,
        "system_disk_encrypted": encrypted,
        "data_disks": [
            {
                "category": cats[data.tier]["category"],
                "performance_level": cats[data.tier]["performance_level"],
                "size": data.size_gib,
                "delete_with_instance": True,
                "encrypted": encrypted,
            }
        ],
    }


def instance_hardening_args(fleet: Fleet) -> dict:
    """Subscription ECS instances: metadata only in token (IMDSv2-like) mode (http_tokens required). The ESS scaling
    configuration of pulumi-alicloud 4.0.0 has http_endpoint but no http_tokens, so pay-as-you-go nodes keep the
    default mode (a named gap, rules.GAPS)."""
    return {"http_endpoint": "enabled", "http_tokens": "required"}


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


def schedule_args(fleet: Fleet, now: datetime | None = None) -> list[dict]:
    """ESS scheduled tasks. launch_time is the cron's first firing after the run (at most 90 days ahead) and
    recurrence_end_time the end of the spec's window (at most 365 days after creation), both UTC in the formats
    of website/docs/r/ess_scheduled_task.html.markdown (rules.py)."""
    now = now or clock.now()
    out = []
    for s in fleet.spec.autoscaling.schedules:
        w = cron.window(s.cron, fleet.spec.autoscaling, now)
        out.append(
            {
                "scheduled_task_name": s.name,
                "recurrence_type": "Cron",
                "recurrence_value": s.cron,
                "min_value": s.min,
                "max_value": s.max,
                "desired_capacity": s.desired if s.desired is not None else s.min,
                "launch_time": w.first.astimezone(UTC).strftime(rules.LAUNCH_TIME_FORMAT),
                "recurrence_end_time": w.end.astimezone(UTC).strftime(rules.RECURRENCE_END_FORMAT),
                "task_enabled": True,
            }
        )
    return out


def schedule_ignored(fleet: Fleet) -> list[str]:
    """Dates kept as created: the first firing always (it only matters at creation); the window end unless the
    spec stores its start (then a new start in the spec renews it with `pulumi up`)."""
    stored = fleet.spec.autoscaling.schedule_window_start is not None
    return ["launch_time"] if stored else ["launch_time", "recurrence_end_time"]


def lifecycle_hook_args(fleet: Fleet) -> dict | None:
    """A new node waits in Pending:Wait (not yet added to the CLB, so not health-checked) until it reports ready
    with CompleteLifecycleAction or the spec's grace period ends, then joins (CONTINUE). ESS has no health-check
    grace period on the group (website/docs/r/ess_scaling_group.html.markdown); this is its equivalent
    (website/docs/r/ess_lifecycle_hook.html.markdown, heartbeat_timeout 30-21600 s). The node role may end the wait
    on this group only (role.policy_document)."""
    grace = fleet.spec.load_balancer.health_check.grace_period_s
    if not grace:
        return None
    return {"lifecycle_transition": "SCALE_OUT", "heartbeat_timeout": grace, "default_result": "CONTINUE"}


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
        ignored = schedule_ignored(fleet)
        for args in schedule_args(fleet):
            alicloud.ess.ScheduledTask(
                f"{name}-schedule-{args['scheduled_task_name']}",
                scaling_group_id=self.group.id,
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=ignored),
                **args,
            )
        hook = lifecycle_hook_args(fleet)
        if hook:
            alicloud.ess.LifecycleHook(
                f"{name}-loading", name=f"{name}-loading", scaling_group_id=self.group.id, opts=child, **hook
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
                    user_data=encoded,
                    instance_charge_type="PrePaid",
                    period=months,  # months: the provider takes 1-9, 12, 24, 36, 48, 60 with period_unit Month
                    period_unit="Month",
                    auto_renew_period=1,
                    renewal_status="AutoRenewal",
                    system_disk_category=disks["system_disk_category"],
                    system_disk_performance_level=disks["system_disk_performance_level"],
                    system_disk_size=disks["system_disk_size"],
                    system_disk_encrypted=disks["system_disk_encrypted"],
                    data_disks=[{k: v for k, v in d.items()} for d in disks["data_disks"]],
                    tags=tags,
                    # deletion_protection is for pay-as-you-go instances only (rules.GAPS): protect in prod instead
                    opts=pulumi.ResourceOptions(parent=self, protect=fleet.spec.environment == "prod"),
                    **instance_hardening_args(fleet),
                )
            )
        for i, node in enumerate(nodes):  # role_name on ecs.Instance is deprecated since provider 1.275.0
            alicloud.ecs.RamRoleAttachment(f"{name}-base-{i}-role", instance_id=node.id, ram_role_name=role_name, opts=child)
        alicloud.ess.Attachment(
            f"{name}-base",
            scaling_group_id=self.group.id,
            instance_ids=[n.id for n in nodes],
            force=True,
            entrusted=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.configuration]),
        )
