"""AS group across the zones behind the CLB listener, its launch configuration, scaling policies and schedules."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import pulumi
import tencentcloud_iac_pulumi as tencentcloud
from msgspec import Struct

from gpufleet import clock, cron
from gpufleet.components.tencentcloud import rules
from gpufleet.components.tencentcloud.checks import cron_to_utc8
from gpufleet.naming import Names
from gpufleet.registry import profile
from gpufleet.stacks.loader import Fleet
from gpufleet.stacks.rollout import DEFAULT_WEIGHT
from gpufleet.stacks.spec import Autoscaling, BillingSpec, Disks, Replicas


class ScalingArgs(Struct, frozen=True):
    """What one serving group's scaling uses (built by program.scaling_args): its spec's sections, the values the
    program resolved for it, and the outputs of the components declared before it."""

    names: Names
    prod: bool  # Pulumi protects prod's groups; prod's baseline nodes refuse termination by API
    replicas: Replicas
    autoscaling: Autoscaling
    billing: BillingSpec
    disks: Disks
    grace_period_s: int  # the load balancer health check's
    serving_port: int
    zones: tuple[str, ...]
    instance_type: str
    image_id: str
    charge: dict  # charge_args(fleet): the launch configuration's billing
    schedules: tuple[dict, ...]  # schedule_args(fleet)
    schedule_ignored: tuple[str, ...]  # schedule_ignored(fleet)
    user_data: str  # the node's user-data, Base64 (AS creates the configuration before the group: no group id in it)
    vpc_id: pulumi.Input[str]
    subnet_ids: Sequence[pulumi.Input[str]]  # one subnet per zone
    security_group_id: pulumi.Input[str]
    clb_id: pulumi.Input[str]
    listener_id: pulumi.Input[str]
    rule_id: pulumi.Input[str] | None  # the HTTPS listener's rule (load_balancer.tls), else None
    role_name: str  # the node role's
    tags: dict[str, str]
    # the per-node backend weight of the group's nodes at the listener (stacks/rollout.py; AS
    # ForwardLoadBalancers.TargetAttributes.Weight 0-100, rules.py; 0 = no requests)
    weight: int = DEFAULT_WEIGHT


def _utc8(when: datetime) -> str:
    """AS scheduled actions take times as YYYY-MM-DDThh:mm:ss+08:00 (as_schedule docs, rules.SCHEDULE_FORMAT)."""
    return when.astimezone(cron.zone(rules.CRON_ZONE_HOURS)).strftime("%Y-%m-%dT%H:%M:%S+08:00")


def disk_args(disks: Disks) -> dict:
    cats = profile("tencentcloud").disk_categories
    system, data = disks.system, disks.data
    return {
        "system_disk_type": cats[system.tier]["category"],
        "system_disk_size": system.size_gib,
        "data_disks": [{"disk_type": cats[data.tier]["category"], "disk_size": data.size_gib, "delete_with_instance": True}],
    }


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
    # deferred: keeps the cost package off the preview path
    from gpufleet.cost import catalog

    try:
        row = catalog.load("tencentcloud", fleet.spec.region).get(f"instance/{fleet.instance_type.type}", "payg")
    except (FileNotFoundError, KeyError, ValueError):
        return None
    return None if row is None or row.price is None else f"{row.price:.4f}"


def baseline_args(billing: BillingSpec) -> dict:
    """A subscribed (PREPAID) baseline node: the spec's term, renewed automatically."""
    return {
        "instance_charge_type": "PREPAID",
        "instance_charge_type_prepaid_period": billing.term_months,
        "instance_charge_type_prepaid_renew_flag": "NOTIFY_AND_AUTO_RENEW",
    }


def group_args(args: ScalingArgs) -> dict:
    """The group the schedules and the scaling policies act on: all nodes, or with spot over an on-demand base, the
    spot nodes above the base (the base is its own fixed-size group, base_group_args)."""
    r = args.replicas
    base, floor = base_size(args.billing), subscription_floor(args)
    return {
        "min_size": max(r.min - base - floor, 0),
        "max_size": r.max - base,
        "desired_capacity": max(r.desired_or_min - base - floor, 0),
        **_group_common(args),
    }


