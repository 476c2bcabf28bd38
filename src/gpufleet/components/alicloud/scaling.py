"""ESS scaling group across the zones, its scaling configuration, rules, schedules and subscription baseline."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import pulumi
import pulumi_alicloud as alicloud
from msgspec import Struct

from gpufleet import clock, cron, naming
from gpufleet.components import userdata
from gpufleet.components.alicloud import rules
from gpufleet.images import scaling_signals
from gpufleet.naming import Names
from gpufleet.registry import profile
from gpufleet.stacks.loader import Fleet
from gpufleet.stacks.spec import Autoscaling, BillingSpec, Disks, Replicas


class ScalingArgs(Struct, frozen=True):
    """What one serving group's scaling uses (built by program.scaling_args): its spec's sections, the values the
    program resolved for it, and the outputs of the components declared before it."""

    names: Names
    region: str
    prod: bool  # deletion protection
    replicas: Replicas
    autoscaling: Autoscaling
    billing: BillingSpec
    disks: Disks
    grace_period_s: int  # the load balancer health check's: 0 = new nodes join without a loading wait
    serving_port: int
    image_id: str
    instance_types: tuple[str, ...]  # instance_types(fleet): the spec's type first
    schedules: tuple[dict, ...]  # schedule_args(fleet), one per autoscaling.schedules entry
    schedule_ignored: tuple[str, ...]  # schedule_ignored(fleet)
    switch_ids: Sequence[pulumi.Input[str]]  # one vSwitch per zone
    security_group_id: pulumi.Input[str]
    clb_id: pulumi.Input[str]
    listener: pulumi.Resource  # the group waits for the CLB listener
    role_name: str  # the node role's
    metrics_group_id: pulumi.Input[str]  # the CloudMonitor group the nodes publish their scaling metrics into
    user_data: Callable[[pulumi.Input[str]], pulumi.Output[str]]  # the node's user-data, given its scaling group's id
    tags: dict[str, str]
    # (VServer group id, per-node weight) when the group joins the listener through the load balancer's VServer group
    # (loadbalancer.weighted: a rollout's groups); None: the CLB's default server group, no weight
    backend: tuple[pulumi.Input[str], int] | None = None


def disk_args(disks: Disks) -> dict:
    cats = profile("alicloud").disk_categories
    system, data = disks.system, disks.data
    encrypted = disks.encrypted  # with the account's default KMS key (no kms_key_id)
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


def instance_hardening_args() -> dict:
    """Subscription ECS instances: metadata only in token (IMDSv2-like) mode (http_tokens required). The ESS scaling
    configuration of pulumi-alicloud 4.0.0 has http_endpoint but no http_tokens, so pay-as-you-go nodes keep the
    default mode (a named gap, rules.GAPS)."""
    return {"http_endpoint": "enabled", "http_tokens": "required"}


def instance_types(fleet: Fleet) -> list[str]:
    """The instance types the scaling configuration offers: the spec's, then (with spot) every catalog size with the same
    GPU kind and count, so ESS can pick among several spot pools. sizing fits the model per GPU kind and count, so each
    equivalent fits when the spec's type does (tests/test_scale_program.py checks each with plan fit); each must have a
    price in the region's cost catalog, so what is declared is priced."""
    primary = fleet.instance_type.type
    if fleet.spec.billing.model != "spot":
        return [primary]
    # deferred: read only when the pricing needs the catalog's types
    from gpufleet.stacks.catalog import instance_types as catalog_types

    priced = _priced_types(fleet.spec.region)
    same = [
        t.type
        for t in catalog_types("alicloud")
        if t.gpu == fleet.instance_type.gpu and t.gpus == fleet.instance_type.gpus and t.type != primary and t.type in priced
    ]
    return [primary, *same][: rules.SPOT_POOLS_MAX]


def _priced_types(region: str) -> set[str]:
    # deferred: keeps the cost package off the preview path
    from gpufleet.cost import catalog

    try:
        rows = catalog.load("alicloud", region)
    except (FileNotFoundError, KeyError, ValueError):
        return set()
    out = set()
    for key in rows.keys() if hasattr(rows, "keys") else ():
        if key.startswith("instance/"):
            row = rows.get(key, "payg")
            if row is not None and row.price is not None:
                out.add(key.removeprefix("instance/"))
    return out