def subscription_floor(args: ScalingArgs) -> int:
    """With billing monthly / yearly: the replicas.min PREPAID CVMs attached to the group and protected from scale-in
    (_subscription_baseline). The group launches none of its own for them: its min_size and desired_capacity leave the
    floor out, so the floor is exactly replicas.min nodes (before, the group launched replicas.min pay-as-you-go nodes
    and the subscription nodes were attached as well: twice the floor, both billed). Attached instances count towards
    max_size; AS removes the nodes it created before attached ones and never a protected one (SetInstancesProtection:
    "实例设置保护之后，当发生不健康替换、报警策略、期望值变更等自动缩容时，将不对此实例缩容操作", tccli 3.1.189.1
    autoscaling v20180419)."""
    return args.replicas.min if args.billing.model in ("monthly", "yearly") else 0


def base_size(billing: BillingSpec) -> int:
    """Pay-as-you-go nodes of a spot fleet's on-demand base (billing.on_demand_base); 0 without spot."""
    return billing.base if billing.model == "spot" else 0


def base_group_args(args: ScalingArgs) -> dict:
    """The on-demand base of a spot fleet: a second AS group of exactly billing.on_demand_base pay-as-you-go nodes behind
    the same listener. The AS group of provider v1.82.42 has no mixed on-demand / spot allocation (no
    on_demand_base_capacity or instances-distribution argument in as/resource_tc_as_scaling_group.go), so the mix is two
    groups; nothing scales this one, the scaling policies and schedules act on the spot group."""
    base = base_size(args.billing)
    return {"min_size": base, "max_size": base, "desired_capacity": base, **_group_common(args)}


def _group_common(args: ScalingArgs) -> dict:
    return {
        "default_cooldown": args.autoscaling.cooldown_s,
        "multi_zone_subnet_policy": "EQUALITY",
        "health_check_type": "CLB",
        "lb_health_check_grace_period": args.grace_period_s,
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
    base = base_size(fleet.spec.billing)
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


def policy_args(a: Autoscaling) -> list[dict]:
    """AS scaling policies, out then in. metric cpu_utilization: AS's own CPU alarm decides. metric queue / kv_cache:
    the SCF scaler (autoscaler.py) executes them; their alarm can never hold (rules.NEVER_OUT / NEVER_IN), because a
    SIMPLE policy must carry one and AS reads no custom metric."""
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


def drain_command_args(timeout: int) -> dict:
    """The TAT command the INSTANCE_TERMINATING hook runs (as_lifecycle_hook lifecycle_command, provider v1.82.42):
    the image's drain, with the spec's drain time as the command's timeout. TAT needs its agent on the node (Tencent
    public images ship it; the golden image must keep it)."""
    return {"content": rules.DRAIN_COMMAND, "command_type": "SHELL", "timeout": timeout, "username": "root"}


def drain_hook_args(timeout: int) -> dict:
    return {
        "lifecycle_transition": "INSTANCE_TERMINATING",
        "default_result": "CONTINUE",
        "heartbeat_timeout": timeout,
    }


class Scaling(pulumi.ComponentResource):
    def __init__(self, name: str, args: ScalingArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:tencentcloud:Scaling", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        physical, tags = args.names, args.tags
        self._args = args
        balancer = [
            {
                "load_balancer_id": args.clb_id,
                "listener_id": args.listener_id,
                **({"rule_id": args.rule_id} if args.rule_id is not None else {}),
                "target_attributes": [{"port": args.serving_port, "weight": args.weight}],
            }
        ]
        self.configuration = self._config(f"{name}-config", args.charge)
        self.group = tencentcloud.as_.ScalingGroup(
            f"{name}-group",
            scaling_group_name=physical(f"{name}-group"),
            configuration_id=self.configuration.id,
            vpc_id=args.vpc_id,
            subnet_ids=list(args.subnet_ids),
            forward_balancer_ids=balancer,
            tags=tags,
            # AS groups have no deletion-protection argument in provider v1.82.42 (rules.GAPS): Pulumi protects prod's
            opts=pulumi.ResourceOptions(parent=self, protect=args.prod),
            **group_args(args),
        )
        named = [(f"{name}-group", self.group)]
        if base_size(args.billing):
            base_config = self._config(f"{name}-base-config", {"instance_charge_type": "POSTPAID_BY_HOUR"})
            self.base_group = tencentcloud.as_.ScalingGroup(
                f"{name}-base-group",
                scaling_group_name=physical(f"{name}-base-group"),
                configuration_id=base_config.id,
                vpc_id=args.vpc_id,
                subnet_ids=list(args.subnet_ids),
                forward_balancer_ids=balancer,
                tags=tags,
                opts=pulumi.ResourceOptions(parent=self, protect=args.prod),
                **base_group_args(args),
            )
            named.append((f"{name}-base-group", self.base_group))
        self.groups = [g for _, g in named]
        self.policies = {}
        for policy in policy_args(args.autoscaling):
            direction = policy.pop("direction")
            self.policies[direction] = tencentcloud.as_.ScalingPolicy(
                f"{name}-scale-{direction}",
                policy_name=physical(f"{name}-scale-{direction}"),
                scaling_group_id=self.group.id,
                opts=child,
                **policy,
            )
        ignored = list(args.schedule_ignored)
        for schedule in args.schedules:
            tencentcloud.as_.Schedule(
                f"{name}-schedule-{schedule['schedule_action_name']}",
                scaling_group_id=self.group.id,
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=ignored),
                **schedule,
            )
        timeout = args.autoscaling.drain_timeout_s
        command = tencentcloud.tat.Command(
            f"{name}-drain",
            command_name=physical(f"{name}-drain"),
            description="gpufleet: drain the node before AS removes it",
            tags=[{"key": k, "value": v} for k, v in args.tags.items()],
            # set at creation only: the provider refuses any later change of a TAT command's tags ("`tags` do not
            # support change now.", tat/resource_tc_tat_command.go update), which would fail every later `pulumi up`
            # of a fleet whose tags change (and the first one of a fleet deployed before the command had tags)
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["tags"])),
            **drain_command_args(timeout),
        )
        for group_name, group in named:
            tencentcloud.as_.LifecycleHook(
                f"{group_name}-drain",
                scaling_group_id=group.id,
                lifecycle_hook_name=physical(f"{group_name}-drain"),
                lifecycle_command={"command_id": command.id},
                opts=child,
                **drain_hook_args(timeout),
            )
        if args.billing.model in ("monthly", "yearly"):
            self._subscription_baseline(name, args)
        self.register_outputs({"scaling_group_id": self.group.id})

    def _config(self, name: str, charge: dict):
        args = self._args
        return tencentcloud.as_.ScalingConfig(
            name,
            configuration_name=args.names(name),
            instance_types=[args.instance_type],
            image_id=args.image_id,
            security_group_ids=[args.security_group_id],
            cam_role_name=args.role_name,
            user_data=args.user_data,
            internet_max_bandwidth_out=0,
            public_ip_assigned=False,
            enhanced_monitor_service=True,
            enhanced_security_service=True,
            keep_image_login=True,  # the golden image has no password: nodes get none (no random root password)
            instance_name_settings={"instance_name": args.names(f"{name.removesuffix('-config')}-node")},
            instance_tags=args.tags,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
            **disk_args(args.disks),
            **charge,
        )

    def _subscription_baseline(self, name: str, args: ScalingArgs) -> None:
        """The min replicas as PREPAID CVMs attached to the group and protected from scale-in; nodes above min are
        pay-as-you-go. (AS could start PREPAID nodes itself, but a node bought for a term and scaled in after a
        few hours is paid for the whole term.)"""
        child = pulumi.ResourceOptions(parent=self)
        disks = disk_args(args.disks)
        subnets = args.subnet_ids
        nodes = []
        for i in range(args.replicas.min):
            zone, subnet_id = args.zones[i % len(subnets)], subnets[i % len(subnets)]
            nodes.append(
                tencentcloud.instance.Instance(
                    f"{name}-base-{i}",
                    instance_name=args.names(f"{name}-base-{i}"),
                    availability_zone=zone,
                    instance_type=args.instance_type,
                    image_id=args.image_id,
                    vpc_id=args.vpc_id,
                    subnet_id=subnet_id,
                    orderly_security_groups=[args.security_group_id],
                    cam_role_name=args.role_name,
                    user_data=args.user_data,
                    allocate_public_ip=False,
                    internet_max_bandwidth_out=0,
                    system_disk_type=disks["system_disk_type"],
                    system_disk_size=disks["system_disk_size"],
                    data_disks=[
                        {
                            "data_disk_type": d["disk_type"],
                            "data_disk_size": d["disk_size"],
                            "delete_with_instance": True,
                            "encrypt": args.disks.encrypted,
                        }
                        for d in disks["data_disks"]
                    ],
                    keep_image_login=True,
                    disable_api_termination=args.prod,
                    tags=args.tags,
                    opts=child,
                    **baseline_args(args.billing),
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