def spot_args(args: ScalingArgs) -> dict:
    billing = args.billing
    if billing.model != "spot":
        return {"spot_strategy": "NoSpot"}
    if billing.spot_price_limit is None:
        return {"spot_strategy": "SpotAsPriceGo"}
    return {
        "spot_strategy": "SpotWithPriceLimit",
        "spot_price_limits": [{"instance_type": itype, "price_limit": billing.spot_price_limit} for itype in args.instance_types],
    }


def type_args(args: ScalingArgs) -> dict:
    """One instance type, or several (instance_types) for spot pools; the provider takes one or the other."""
    types = list(args.instance_types)
    return {"instance_type": types[0]} if len(types) == 1 else {"instance_types": types}


def mix_args(args: ScalingArgs) -> dict:
    """Spot with an on-demand base (website/docs/r/ess_scaling_group.html.markdown: on_demand_base_capacity,
    on_demand_percentage_above_base_capacity, spot_instance_pools and spot_instance_remedy are valid only with
    multi_az_policy COST_OPTIMIZED, which is ForceNew). ESS keeps the base pay-as-you-go and replaces a reclaimed
    spot node before it goes (spot_instance_remedy)."""
    billing = args.billing
    if billing.model != "spot":
        return {}
    return {
        "on_demand_base_capacity": billing.base,
        "on_demand_percentage_above_base_capacity": billing.above_base_percent,
        "spot_instance_pools": len(args.instance_types),
        "spot_instance_remedy": True,
    }


def group_args(args: ScalingArgs) -> dict:
    r = args.replicas
    return {
        "min_size": r.min,
        "max_size": r.max,
        "desired_capacity": r.desired_or_min,
        "default_cooldown": args.autoscaling.cooldown_s,
        "multi_az_policy": "COST_OPTIMIZED" if args.billing.model == "spot" else "BALANCE",
        "health_check_types": ["ECS", "LOAD_BALANCER"],
        "removal_policies": ["OldestScalingConfiguration", "OldestInstance"],
        "group_deletion_protection": args.prod,
        **mix_args(args),
    }


def schedule_args(fleet: Fleet, now: datetime | None = None) -> list[dict]:
    """ESS scheduled tasks. launch_time is the cron's first firing after the run (at most 90 days ahead) and
    recurrence_end_time the end of the spec's window (at most 365 days after creation), both UTC in the API's
    YYYY-MM-DDThh:mmZ (rules.LAUNCH_TIME_FORMAT, rules.RECURRENCE_END_FORMAT: the sources are there)."""
    now = now or clock.now()
    out = []
    for s in fleet.spec.autoscaling.schedules:
        w = cron.window(s.cron, fleet.spec.autoscaling, now)
        out.append(
            {
                "scheduled_task_name": scheduled_task_name(fleet, s.name),
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


def scheduled_task_name(fleet: Fleet, schedule: str) -> str:
    """<group base>-<schedule name>, unique in the region and account. The API takes 64 characters
    (rules.SCHEDULED_TASK_NAME_MAX), which the 32 of the base, the hyphen and a schedule name of up to 31 never pass;
    a longer one would be cut and ended with a digest of the whole, so it stays unique."""
    return naming.fit(f"{naming.group_base(fleet.spec)}-{schedule}", rules.SCHEDULED_TASK_NAME_MAX)


def schedule_ignored(fleet: Fleet) -> list[str]:
    """Dates kept as created: the first firing always (it only matters at creation); the window end unless the
    spec stores its start (then a new start in the spec renews it with `pulumi up`)."""
    stored = fleet.spec.autoscaling.schedule_window_start is not None
    return ["launch_time"] if stored else ["launch_time", "recurrence_end_time"]


def lifecycle_hook_args(grace: int) -> dict | None:
    """A new node waits in Pending:Wait (not yet added to the CLB, so not health-checked) until it reports ready
    with CompleteLifecycleAction or the spec's grace period ends, then joins (CONTINUE). ESS has no health-check
    grace period on the group (website/docs/r/ess_scaling_group.html.markdown); this is its equivalent
    (website/docs/r/ess_lifecycle_hook.html.markdown, heartbeat_timeout 30-21600 s). The node role may end the wait
    on this group only (role.policy_document)."""
    if not grace:
        return None
    return {"lifecycle_transition": "SCALE_OUT", "heartbeat_timeout": grace, "default_result": "CONTINUE"}


def alarm_args(a: Autoscaling) -> list[dict]:
    """ESS event-triggered tasks, scale out then scale in (website/docs/r/ess_alarm.html.markdown).

    metric queue / kv_cache: custom metrics the nodes publish into the fleet's CloudMonitor group under the dimension
    of their scaling group (images/data/scaling_metrics.yaml); the statistic is the average over the nodes'
    reports, so thresholds are per node. Scale out when the chosen signal is above its threshold; scale in only when
    the queue and the KV cache are both low (two expressions joined by &&). metric cpu_utilization: ESS's system
    metric CpuUtilization, as before. The group ids are filled in by the component."""
    if a.metric == "cpu_utilization":
        return [
            {
                "direction": direction,
                "metric_type": "system",
                "metric_name": "CpuUtilization",
                "statistics": "Average",
                "comparison_operator": operator,
                "threshold": str(threshold),
                "period": 60,
                "evaluation_count": count,
                "description": f"scale {direction} on CPU utilisation (autoscaling.metric: cpu_utilization)",
            }
            for direction, threshold, operator, count in (
                ("out", a.scale_out_above, ">=", a.evaluation_minutes),
                ("in", a.scale_in_below, "<=", a.scale_in_evaluation_minutes),
            )
        ]
    sig = scaling_signals.load()
    out_threshold = getattr(a, a.metric).scale_out_above
    scale_out = {
        "direction": "out",
        "metric_type": "custom",
        "metric_name": sig.name(a.metric),
        "statistics": "Average",
        "comparison_operator": ">",
        "threshold": f"{out_threshold:g}",
        "period": sig.period_s,
        "evaluation_count": a.evaluation_minutes,
        "description": f"scale out: {sig.name(a.metric)} per node above {out_threshold:g} (autoscaling.metric: {a.metric})",
    }
    scale_in = {
        "direction": "in",
        "metric_type": "custom",
        "expressions": [
            {
                "metric_name": sig.name(key),
                "statistics": "Average",
                "comparison_operator": "<",
                "threshold": float(getattr(a, key).scale_in_below),
                "period": sig.period_s,
            }
            for key in ("queue", "kv_cache")
        ],
        "expressions_logic_operator": "&&",
        "evaluation_count": a.scale_in_evaluation_minutes,
        "description": f"scale in: waiting below {a.queue.scale_in_below:g} and KV cache below "
        f"{a.kv_cache.scale_in_below:g}% per node",
    }
    return [scale_out, scale_in]


def drain_hook_args(timeout: int) -> dict:
    """A node leaving the group (scale-in, or replaced after a spot reclaim notice) waits in Removing:Wait while OOS's
    public template ACS-ESS-LifeCycleRunCommand runs the image's drain command through Cloud Assistant and then
    completes the lifecycle action; the hook's timeout is the spec's drain time (ess_lifecycle_hook: heartbeat_timeout
    30-21600 s, notification_arn of an OOS template; template parameters: help.aliyun.com/zh/oos/user-guide/
    acs-ess-lifecycleruncommand, read 2026-12-03). The OOS role and template ARN need the account id; the component
    fills them in."""
    return {
        "lifecycle_transition": "SCALE_IN",
        "heartbeat_timeout": timeout,
        "default_result": "CONTINUE",
        "metadata": {
            "commandType": "RunShellScript",
            "commandContent": rules.DRAIN_COMMAND,
            "timeout": timeout,
            "lifecycleActionResult": "CONTINUE",
            "regionId": "${regionId}",
            "instanceIds": ["${instanceIds}"],
            "lifecycleHookId": "${lifecycleHookId}",
            "lifecycleActionToken": "${lifecycleActionToken}",
        },
    }


def vserver_args(port: int, clb_id, server_group_id, weight: int) -> dict:
    """The group's nodes in the listener's VServer group on the serving port with the group's per-node weight
    (stacks/rollout.py: 0 = no requests; AttachVServerGroups VServerGroupAttributes.Weight 0-100, rules.py)."""
    return {
        "loadbalancer_id": clb_id,
        "vserver_attributes": [{"vserver_group_id": server_group_id, "port": port, "weight": weight}],
    }


def group_number(value: str):
    """CloudMonitor group ids are numbers and ess.Alarm's cloud_monitor_group_id is an int in the provider schema;
    a placeholder id (the offline preview's mock engine) passes through as text."""
    return int(value) if str(value).isdigit() else value


class Scaling(pulumi.ComponentResource):
    def __init__(self, name: str, args: ScalingArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:alicloud:Scaling", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        physical, tags, backend = args.names, args.tags, args.backend
        self.group = alicloud.ess.ScalingGroup(
            f"{name}-group",
            scaling_group_name=physical(f"{name}-group"),
            vswitch_ids=list(args.switch_ids),
            loadbalancer_ids=None if backend else [args.clb_id],
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[args.listener]),
            **group_args(args),
        )
        if backend:
            server_group_id, weight = backend
            alicloud.ess.ScalingGroupVServerGroups(
                f"{name}-backend",
                scaling_group_id=self.group.id,
                vserver_groups=[vserver_args(args.serving_port, args.clb_id, server_group_id, weight)],
                force=True,  # nodes already in the group join (and leave on detach) the VServer group
                # not after the listener: on a fleet's first rollout the nodes join the VServer group while the listener
                # moves to it, before the group leaves the default server group (it waits for the listener)
                opts=child,
            )
        # the node learns its scaling group and the metrics group from its environment (components/userdata.py)
        encoded = userdata.base64_output(args.user_data(self.group.id))
        self.configuration = alicloud.ess.ScalingConfiguration(
            f"{name}-config",
            scaling_group_id=self.group.id,
            scaling_configuration_name=physical(f"{name}-config"),
            image_id=args.image_id,
            security_group_id=args.security_group_id,
            internet_max_bandwidth_out=0,
            role_name=args.role_name,
            user_data=encoded,
            active=True,
            enable=True,
            force_delete=True,
            instance_name=physical(f"{name}-node"),
            tags=tags,
            opts=child,
            **type_args(args),
            **disk_args(args.disks),
            **spot_args(args),
        )
        a = args.autoscaling
        sig = scaling_signals.load()
        for alarm in alarm_args(a):
            direction = alarm.pop("direction")
            rule = alicloud.ess.ScalingRule(
                f"{name}-scale-{direction}",
                scaling_group_id=self.group.id,
                scaling_rule_name=physical(f"{name}-scale-{direction}"),
                scaling_rule_type="SimpleScalingRule",
                adjustment_type="QuantityChangeInCapacity",
                adjustment_value=1 if direction == "out" else -1,
                cooldown=a.cooldown_s,
                opts=child,
            )
            custom = {}
            if alarm["metric_type"] == "custom":
                custom = {
                    "cloud_monitor_group_id": pulumi.Output.from_input(args.metrics_group_id).apply(group_number),
                    "dimensions": {sig.dimension: self.group.id},
                }
            alicloud.ess.Alarm(
                f"{name}-scale-{direction}",
                name=physical(f"{name}-scale-{direction}"),
                scaling_group_id=self.group.id,
                alarm_actions=[rule.ari],
                opts=child,
                **alarm,
                **custom,
            )
        ignored = list(args.schedule_ignored)
        for s, task in zip(a.schedules, args.schedules, strict=True):
            alicloud.ess.ScheduledTask(
                f"{name}-schedule-{s.name}",
                scaling_group_id=self.group.id,
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=ignored),
                **task,
            )
        hook = lifecycle_hook_args(args.grace_period_s)
        if hook:
            alicloud.ess.LifecycleHook(
                f"{name}-loading", name=physical(f"{name}-loading"), scaling_group_id=self.group.id, opts=child, **hook
            )
        self._drain_hook(name, args)

        if args.billing.model in ("monthly", "yearly"):
            self._subscription_baseline(name, args, encoded)
        self.register_outputs({"scaling_group_id": self.group.id})

    def _drain_hook(self, name: str, args: ScalingArgs) -> None:
        """The SCALE_IN hook that runs the drain command (drain_hook_args), and the RAM role OOS assumes for it: Cloud
        Assistant on this account's instances and CompleteLifecycleAction on this group only (the policy the template
        documents, scoped to the group)."""
        child = pulumi.ResourceOptions(parent=self)
        physical = args.names
        hook = drain_hook_args(args.autoscaling.drain_timeout_s)
        account = alicloud.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        region = args.region
        role = alicloud.ram.Role(
            f"{name}-drain",
            role_name=physical(f"{name}-drain"),
            assume_role_policy_document=json.dumps(oos_trust_document()),
            description="gpufleet: OOS runs the drain command on nodes leaving the scaling group",
            tags=args.tags,
            opts=child,
        )
        policy = alicloud.ram.Policy(
            f"{name}-drain",
            policy_name=physical(f"{name}-drain"),
            policy_document=pulumi.Output.json_dumps(oos_policy_document(region, self.group.id)),
            tags=args.tags,
            opts=child,
        )
        alicloud.ram.RolePolicyAttachment(
            f"{name}-drain", role_name=role.role_name, policy_name=policy.policy_name, policy_type="Custom", opts=child
        )
        metadata = pulumi.Output.all(role.role_name, hook["metadata"]).apply(
            lambda v: json.dumps({**v[1], "OOSAssumeRole": v[0]}, sort_keys=True)
        )
        alicloud.ess.LifecycleHook(
            f"{name}-drain",
            name=physical(f"{name}-drain"),
            scaling_group_id=self.group.id,
            lifecycle_transition=hook["lifecycle_transition"],
            heartbeat_timeout=hook["heartbeat_timeout"],
            default_result=hook["default_result"],
            notification_arn=account.apply(lambda a: f"acs:oos:{region}:{a}:template/{rules.DRAIN_TEMPLATE}"),
            notification_metadata=metadata,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role]),
        )

    def _subscription_baseline(self, name: str, args: ScalingArgs, encoded) -> None:
        """ESS creates no subscription instances: the min replicas are PrePaid ECS attached to the group."""
        child = pulumi.ResourceOptions(parent=self)
        physical = args.names
        disks = disk_args(args.disks)
        months = args.billing.term_months
        nodes = []
        for i in range(args.replicas.min):
            switch_id = args.switch_ids[i % len(args.switch_ids)]
            nodes.append(
                alicloud.ecs.Instance(
                    f"{name}-base-{i}",
                    instance_name=physical(f"{name}-base-{i}"),
                    instance_type=args.instance_types[0],
                    image_id=args.image_id,
                    vswitch_id=switch_id,
                    security_groups=[args.security_group_id],
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
                    tags=args.tags,
                    # deletion_protection is for pay-as-you-go instances only (rules.GAPS): protect in prod instead
                    opts=pulumi.ResourceOptions(parent=self, protect=args.prod),
                    **instance_hardening_args(),
                )
            )
        for i, node in enumerate(nodes):  # role_name on ecs.Instance is deprecated since provider 1.275.0
            alicloud.ecs.RamRoleAttachment(f"{name}-base-{i}-role", instance_id=node.id, ram_role_name=args.role_name, opts=child)
        alicloud.ess.Attachment(
            f"{name}-base",
            scaling_group_id=self.group.id,
            instance_ids=[n.id for n in nodes],
            force=True,
            # not entrusted: ESS AttachInstances refuses Entrusted for subscription instances ("You cannot specify this
            # parameter for subscription instances", alibabacloud_ess20220222 1.13.3 AttachInstancesRequest.entrusted)
            entrusted=False,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.configuration]),
        )


def oos_trust_document() -> dict:
    return {
        "Version": "1",
        "Statement": [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": ["oos.aliyuncs.com"]}}],
    }


def oos_policy_document(region: str, group_id) -> dict:
    """What ACS-ESS-LifeCycleRunCommand needs (its documented policy), CompleteLifecycleAction scoped to this group."""
    return {
        "Version": "1",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["ecs:RunCommand", "ecs:DescribeInvocations", "ecs:DescribeInvocationResults"],
                "Resource": ["*"],
            },
            {
                "Effect": "Allow",
                "Action": ["ess:CompleteLifecycleAction"],
                "Resource": [pulumi.Output.concat("acs:ess:", region, ":*:scalinggroup/", group_id)],
            },
        ],
    }
