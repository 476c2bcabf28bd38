"""The Alibaba Cloud provider contract: what terraform-provider-alicloud accepts for every argument the program sends.

Source: aliyun/terraform-provider-alicloud, read at commit 81c43b6 (CHANGELOG 1.290.0 unreleased, 2026-08-21),
`alicloud/resource_alicloud_<resource>.go` (schema ValidateFunc) and `website/docs/r/<resource>.html.markdown`.
The locked pulumi-alicloud 4.0.0's own `provider/go.mod` is not in the stored index (its newest stored
snapshot pins v1.285.0; the installed SDK's docstrings name features up to v1.295.0), so the schema read is
the nearest stored one at or after the SDK's documented features; tests/contract/test_docstrings.py checks the
recorded values against the installed SDK's own "Valid values" lists as a second source.
Checked: 2026-12-03.
"""

from __future__ import annotations

from gpufleet.contract import Rule
from gpufleet.registry import profile

REPO = "aliyun/terraform-provider-alicloud@81c43b6"


def go(resource: str) -> str:
    return f"{REPO} alicloud/resource_alicloud_{resource}.go"


def doc(resource: str) -> str:
    return f"{REPO} website/docs/r/{resource}.html.markdown"


LISTENER = "alicloud:slb/listener:Listener"
CLB = "alicloud:slb/applicationLoadBalancer:ApplicationLoadBalancer"
GROUP = "alicloud:ess/scalingGroup:ScalingGroup"
CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
RULE = "alicloud:ess/scalingRule:ScalingRule"
ALARM = "alicloud:ess/alarm:Alarm"
TASK = "alicloud:ess/scheduledTask:ScheduledTask"
HOOK = "alicloud:ess/lifecycleHook:LifecycleHook"
EIP = "alicloud:ecs/eipAddress:EipAddress"
NAT = "alicloud:vpc/natGateway:NatGateway"
SG = "alicloud:ecs/securityGroup:SecurityGroup"
SG_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
ECS = "alicloud:ecs/instance:Instance"
TEMPLATE = "alicloud:cms/metricRuleTemplate:MetricRuleTemplate"
TAG_GROUP = "alicloud:cms/dynamicTagGroup:DynamicTagGroup"
RAM_ATTACH = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
RAM_POLICY = "alicloud:ram/policy:Policy"
RAM_ROLE = "alicloud:ram/role:Role"
ROLE_ATTACH = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"
MONITOR_GROUP = "alicloud:cms/monitorGroup:MonitorGroup"

# Documented limits the program derives values from (one place).
LAUNCH_TIME_MAX_DAYS = 90  # ess_scheduled_task.html.markdown: launch_time "not later than 90 days from the date of creation"
RECURRENCE_END_MAX_DAYS = 365  # ... recurrence_end_time "not later than 365 days from the date of scheduled task creation"
LAUNCH_TIME_FORMAT = "%Y-%m-%dT%H:%MZ"  # "YYYY-MM-DDThh:mmZ", UTC
# RecurrenceEndTime (review B3): the provider page says "YYYY-MM-DDThh:mm:ssZ" (ess_scheduled_task.html.markdown and the
# pulumi-alicloud 4.0.0 docstring from it); the API reference says "in the YYYY-MM-DDThh:mmZ format"
# (alibabacloud_ess20220222 1.13.3 CreateScheduledTask and ModifyScheduledTask RecurrenceEndTime). The provider passes
# the string through (request.RecurrenceEndTime = v.(string)). What the real API took: the provider's acceptance tests,
# which run against it, send hh:mmZ: alicloud/resource_alicloud_ess_scheduled_task_test.go @11bca00
# TestAccAliCloudEssScheduledTask_basic, "recurrence_end_time": time.Now().Add(oneDay).Format("2006-01-02T15:04Z")
# (checked CHECKSET; the same in the older copy @018de50), as do the examples found (a Terraform tutorial's
# recurrence_end_time = "2022-01-22T11:37Z"). No test or example sends the :ss form. So the program sends, and the rule
# takes, the API's YYYY-MM-DDThh:mmZ (it sent ...T00:00:00Z before). Searched 2026-12-06.
RECURRENCE_END_FORMAT = "%Y-%m-%dT%H:%MZ"  # "YYYY-MM-DDThh:mmZ", UTC
RECURRENCE_END_SOURCE = (
    "alibabacloud_ess20220222 1.13.3 CreateScheduledTask RecurrenceEndTime (YYYY-MM-DDThh:mmZ, UTC, at most 365 days "
    "after creation; the form the provider's acceptance tests send, alicloud/resource_alicloud_ess_scheduled_task_test.go "
    '@11bca00 Format("2006-01-02T15:04Z"); the provider page\'s hh:mm:ssZ is not what the API documents)'
)
# ESS CreateScheduledTask ScheduledTaskName "must be 2 to 64 characters in length" (alibabacloud_ess20220222 1.13.3;
# name_scopes.yaml says the same). The provider page says "2-40 characters" (ess_scheduled_task.html.markdown, and the
# pulumi-alicloud 4.0.0 docstring from it), but its schema validates nothing: `scheduled_task_name` has no ValidateFunc
# in the stored alicloud/resource_alicloud_ess_scheduled_task.go copies (@04bf133 and a later one with scaling_group_id,
# min_value; read 2026-12-06), so a 41-64 character name reaches the API, which takes it (review B2: it was cut to 40).
SCHEDULED_TASK_NAME_MAX = 64
CRON_ZONE_HOURS = 0  # recurrence_value Cron "is written in UTC"
# User data, raw (before Base64), review B1: the two APIs the nodes' user data goes to say 32 KB:
# alibabacloud_ess20220222 1.13.3 CreateScalingConfiguration UserData "The raw data can be up to 32 KB in size";
# alibabacloud_ecs20140526 7.11.8 RunInstances UserData "cannot exceed 32 KB before Base64 encoding". The provider checks
# no size: `user_data` has no ValidateFunc in alicloud/resource_alicloud_ess_scaling_configuration.go (stored copy
# @007b070, a recent one: instance_pattern_info, network_interfaces) nor in alicloud/resource_alicloud_instance.go
# (stored @00f9da0), and the installed pulumi-alicloud 4.0.0 docstrings of ess.ScalingConfiguration and ecs.Instance
# user_data state none (read 2026-12-06). The 16 KB read before was the launch template page's, an API the program
# does not call.
USER_DATA_MAX_BYTES = 32768
DISK_CATEGORIES_ESS = ("cloud", "ephemeral_ssd", "cloud_ssd", "cloud_essd", "cloud_efficiency", "cloud_essd_xc1")
PERFORMANCE_LEVELS = ("PL0", "PL1", "PL2", "PL3")
SPOT_POOLS_MAX = 10  # resource_alicloud_ess_scaling_group.go: spot_instance_pools IntBetween(1, 10)
# ess.Alarm refuses these dimension keys: ESS fills them itself (alicloud/extension_ess.go UserId, ScalingGroup;
# resource_alicloud_ess_alarm.go create/update: "Invalide dimension keys"); tests check scaling_metrics.yaml's key.
ALARM_RESERVED_DIMENSIONS = ("userId", "scaling_group")
ALARM_DIMENSION_SOURCE = f"{REPO} alicloud/extension_ess.go + alicloud/resource_alicloud_ess_alarm.go"
# Draining a node that leaves the group: the image's drain command (images/, issue 18), run by OOS's public template.
DRAIN_COMMAND = "/usr/local/bin/gpufleet-drain"
DRAIN_TEMPLATE = "ACS-ESS-LifeCycleRunCommand"
CREATE_ALARM_API = (
    "https://www.alibabacloud.com/help/en/auto-scaling/developer-reference/api-ess-2014-08-28-createalarm "
    "(ExpressionsLogicOperator: && or ||)"
)


# The API member each type's user_data becomes (each says 32 KB raw). Cited as `<package> <version> <Action> <Field>`,
# not `==`: the text's 32 KB is the raw size and the rule checks the Base64 sent (as the VPC mask rules below), which
# the coverage check cannot compare (api_map.yaml waives it; tests/contract/test_names.py reads the 32 KB).
USER_DATA_SOURCE = {
    CONFIG: "alibabacloud_ess20220222 1.13.3 CreateScalingConfiguration UserData",
    ECS: "alibabacloud_ecs20140526 7.11.8 RunInstances UserData",
}
USER_DATA_DOC = (
    f"{USER_DATA_SOURCE[CONFIG]} and {USER_DATA_SOURCE[ECS]} (32 KB before Base64; the provider's user_data has no validator)"
)
USER_DATA_MAX_BASE64 = -(-USER_DATA_MAX_BYTES // 3) * 4  # 43692 characters
ESSD_MIN_GIB = {"PL2": 461, "PL3": 1261}  # smallest ESSD of each performance level
ESSD_DOC = "https://www.alibabacloud.com/help/en/ecs/user-guide/essds (capacity range per performance level)"


def _hc(spec):
    return spec.load_balancer.health_check


def _level(tier: str) -> str | None:
    """The ESSD performance level the program sends for a spec disk tier (the cloud profile's disk categories)."""

    return profile("alicloud").disk_categories[tier].get("performance_level")


RULES: tuple[Rule, ...] = (
    # --- slb.Listener (resource_alicloud_slb_listener.go)
    Rule(LISTENER, "protocol", "one_of", go("slb_listener"), values=("http", "https", "tcp", "udp")),
    Rule(LISTENER, "scheduler", "one_of", go("slb_listener"), values=("wrr", "wlc", "rr", "sch", "tch", "qch")),
    Rule(LISTENER, "sticky_session", "one_of", go("slb_listener"), values=("on", "off")),
    Rule(LISTENER, "health_check", "one_of", go("slb_listener"), values=("on", "off")),
    Rule(LISTENER, "acl_status", "one_of", go("slb_listener"), values=("on", "off")),
    Rule(LISTENER, "acl_type", "one_of", go("slb_listener"), values=("black", "white")),
    Rule(LISTENER, "health_check_type", "one_of", go("slb_listener"), values=("tcp", "http")),
    Rule(
        LISTENER, "health_check_http_code", "one_of", go("slb_listener"), values=("http_2xx", "http_3xx", "http_4xx", "http_5xx")
    ),
    Rule(LISTENER, "bandwidth", "one_of", go("slb_listener") + " (-1 or 1-1000)", values=(-1, *range(1, 1001))),
    Rule(LISTENER, "frontend_port", "between", go("slb_listener"), low=1, high=65535, spec="fleet.load_balancer.listener_port"),
    Rule(LISTENER, "backend_port", "between", go("slb_listener"), low=1, high=65535, spec="fleet.serving.port"),
    Rule(LISTENER, "health_check_connect_port", "between", go("slb_listener"), low=0, high=65535, spec="fleet.serving.port"),
    Rule(
        LISTENER,
        "health_check_uri",
        "length",
        go("slb_listener"),
        low=1,
        high=80,
        spec="fleet.load_balancer.health_check.path",
        of_spec=lambda s: _hc(s).path,
    ),
    Rule(
        LISTENER,
        "health_check_interval",
        "between",
        go("slb_listener"),
        low=1,
        high=50,
        spec="fleet.load_balancer.health_check.interval_s",
        of_spec=lambda s: _hc(s).interval_s,
    ),
    Rule(
        LISTENER,
        "health_check_timeout",
        "between",
        go("slb_listener"),
        low=1,
        high=300,
        spec="fleet.load_balancer.health_check.timeout_s",
        of_spec=lambda s: _hc(s).timeout_s,
    ),
    Rule(
        LISTENER,
        "healthy_threshold",
        "between",
        go("slb_listener"),
        low=1,
        high=10,
        spec="fleet.load_balancer.health_check.healthy_threshold",
        of_spec=lambda s: _hc(s).healthy_threshold,
    ),
    Rule(
        LISTENER,
        "unhealthy_threshold",
        "between",
        go("slb_listener"),
        low=1,
        high=10,
        spec="fleet.load_balancer.health_check.unhealthy_threshold",
        of_spec=lambda s: _hc(s).unhealthy_threshold,
    ),
    Rule(
        LISTENER,
        "request_timeout",
        "between",
        go("slb_listener") + "; " + doc("slb_listener"),
        low=1,
        high=180,
        spec="fleet.load_balancer.request_timeout_s",
        of_spec=lambda s: s.load_balancer.request_timeout_s,
    ),
    Rule(LISTENER, "idle_timeout", "between", go("slb_listener"), low=1, high=60),
    Rule(
        LISTENER,
        "acl_status",
        "requires",
        doc("slb_listener") + " (acl_type is required when acl_status is on)",
        others=("acl_type",),
        when={"acl_status": "on"},
    ),
    Rule(LISTENER, "acl_id", "deprecated", doc("slb_listener"), note="deprecated since provider 1.249.0: use acl_ids"),
    # HTTPS (load_balancer.tls; docs/tls.md)
    Rule(
        LISTENER,
        "tls_cipher_policy",
        "one_of",
        go("slb_listener"),
        values=("tls_cipher_policy_1_0", "tls_cipher_policy_1_1", "tls_cipher_policy_1_2", "tls_cipher_policy_1_2_strict"),
        spec="fleet.load_balancer.tls.cipher_policy",
    ),
    Rule(
        LISTENER,
        "protocol",
        "requires",
        doc("slb_listener") + " (server_certificate_id: required when protocol is https)",
        others=("server_certificate_id",),
        when={"protocol": "https"},
        spec="fleet.load_balancer.tls.certificate_id",
    ),
    Rule(LISTENER, "listener_forward", "one_of", go("slb_listener"), values=("on", "off")),
    Rule(LISTENER, "forward_port", "between", go("slb_listener"), low=1, high=65535, spec="fleet.load_balancer.listener_port"),
    Rule(
        LISTENER,
        "listener_forward",
        "requires",
        doc("slb_listener") + " (forward_port: the HTTPS listener an HTTP listener with listener_forward on redirects to)",
        others=("forward_port",),
        when={"listener_forward": "on"},
    ),
    Rule(CLB, "delete_protection", "one_of", go("slb_load_balancer"), values=("on", "off")),
    # metadata in token mode on the subscription instances (the ESS scaling configuration has no http_tokens: GAPS)
    Rule(ECS, "http_tokens", "one_of", go("instance"), values=("optional", "required")),
    Rule(ECS, "http_endpoint", "one_of", go("instance"), values=("enabled", "disabled")),
    # --- slb.ApplicationLoadBalancer (resource_alicloud_slb_load_balancer.go)
    Rule(
        CLB, "address_type", "one_of", go("slb_load_balancer"), values=("internet", "intranet"), spec="fleet.load_balancer.public"
    ),
    Rule(CLB, "instance_charge_type", "one_of", go("slb_load_balancer"), values=("PayBySpec", "PayByCLCU")),
    Rule(CLB, "internet_charge_type", "one_of", go("slb_load_balancer"), values=("PayByBandwidth", "PayByTraffic")),
    Rule(
        CLB,
        "vswitch_id",
        "required",
        doc("slb_load_balancer") + " (an intranet CLB needs its vSwitch)",
        when={"address_type": "intranet"},
    ),
    # --- ess.ScalingGroup (resource_alicloud_ess_scaling_group.go)
    Rule(GROUP, "min_size", "between", go("ess_scaling_group"), low=0, high=2000, spec="fleet.replicas.min"),
    Rule(GROUP, "max_size", "between", go("ess_scaling_group"), low=0, high=2000, spec="fleet.replicas.max"),
    Rule(GROUP, "desired_capacity", "between", go("ess_scaling_group"), low=0, high=2000, spec="fleet.replicas.desired"),
    Rule(GROUP, "default_cooldown", "between", go("ess_scaling_group"), low=0, high=86400, spec="fleet.autoscaling.cooldown_s"),
    Rule(
        GROUP,
        "multi_az_policy",
        "one_of",
        go("ess_scaling_group"),
        values=("PRIORITY", "BALANCE", "COST_OPTIMIZED", "COMPOSABLE"),
    ),
    Rule(GROUP, "health_check_types", "one_of", doc("ess_scaling_group"), values=("ECS", "NONE", "LOAD_BALANCER")),
    Rule(GROUP, "health_check_types", "conflicts", go("ess_scaling_group"), others=("health_check_type",)),
    Rule(
        GROUP,
        "removal_policies",
        "one_of",
        doc("ess_scaling_group"),
        values=("OldestInstance", "NewestInstance", "OldestScalingConfiguration"),
    ),
    Rule(GROUP, "vswitch_id", "deprecated", go("ess_scaling_group"), note="use vswitch_ids (provider 1.7.1)"),
    # --- ess.ScalingConfiguration (resource_alicloud_ess_scaling_configuration.go)
    Rule(CONFIG, "instance_type", "pattern", go("ess_scaling_configuration"), regex=r"ecs\..+", note="prefix 'ecs.'"),
    Rule(CONFIG, "system_disk_category", "one_of", go("ess_scaling_configuration"), values=DISK_CATEGORIES_ESS),
    Rule(
        CONFIG,
        "system_disk_performance_level",
        "one_of",
        doc("instance") + " (system_disk_performance_level)",
        values=PERFORMANCE_LEVELS,
    ),
    Rule(
        CONFIG,
        "system_disk_size",
        "between",
        go("ess_scaling_configuration"),
        low=20,
        high=500,
        spec="fleet.disks.system.size_gib",
        of_spec=lambda s: s.disks.system.size_gib,
    ),
    Rule(
        CONFIG,
        "data_disks.category",
        "one_of",
        go("ess_scaling_configuration"),
        values=(*DISK_CATEGORIES_ESS, "all", "local_disk"),
    ),
    Rule(
        CONFIG,
        "data_disks.size",
        "between",
        doc("ess_scaling_configuration") + " (cloud_essd data disk: 20-32768 GiB)",
        low=20,
        high=32768,
        spec="fleet.disks.data.size_gib",
        of_spec=lambda s: s.disks.data.size_gib,
    ),
    Rule(CONFIG, "internet_max_bandwidth_out", "between", go("ess_scaling_configuration"), low=0, high=1024),
    Rule(CONFIG, "instance_name", "length", go("ess_scaling_configuration"), low=2, high=128, spec="fleet.name"),
    Rule(
        CONFIG,
        "spot_strategy",
        "one_of",
        doc("ess_scaling_configuration"),
        values=("NoSpot", "SpotWithPriceLimit", "SpotAsPriceGo"),
    ),
    Rule(
        CONFIG,
        "spot_strategy",
        "requires",
        doc("ess_scaling_configuration") + " (SpotWithPriceLimit takes spot_price_limit)",
        others=("spot_price_limits",),
        when={"spot_strategy": "SpotWithPriceLimit"},
        spec="fleet.billing.spot_price_limit",
    ),
    Rule(
        CONFIG,
        "spot_price_limits.price_limit",
        "pattern",
        doc("ess_scaling_configuration") + " (price_limit: 2 decimals at most)",
        regex=r"\d+(\.\d{1,2})?",
        note="a price with at most 2 decimals",
        spec="fleet.billing.spot_price_limit",
        of_spec=lambda s: s.billing.spot_price_limit,
    ),
    Rule(CONFIG, "security_group_id", "conflicts", go("ess_scaling_configuration"), others=("security_group_ids",)),
    Rule(
        CONFIG, "instance_type", "conflicts", go("ess_scaling_configuration"), others=("instance_types", "instance_type_override")
    ),
    # ESSD performance levels have a smallest size (system disks on ESS and ECS, data disks)
    *(
        Rule(
            type_,
            "system_disk_size",
            "between",
            doc("ess_scaling_configuration") + f" (system disk: {level} ESSD takes {low}-2048 GiB)",
            low=low,
            high=2048,
            when={"system_disk_performance_level": level},
            spec="fleet.disks.system.size_gib",
            of_spec=lambda s, level=level: s.disks.system.size_gib if _level(s.disks.system.tier) == level else None,
        )
        for level, low in ESSD_MIN_GIB.items()
        for type_ in (CONFIG, ECS)
    ),
    *(
        Rule(
            type_,
            "data_disks.size",
            "between",
            ESSD_DOC + f" ({level} ESSD: {low}-65536 GiB)",
            low=low,
            high=65536,
            when={"data_disks.performance_level": level},
            spec="fleet.disks.data.size_gib",
            of_spec=lambda s, level=level: s.disks.data.size_gib if _level(s.disks.data.tier) == level else None,
        )
        for level, low in ESSD_MIN_GIB.items()
        for type_ in (CONFIG, ECS)
    ),
    # --- ess.ScalingRule / ess.Alarm
    Rule(
        RULE,
        "adjustment_type",
        "one_of",
        go("ess_scaling_rule"),
        values=("QuantityChangeInCapacity", "PercentChangeInCapacity", "TotalCapacity"),
    ),
    Rule(
        RULE,
        "scaling_rule_type",
        "one_of",
        go("ess_scaling_rule"),
        values=("SimpleScalingRule", "TargetTrackingScalingRule", "StepScalingRule", "PredictiveScalingRule"),
    ),
    Rule(RULE, "cooldown", "between", go("ess_scaling_rule"), low=0, high=86400, spec="fleet.autoscaling.cooldown_s"),
    Rule(ALARM, "metric_type", "one_of", go("ess_alarm"), values=("system", "custom")),
    Rule(ALARM, "period", "one_of", go("ess_alarm"), values=(60, 120, 300, 900)),
    Rule(ALARM, "comparison_operator", "one_of", go("ess_alarm"), values=(">", ">=", "<", "<=")),
    Rule(ALARM, "statistics", "one_of", doc("ess_alarm"), values=("Average", "Minimum", "Maximum")),
    Rule(ALARM, "evaluation_count", "between", go("ess_alarm"), low=0, high=None, spec="fleet.autoscaling.evaluation_minutes"),
    Rule(
        ALARM, "expressions.period", "one_of", doc("ess_alarm") + " (expressions: 60, 120, 300, 900)", values=(60, 120, 300, 900)
    ),
    Rule(ALARM, "expressions.comparison_operator", "one_of", doc("ess_alarm"), values=(">", ">=", "<", "<=")),
    Rule(ALARM, "expressions.statistics", "one_of", doc("ess_alarm"), values=("Average", "Minimum", "Maximum")),
    Rule(ALARM, "expressions_logic_operator", "one_of", CREATE_ALARM_API, values=("&&", "||")),
    Rule(
        ALARM,
        "metric_type",
        "requires",
        doc("ess_alarm") + " (cloud_monitor_group_id: the CMS application group of a custom metric)",
        others=("cloud_monitor_group_id", "dimensions"),
        when={"metric_type": "custom"},
        spec="fleet.autoscaling.metric",
    ),
    # --- ess.ScalingGroup: spot with an on-demand base (valid only with multi_az_policy COST_OPTIMIZED, ForceNew)
    Rule(
        GROUP,
        "on_demand_base_capacity",
        "between",
        go("ess_scaling_group"),
        low=0,
        high=1000,
        spec="fleet.billing.on_demand_base",
        of_spec=lambda s: s.billing.on_demand_base,
    ),
    Rule(
        GROUP,
        "on_demand_percentage_above_base_capacity",
        "between",
        go("ess_scaling_group"),
        low=0,
        high=100,
        spec="fleet.billing.on_demand_above_base_percent",
        of_spec=lambda s: s.billing.on_demand_above_base_percent,
    ),
    Rule(GROUP, "spot_instance_pools", "between", go("ess_scaling_group"), low=1, high=SPOT_POOLS_MAX),
    *(
        Rule(
            GROUP,
            arg,
            "requires",
            doc("ess_scaling_group") + " (valid only if multi_az_policy is COST_OPTIMIZED)",
            others=("multi_az_policy",),
        )
        for arg in ("on_demand_base_capacity", "on_demand_percentage_above_base_capacity", "spot_instance_pools")
    ),
    *(
        Rule(
            GROUP,
            "multi_az_policy",
            "one_of",
            doc("ess_scaling_group") + f" ({arg} is valid only if multi_az_policy is COST_OPTIMIZED)",
            values=("COST_OPTIMIZED",),
            when={arg: tuple(range(0, 1001))},
        )
        for arg in ("on_demand_base_capacity", "on_demand_percentage_above_base_capacity", "spot_instance_pools")
    ),
    # --- ess.ScheduledTask (resource_alicloud_ess_scheduled_task.go, ess_scheduled_task.html.markdown)
    Rule(TASK, "recurrence_type", "one_of", go("ess_scheduled_task"), values=("Daily", "Weekly", "Monthly", "Cron")),
    Rule(
        TASK,
        "scheduled_task_name",
        "length",
        "alibabacloud_ess20220222==1.13.3 alibabacloud_ess20220222/CreateScheduledTask:ScheduledTaskName (the provider's "
        "schema has no validator; its page's 2-40 is not enforced)",
        low=2,
        high=SCHEDULED_TASK_NAME_MAX,
        spec="fleet.autoscaling.schedules",
    ),
    Rule(
        TASK,
        "launch_time",
        "date",
        doc("ess_scheduled_task") + " (YYYY-MM-DDThh:mmZ, UTC, at most 90 days after creation)",
        date_format=LAUNCH_TIME_FORMAT,
        note="YYYY-MM-DDThh:mmZ",
        max_days_ahead=LAUNCH_TIME_MAX_DAYS,
        spec="fleet.autoscaling.schedule_window_start",
    ),
    Rule(
        TASK,
        "recurrence_end_time",
        "date",
        RECURRENCE_END_SOURCE + "; " + doc("ess_scheduled_task") + " (365 days)",
        date_format=RECURRENCE_END_FORMAT,
        note="YYYY-MM-DDThh:mmZ",
        max_days_ahead=RECURRENCE_END_MAX_DAYS,
        future=True,
        spec="fleet.autoscaling.schedule_window_start",
    ),
    Rule(
        TASK,
        "recurrence_type",
        "requires",
        doc("ess_scheduled_task") + " (type, value and end time together)",
        others=("recurrence_value", "recurrence_end_time"),
    ),
    Rule(TASK, "scaling_group_id", "conflicts", go("ess_scheduled_task"), others=("scheduled_action",)),
    # --- ess.LifecycleHook (resource_alicloud_ess_lifecyclehook.go)
    Rule(HOOK, "lifecycle_transition", "one_of", go("ess_lifecyclehook"), values=("SCALE_IN", "SCALE_OUT")),
    Rule(HOOK, "default_result", "one_of", go("ess_lifecyclehook"), values=("CONTINUE", "ABANDON", "ROLLBACK")),
    Rule(
        HOOK,
        "heartbeat_timeout",
        "between",
        go("ess_lifecyclehook"),
        low=30,
        high=21600,
        spec="fleet.load_balancer.health_check.grace_period_s",
        of_spec=lambda s: _hc(s).grace_period_s or None,  # 0: no hook is declared
    ),
    Rule(
        HOOK,
        "heartbeat_timeout",
        "between",
        go("ess_lifecyclehook"),
        low=30,
        high=21600,
        when={"lifecycle_transition": "SCALE_IN"},
        spec="fleet.autoscaling.drain_timeout_s",
        of_spec=lambda s: s.autoscaling.drain_timeout_s,
    ),
    Rule(
        HOOK,
        "notification_arn",
        "pattern",
        "https://www.alibabacloud.com/help/en/auto-scaling/developer-reference/api-createlifecyclehook "
        "(an OOS template: acs:oos:{region}:{account-id}:template/{name})",
        regex=r"acs:(ess|oos|mns):[a-z0-9-]+:[^:]+:(queue|topic|template)/[A-Za-z0-9._-]+",
        note="acs:oos:{region}:{account-id}:template/{name}",
    ),
    Rule(
        HOOK,
        "name",
        "pattern",
        doc("ess_lifecycle_hook"),
        regex=r"[0-9A-Za-z][0-9A-Za-z_.-]{1,63}",
        note="2-64 characters: letters, digits, _ - . (starting with a letter or digit)",
    ),
    # --- ecs.EipAddress (resource_alicloud_eip_address.go; bandwidth ranges: AllocateEipAddress API)
    Rule(
        EIP,
        "internet_charge_type",
        "one_of",
        go("eip_address"),
        values=("PayByBandwidth", "PayByTraffic"),
        spec="fleet.egress.charge",
    ),
    Rule(EIP, "payment_type", "one_of", go("eip_address"), values=("Subscription", "PayAsYouGo", "PrePaid", "PostPaid")),
    Rule(
        EIP,
        "bandwidth",
        "number_string",
        "https://www.alibabacloud.com/help/en/eip/developer-reference/api-vpc-2016-04-28-allocateeipaddress "
        "(pay-as-you-go, PayByTraffic: 1-200 Mbit/s)",
        low=1,
        high=200,
        when={"internet_charge_type": "PayByTraffic"},
        spec="fleet.egress.bandwidth_mbps",
        of_spec=lambda s: s.egress.bandwidth_mbps if s.egress.charge == "traffic" else None,
    ),
    Rule(
        EIP,
        "bandwidth",
        "number_string",
        "https://www.alibabacloud.com/help/en/eip/developer-reference/api-vpc-2016-04-28-allocateeipaddress "
        "(pay-as-you-go, PayByBandwidth: 1-500 Mbit/s)",
        low=1,
        high=500,
        when={"internet_charge_type": "PayByBandwidth"},
        spec="fleet.egress.bandwidth_mbps",
        of_spec=lambda s: s.egress.bandwidth_mbps if s.egress.charge == "bandwidth" else None,
    ),
    Rule(EIP, "address_name", "conflicts", go("eip_address"), others=("name",)),
    # --- vpc.NatGateway
    Rule(NAT, "nat_type", "one_of", go("nat_gateway"), values=("Enhanced", "Normal")),
    Rule(NAT, "network_type", "one_of", go("nat_gateway"), values=("internet", "intranet")),
    Rule(NAT, "payment_type", "one_of", go("nat_gateway"), values=("PayAsYouGo", "Subscription")),
    Rule(NAT, "internet_charge_type", "one_of", go("nat_gateway"), values=("PayByLcu", "PayBySpec")),
    # --- ecs.SecurityGroup / SecurityGroupRule
    Rule(SG, "inner_access_policy", "one_of", go("security_group"), values=("Accept", "Drop")),
    Rule(SG_RULE, "type", "one_of", go("security_group_rule"), values=("ingress", "egress")),
    Rule(SG_RULE, "nic_type", "one_of", go("security_group_rule"), values=("internet", "intranet")),
    Rule(SG_RULE, "ip_protocol", "one_of", go("security_group_rule"), values=("tcp", "udp", "icmp", "icmpv6", "gre", "all")),
    Rule(SG_RULE, "policy", "one_of", go("security_group_rule"), values=("accept", "drop")),
    Rule(SG_RULE, "priority", "between", go("security_group_rule"), low=1, high=100),
    Rule(
        SG_RULE,
        "port_range",
        "pattern",
        doc("security_group_rule"),
        regex=r"-1/-1|\d{1,5}/\d{1,5}",
        note="start/end (-1/-1 for all)",
    ),
    # --- ecs.Instance (subscription baseline; resource_alicloud_instance.go)
    Rule(ECS, "instance_type", "pattern", go("instance"), regex=r"ecs\..+", note="prefix 'ecs.'"),
    Rule(ECS, "instance_charge_type", "one_of", go("instance"), values=("PrePaid", "PostPaid")),
    Rule(
        ECS,
        "period",
        "one_of",
        go("instance") + " (1-9, 12, 24, 36, 48, 60)",
        values=(*range(1, 10), 12, 24, 36, 48, 60),
        spec="fleet.billing.period_months",
    ),
    Rule(ECS, "period_unit", "one_of", go("instance"), values=("Week", "Month"), spec="fleet.billing.model"),
    Rule(ECS, "auto_renew_period", "one_of", go("instance"), values=(1, 2, 3, 6, 12)),
    Rule(ECS, "renewal_status", "one_of", go("instance"), values=("AutoRenewal", "Normal", "NotRenewal")),
    Rule(ECS, "system_disk_performance_level", "one_of", go("instance"), values=PERFORMANCE_LEVELS),
    Rule(
        ECS,
        "system_disk_category",
        "one_of",
        go("instance"),
        values=(
            "all",
            "cloud",
            "ephemeral_ssd",
            "cloud_essd",
            "cloud_efficiency",
            "cloud_ssd",
            "local_disk",
            "cloud_auto",
            "cloud_essd_entry",
        ),
    ),
    Rule(ECS, "instance_name", "length", go("instance"), low=2, high=128, spec="fleet.name"),
    *(
        Rule(
            type_,
            "user_data",
            "length",
            source + " (32 KB before Base64)",
            low=0,
            high=USER_DATA_MAX_BASE64,
            note="Base64 of 32 KB",
        )
        for type_, source in USER_DATA_SOURCE.items()
    ),
    Rule(
        ECS,
        "role_name",
        "deprecated",
        go("instance") + "; " + doc("instance"),
        note="deprecated since provider 1.275.0: attach the role with alicloud_ecs_ram_role_attachment",
    ),
    Rule(
        ECS,
        "data_disks.category",
        "one_of",
        go("instance"),
        values=(
            "all",
            "cloud",
            "ephemeral_ssd",
            "cloud_essd",
            "cloud_efficiency",
            "cloud_ssd",
            "local_disk",
            "cloud_auto",
            "cloud_essd_entry",
            "cloud_regional_disk_auto",
            "elastic_ephemeral_disk_standard",
            "elastic_ephemeral_disk_premium",
        ),
    ),
    # name arguments that replaced `name` (the schema's ConflictsWith)
    *(
        Rule(type_, arg, "conflicts", go(resource), others=("name",))
        for type_, arg, resource in (
            (RAM_POLICY, "policy_name", "ram_policy"),
            (RAM_ROLE, "role_name", "ram_role"),
            (CLB, "load_balancer_name", "slb_load_balancer"),
            (NAT, "nat_gateway_name", "nat_gateway"),
            ("alicloud:vpc/network:Network", "vpc_name", "vpc"),
            ("alicloud:vpc/switch:Switch", "vswitch_name", "vswitch"),
        )
    ),
    Rule("alicloud:vpc/snatEntry:SnatEntry", "source_vswitch_id", "conflicts", go("snat_entry"), others=("source_cidr",)),
    # --- RAM
    Rule(RAM_ATTACH, "policy_type", "one_of", go("ram_role_policy_attachment"), values=("System", "Custom")),
    Rule(RAM_POLICY, "policy_document", "pattern", go("ram_policy") + " (StringIsJSON)", regex=r"\{.*\}", note="a JSON document"),
    Rule(
        RAM_ROLE,
        "assume_role_policy_document",
        "pattern",
        go("ram_role") + " (StringIsJSON)",
        regex=r"\{.*\}",
        note="a JSON document",
    ),
    # --- CloudMonitor
    Rule(TAG_GROUP, "match_express_filter_relation", "one_of", doc("cms_dynamic_tag_group"), values=("and", "or")),
    Rule(
        TAG_GROUP,
        "match_expresses.tag_value_match_function",
        "one_of",
        doc("cms_dynamic_tag_group"),
        values=("all", "startWith", "endWith", "contains", "notContains", "equals"),
    ),
    Rule(TAG_GROUP, "contact_group_lists", "required", doc("cms_dynamic_tag_group"), spec="fleet.alarms.contact_group"),
    Rule(
        TEMPLATE,
        "alert_templates.escalations.critical.comparison_operator",
        "one_of",
        doc("cms_metric_rule_template"),
        values=(
            "GreaterThanOrEqualToThreshold",
            "GreaterThanThreshold",
            "LessThanOrEqualToThreshold",
            "LessThanThreshold",
            "NotEqualToThreshold",
            "GreaterThanYesterday",
            "LessThanYesterday",
            "GreaterThanLastWeek",
            "LessThanLastWeek",
            "GreaterThanLastPeriod",
            "LessThanLastPeriod",
        ),
    ),
    Rule(TEMPLATE, "silence_time", "between", doc("cms_metric_rule_template"), low=0, high=86400),
)

# --- Limits the vendor's own API reference states (the generated SDKs, each request field's document comment in
# models/_<action>_request.py), where the provider's schema states none or a looser one. Each cites
# `<package>==<version> <package>/<Action>:<Field>`; tests/system/test_spec_coverage.py checks the cited limit is still
# stated there. Read 2026-12-04.
SDK = {
    "ess": "alibabacloud_ess20220222==1.13.3 alibabacloud_ess20220222",
    "ecs": "alibabacloud_ecs20140526==7.11.8 alibabacloud_ecs20140526",
    "slb": "alibabacloud_slb20140515==3.3.31 alibabacloud_slb20140515",
    "cms": "alibabacloud_cms20190101==4.0.10 alibabacloud_cms20190101",
    "ram": "alibabacloud_ram20150501==1.3.0 alibabacloud_ram20150501",
    "vpc": "alibabacloud_vpc20160428==7.2.2 alibabacloud_vpc20160428",
}
ACL = "alicloud:slb/acl:Acl"
VSERVER_GROUP = "alicloud:slb/serverGroup:ServerGroup"
GROUP_BACKEND = "alicloud:ess/scalingGroupVServerGroups:ScalingGroupVServerGroups"
NETWORK = "alicloud:vpc/network:Network"
SWITCH = "alicloud:vpc/switch:Switch"


def api(sdk: str, member: str) -> str:
    return f"{SDK[sdk]}/{member}"


# ESS CreateAlarm: the system metrics (MetricType system); custom metrics are the user's own names.
ESS_SYSTEM_METRICS = (
    "CpuUtilization", "ConcurrentConnections", "IntranetTx", "IntranetRx", "VpcInternetTx", "VpcInternetRx",
    "SystemDiskReadBps", "SystemDiskWriteBps", "SystemDiskReadOps", "SystemDiskWriteOps", "CpuUtilizationAgent",
    "GpuUtilizationAgent", "GpuMemoryFreeUtilizationAgent", "GpuMemoryUtilizationAgent", "MemoryUtilization", "LoadAverage",
    "TcpConnection", "PackagesNetOut", "PackagesNetIn", "EciPodCpuUtilization", "EciPodMemoryUtilization",
    "LoadBalancerRealServerAverageQps",
)  # fmt: skip
ESS_DISK_SIZES = {"cloud": (5, 2000), "cloud_efficiency": (20, 32768), "cloud_essd": (20, 32768), "ephemeral_ssd": (5, 800)}
ECS_DATA_DISK_SIZES = {
    "cloud_efficiency": (20, 32768),
    "cloud_ssd": (20, 32768),
    "cloud": (5, 2000),
    "cloud_essd_entry": (10, 32768),
}
ECS_ESSD_DATA_SIZES = {"PL0": 1, "PL1": 20, "PL2": 461, "PL3": 1261}  # to 65536 GiB

RULES = RULES + (
    Rule(EIP, "address_name", "length", api("vpc", "AllocateEipAddress:Name"), low=0, high=128, spec="fleet.name"),
    Rule(
        ECS,
        "data_disks.performance_level",
        "one_of",
        api("ecs", "RunInstances:DataDisk.PerformanceLevel"),
        values=PERFORMANCE_LEVELS,
    ),
    Rule(
        CONFIG,
        "data_disks.performance_level",
        "one_of",
        api("ess", "CreateScalingConfiguration:DataDisks.PerformanceLevel"),
        values=PERFORMANCE_LEVELS,
    ),
    Rule(
        ECS,
        "data_disks.category",
        "one_of",
        api("ecs", "RunInstances:DataDisk.Category"),
        values=("cloud_efficiency", "cloud_ssd", "cloud_essd", "cloud", "cloud_auto", "cloud_essd_entry"),
        spec="fleet.disks.data.tier",
    ),
    Rule(
        ECS,
        "system_disk_category",
        "one_of",
        api("ecs", "RunInstances:SystemDisk.Category"),
        values=("cloud_efficiency", "cloud_ssd", "cloud_essd", "cloud", "cloud_auto", "cloud_essd_entry"),
        spec="fleet.disks.system.tier",
    ),
    *(
        Rule(
            CONFIG,
            f"{disk}_category" if disk == "system_disk" else "data_disks.category",
            "one_of",
            api("ess", f"CreateScalingConfiguration:{field}.Category"),
            values=("cloud", "cloud_efficiency", "cloud_ssd", "cloud_essd", "ephemeral_ssd", "cloud_auto"),
            spec=f"fleet.disks.{'system' if disk == 'system_disk' else 'data'}.tier",
        )
        for disk, field in (("system_disk", "SystemDisk"), ("data_disks", "DataDisks"))
    ),
    # disk sizes per category (and per ESSD performance level on ECS)
    *(
        Rule(
            CONFIG,
            "data_disks.size",
            "between",
            api("ess", "CreateScalingConfiguration:DataDisks.Size"),
            low=low,
            high=high,
            when={"data_disks.category": category},
            spec="fleet.disks.data.size_gib",
        )
        for category, (low, high) in ESS_DISK_SIZES.items()
    ),
    *(
        Rule(
            ECS,
            "data_disks.size",
            "between",
            api("ecs", "RunInstances:DataDisk.Size"),
            low=low,
            high=high,
            when={"data_disks.category": category},
            spec="fleet.disks.data.size_gib",
        )
        for category, (low, high) in ECS_DATA_DISK_SIZES.items()
    ),
    *(
        Rule(
            ECS,
            "data_disks.size",
            "between",
            api("ecs", "RunInstances:DataDisk.Size"),
            low=low,
            high=65536,
            when={"data_disks.category": "cloud_essd", "data_disks.performance_level": level},
            spec="fleet.disks.data.size_gib",
        )
        for level, low in ECS_ESSD_DATA_SIZES.items()
    ),
    *(
        Rule(
            type_,
            "system_disk_size",
            "between",
            api(sdk, member),
            low=20,
            high=500,
            when={"system_disk_category": "cloud"},
            spec="fleet.disks.system.size_gib",
        )
        for type_, sdk, member in (
            (ECS, "ecs", "RunInstances:SystemDisk.Size"),
            (CONFIG, "ess", "CreateScalingConfiguration:SystemDisk.Size"),
        )
    ),
    Rule(ECS, "internet_max_bandwidth_out", "between", api("ecs", "RunInstances:InternetMaxBandwidthOut"), low=0, high=100),
    Rule(
        CONFIG,
        "internet_max_bandwidth_out",
        "between",
        api("ess", "CreateScalingConfiguration:InternetMaxBandwidthOut"),
        low=0,
        high=100,
    ),
    Rule(
        ECS,
        "period",
        "required",
        api("ecs", "RunInstances:Period"),
        when={"instance_charge_type": "PrePaid"},
        spec="fleet.billing.period_months",
    ),
    Rule(ROLE_ATTACH, "instance_id", "length", api("ecs", "AttachInstanceRamRole:InstanceIds"), low=1, high=100),
    Rule(SG, "description", "length", api("ecs", "CreateSecurityGroup:Description"), low=2, high=256),
    Rule(
        SG,
        "security_group_name",
        "length",
        api("ecs", "CreateSecurityGroup:SecurityGroupName"),
        low=2,
        high=128,
        spec="fleet.name",
    ),
    *(
        Rule(ALARM, arg, "one_of", api("ess", f"CreateAlarm:{field}"), values=ESS_SYSTEM_METRICS, when={"metric_type": "system"})
        for arg, field in (("metric_name", "MetricName"), ("expressions.metric_name", "Expressions.MetricName"))
    ),
    Rule(HOOK, "default_result", "one_of", api("ess", "CreateLifecycleHook:DefaultResult"), values=("CONTINUE", "ABANDON")),
    Rule(HOOK, "notification_metadata", "length", api("ess", "CreateLifecycleHook:NotificationMetadata"), low=None, high=4096),
    *(
        Rule(type_, arg, "length", api("ess", member), low=2, high=64, spec="fleet.name")
        for type_, arg, member in (
            (CONFIG, "scaling_configuration_name", "CreateScalingConfiguration:ScalingConfigurationName"),
            (GROUP, "scaling_group_name", "CreateScalingGroup:ScalingGroupName"),
            (RULE, "scaling_rule_name", "CreateScalingRule:ScalingRuleName"),
        )
    ),
    *(
        Rule(
            RULE,
            "adjustment_value",
            "between",
            api("ess", "CreateScalingRule:AdjustmentValue"),
            low=low,
            high=high,
            when={"adjustment_type": kind},
        )
        for kind, (low, high) in (
            ("QuantityChangeInCapacity", (-1000, 1000)),
            ("PercentChangeInCapacity", (-100, 10000)),
            ("TotalCapacity", (0, 2000)),
        )
    ),
    Rule(
        TASK,
        "recurrence_value",
        "number_string",
        api("ess", "CreateScheduledTask:RecurrenceValue"),
        low=1,
        high=31,
        when={"recurrence_type": "Daily"},
    ),
    # The health-check URI (review A2): "The URI must be 1 to 80 characters in length, and can contain letters, digits,
    # and the following special characters: `-/.%?#&`. The URI must start with a forward slash (`/`), but cannot be a
    # single forward slash (`/`)." (CreateLoadBalancerHTTPSListener; CreateLoadBalancerHTTPListener says the same.) The
    # provider's schema checks the length only; the spec's path also takes `_`, which this refuses on Alibaba.
    Rule(
        LISTENER,
        "health_check_uri",
        "pattern",
        api("slb", "CreateLoadBalancerHTTPSListener:HealthCheckURI") + " (and CreateLoadBalancerHTTPListener:HealthCheckURI)",
        regex=r"/[A-Za-z0-9/.%?#&-]{1,79}",
        note="a / and 1 to 79 letters, digits and - / . % ? # & (not / alone; no _ or ~)",
        spec="fleet.load_balancer.health_check.path",
        of_spec=lambda s: _hc(s).path,
    ),
    # Program-set listener values held to the HTTP/HTTPS listener texts (review C4; the provider's schema, above, is
    # looser: its lists serve TCP/UDP listeners too): Scheduler "Valid values: wrr, rr"; HealthCheckConnectPort
    # "Valid values: 1 to 65535"; HealthyThreshold / UnhealthyThreshold "Valid values: 2 to 10" (the spec's ge=2
    # holds the thresholds already). CreateLoadBalancerHTTPListener says the same for each.
    Rule(
        LISTENER,
        "scheduler",
        "one_of",
        api("slb", "CreateLoadBalancerHTTPSListener:Scheduler") + " (and CreateLoadBalancerHTTPListener:Scheduler)",
        values=("wrr", "rr"),
        when={"protocol": ("http", "https")},
    ),
    Rule(
        LISTENER,
        "health_check_connect_port",
        "between",
        api("slb", "CreateLoadBalancerHTTPSListener:HealthCheckConnectPort"),
        low=1,
        high=65535,
        spec="fleet.serving.port",
    ),
    *(
        Rule(
            LISTENER,
            arg,
            "between",
            api("slb", f"CreateLoadBalancerHTTPSListener:{field}"),
            low=2,
            high=10,
            spec=f"fleet.load_balancer.health_check.{arg}",
        )
        for arg, field in (("healthy_threshold", "HealthyThreshold"), ("unhealthy_threshold", "UnhealthyThreshold"))
    ),
    # NatType "Valid values: Enhanced: enhanced NAT gateway." (the provider also takes the retired Normal);
    # InternetChargeType "Valid values: PayByLcu: pay-by-data-transfer." (the provider also takes PayBySpec)
    Rule(NAT, "nat_type", "one_of", api("vpc", "CreateNatGateway:NatType"), values=("Enhanced",)),
    Rule(NAT, "internet_charge_type", "one_of", api("vpc", "CreateNatGateway:InternetChargeType"), values=("PayByLcu",)),
    # the EIP's association: AssociateEipAddress InstanceType "Valid values: Nat, SlbInstance, EcsInstance,
    # NetworkInterface, HaVip, IpAddress" (the provider's schema has no validator; the program sends Nat)
    Rule(
        "alicloud:ecs/eipAssociation:EipAssociation",
        "instance_type",
        "one_of",
        api("vpc", "AssociateEipAddress:InstanceType"),
        values=("Nat", "SlbInstance", "EcsInstance", "NetworkInterface", "HaVip", "IpAddress"),
    ),
    # the nodes' tags: "You can specify up to 20 tags in key-value pairs" (the spec's cap, checks.LIST_CAPS["tags"], is
    # 20 less gpufleet's own 2)
    Rule(CONFIG, "tags", "count", api("ess", "CreateScalingConfiguration:Tags"), high=20, spec="fleet.tags"),
    Rule(RAM_POLICY, "policy_name", "length", api("ram", "CreatePolicy:PolicyName"), low=1, high=128, spec="fleet.name"),
    Rule(RAM_ROLE, "description", "length", api("ram", "CreateRole:Description"), low=1, high=1024),
    Rule(RAM_ROLE, "role_name", "length", api("ram", "CreateRole:RoleName"), low=1, high=64, spec="fleet.name"),
    Rule(ACL, "name", "length", api("slb", "CreateAccessControlList:AclName"), low=1, high=80, spec="fleet.name"),
    # a rollout's serving groups (issue 31): the listener's VServer group and each group's weight in it
    Rule(VSERVER_GROUP, "name", "length", api("slb", "CreateVServerGroup:VServerGroupName"), low=1, high=80, spec="fleet.name"),
    Rule(
        GROUP_BACKEND,
        "vserver_groups.vserver_attributes.weight",
        "between",
        api("ess", "AttachVServerGroups:VServerGroups.VServerGroupAttributes.Weight"),
        low=0,
        high=100,
        spec="fleet.rollout.candidate_weight",
    ),
    Rule(
        GROUP_BACKEND,
        "vserver_groups.vserver_attributes.port",
        "between",
        api("ess", "AttachVServerGroups:VServerGroups.VServerGroupAttributes.Port"),
        low=1,
        high=65535,
        spec="fleet.serving.port",
    ),
    Rule(
        CLB, "load_balancer_name", "length", api("slb", "CreateLoadBalancer:LoadBalancerName"), low=1, high=80, spec="fleet.name"
    ),
    Rule(NAT, "nat_gateway_name", "length", api("vpc", "CreateNatGateway:Name"), low=2, high=128, spec="fleet.name"),
    Rule(NETWORK, "vpc_name", "length", api("vpc", "CreateVpc:VpcName"), low=1, high=128, spec="fleet.name"),
    Rule(SWITCH, "vswitch_name", "length", api("vpc", "CreateVSwitch:VSwitchName"), low=1, high=128, spec="fleet.name"),
    # the mask length of the VPC (16-28) and vSwitch (16-29) CIDR blocks
    Rule(
        NETWORK,
        "cidr_block",
        "pattern",
        "alibabacloud_vpc20160428 7.2.2 CreateVpc CidrBlock (mask 16 to 28 bits)",
        regex=r".*/(1[6-9]|2[0-8])",
        note="a /16 to /28 block",
        spec="fleet.network.vpc_cidr",
    ),
    Rule(
        SWITCH,
        "cidr_block",
        "pattern",
        "alibabacloud_vpc20160428 7.2.2 CreateVSwitch CidrBlock (mask 16 to 29 bits)",
        regex=r".*/(1[6-9]|2[0-9])",
        note="a /16 to /29 block",
        spec="fleet.network.subnet_prefix",
    ),
)


# Where an SDK docstring's "Valid values" is narrower than what the provider validates: (type, arg) -> why, cited.
DOCSTRING_OVERRIDES: dict[tuple[str, str], str] = {}


# Arguments the program sends that the provider schema does not validate: (source file checked, arguments).
# Read at the REPO commit above: their schema entries carry no ValidateFunc (the documented "Valid values" of the
# installed SDK are checked for every argument by tests/contract/test_docstrings.py).
NO_CONSTRAINT: dict[str, tuple[str, tuple[str, ...]]] = {
    "alicloud:cms/monitorGroup:MonitorGroup": (
        f"{REPO} alicloud/resource_alicloud_cms_monitor_group.go",
        ("contact_groups", "monitor_group_name"),
    ),
    "alicloud:cms/dynamicTagGroup:DynamicTagGroup": (
        f"{REPO} alicloud/resource_alicloud_cms_dynamic_tag_group.go",
        (
            "tag_key",
            "template_id_lists",
        ),
    ),
    "alicloud:cms/metricRuleTemplate:MetricRuleTemplate": (
        f"{REPO} alicloud/resource_alicloud_cms_metric_rule_template.go",
        (
            "description",
            "metric_rule_template_name",
        ),
    ),
    "alicloud:ecs/eipAddress:EipAddress": (f"{REPO} alicloud/resource_alicloud_eip_address.go", ("deletion_protection", "tags")),
    "alicloud:ecs/eipAssociation:EipAssociation": (
        f"{REPO} alicloud/resource_alicloud_eip_association.go",
        (
            "allocation_id",
            "instance_id",
        ),
    ),
    "alicloud:ecs/instance:Instance": (
        f"{REPO} alicloud/resource_alicloud_instance.go",
        (
            "image_id",
            "security_groups",
            "system_disk_encrypted",
            "tags",
            "vswitch_id",
        ),
    ),
    "alicloud:ecs/ramRoleAttachment:RamRoleAttachment": (
        f"{REPO} alicloud/resource_alicloud_ecs_ram_role_attachment.go",
        ("ram_role_name",),
    ),
    "alicloud:ecs/securityGroup:SecurityGroup": (
        f"{REPO} alicloud/resource_alicloud_security_group.go",
        (
            "tags",
            "vpc_id",
        ),
    ),
    "alicloud:ecs/securityGroupRule:SecurityGroupRule": (
        f"{REPO} alicloud/resource_alicloud_security_group_rule.go",
        (
            "cidr_ip",
            "description",
            "security_group_id",
        ),
    ),
    "alicloud:ess/alarm:Alarm": (
        f"{REPO} alicloud/resource_alicloud_ess_alarm.go",
        (
            "alarm_actions",
            "description",
            "name",
            "scaling_group_id",
            "threshold",
            "cloud_monitor_group_id",  # TypeInt
            "dimensions",  # TypeMap; keys other than ALARM_RESERVED_DIMENSIONS (the tests check scaling_metrics.yaml's)
        ),
    ),
    "alicloud:ess/attachment:Attachment": (
        f"{REPO} alicloud/resource_alicloud_ess_attachment.go",
        (
            "entrusted",
            "force",
            "instance_ids",
            "scaling_group_id",
        ),
    ),
    "alicloud:ess/lifecycleHook:LifecycleHook": (
        f"{REPO} alicloud/resource_alicloud_ess_lifecyclehook.go",
        ("scaling_group_id",),
    ),
    "alicloud:ess/scalingConfiguration:ScalingConfiguration": (
        f"{REPO} alicloud/resource_alicloud_ess_scaling_configuration.go",
        (
            "active",
            "enable",
            "force_delete",
            "image_id",
            "role_name",
            "scaling_group_id",
            "system_disk_encrypted",
            "instance_types",
        ),
    ),
    "alicloud:ess/scalingGroup:ScalingGroup": (
        f"{REPO} alicloud/resource_alicloud_ess_scaling_group.go",
        (
            "spot_instance_remedy",
            "group_deletion_protection",
            "loadbalancer_ids",
            "tags",
            "vswitch_ids",
        ),
    ),
    GROUP_BACKEND: (
        f"{REPO} alicloud/resource_alicloud_ess_scalinggroup_vserver_groups.go",
        ("scaling_group_id", "force", "vserver_groups.loadbalancer_id", "vserver_groups.vserver_attributes.vserver_group_id"),
    ),
    VSERVER_GROUP: (f"{REPO} alicloud/resource_alicloud_slb_vserver_group.go", ("load_balancer_id",)),
    "alicloud:ess/scalingRule:ScalingRule": (
        f"{REPO} alicloud/resource_alicloud_ess_scaling_rule.go",
        ("scaling_group_id",),
    ),
    "alicloud:ess/scheduledTask:ScheduledTask": (
        f"{REPO} alicloud/resource_alicloud_ess_scheduled_task.go",
        (
            "desired_capacity",
            "max_value",
            "min_value",
            "task_enabled",
        ),
    ),
    "alicloud:ram/role:Role": (f"{REPO} alicloud/resource_alicloud_ram_role.go", ("tags",)),
    "alicloud:ram/policy:Policy": (f"{REPO} alicloud/resource_alicloud_ram_policy.go", ("tags",)),
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment": (
        f"{REPO} alicloud/resource_alicloud_ram_role_policy_attachment.go",
        (
            "policy_name",
            "role_name",
        ),
    ),
    "alicloud:slb/acl:Acl": (f"{REPO} alicloud/resource_alicloud_slb_acl.go", ()),
    "alicloud:slb/aclEntryAttachment:AclEntryAttachment": (
        f"{REPO} alicloud/resource_alicloud_slb_acl_entry_attachment.go",
        (
            "acl_id",
            "comment",
            "entry",
        ),
    ),
    "alicloud:slb/applicationLoadBalancer:ApplicationLoadBalancer": (
        f"{REPO} alicloud/resource_alicloud_slb_load_balancer.go",
        ("tags",),
    ),
    "alicloud:slb/listener:Listener": (
        f"{REPO} alicloud/resource_alicloud_slb_listener.go",
        (
            "acl_ids",
            "load_balancer_id",
            "server_certificate_id",
        ),
    ),
    "alicloud:slb/serverCertificate:ServerCertificate": (
        f"{REPO} alicloud/resource_alicloud_slb_server_certificate.go",
        ("name", "private_key", "server_certificate"),
    ),
    "alicloud:vpc/natGateway:NatGateway": (
        f"{REPO} alicloud/resource_alicloud_nat_gateway.go",
        (
            "deletion_protection",
            "tags",
            "vpc_id",
            "vswitch_id",
        ),
    ),
    "alicloud:vpc/network:Network": (
        f"{REPO} alicloud/resource_alicloud_vpc.go",
        ("tags",),
    ),
    "alicloud:vpc/snatEntry:SnatEntry": (
        f"{REPO} alicloud/resource_alicloud_snat_entry.go",
        (
            "snat_ip",
            "snat_table_id",
        ),
    ),
    "alicloud:vpc/switch:Switch": (
        f"{REPO} alicloud/resource_alicloud_vswitch.go",
        (
            "tags",
            "vpc_id",
            "zone_id",
        ),
    ),
}


def no_constraint(type_: str, arg: str) -> str | None:
    entry = NO_CONSTRAINT.get(type_)
    return f"no documented constraint (checked: {entry[0]})" if entry and arg in entry[1] else None


# Provider-facing names and sizes other parts of gpufleet check (gpufleet.contract.name_problems): kind -> rules.
TAGS_DOC = (
    "https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-tagresources (Tag.N.Key / Tag.N.Value)"
)
NAMES: dict[str, tuple[Rule, ...]] = {
    "tag_key": (
        Rule("name", "tag_key", "length", TAGS_DOC, low=1, high=128),
        # the CLB and the ESS scaling configuration take keys of 64 characters at most (the fleet tags both)
        Rule("name", "tag_key", "length", api("slb", "CreateLoadBalancer:Tag.Key"), low=1, high=64),
        Rule(
            "name",
            "tag_key",
            "pattern",
            TAGS_DOC,
            regex=r"(?s)(?!aliyun|acs:)(?!.*https?://).*",  # (?s): the rule is the prefix and a URL; a newline is not it
            note="not aliyun*/acs:*, no http(s)://",
        ),
    ),
    "tag_value": (
        Rule("name", "tag_value", "length", TAGS_DOC, low=0, high=128),
        Rule(
            "name",
            "tag_value",
            "pattern",
            TAGS_DOC,
            regex=r"(?s)(?!aliyun|acs:)(?!.*https?://).*",  # (?s): the rule is the prefix and a URL; a newline is not it
            note="not aliyun*/acs:*, no http(s)://",
        ),
    ),
    "secret_name": (
        Rule(
            "name",
            "secret_name",
            "pattern",
            "https://www.alibabacloud.com/help/en/key-management-service/latest/kms-createsecret (linked from "
            + doc("kms_secret")
            + ")",
            regex=r"(?!acs/)[A-Za-z0-9_/+=.@-]{1,192}",
            note="1-192 of letters, digits, _ / + = . @ - (not starting with acs/)",
        ),
    ),
    "bucket_name": (
        Rule(
            "name",
            "bucket_name",
            "pattern",
            "https://www.alibabacloud.com/help/en/oss/user-guide/bucket-naming-conventions",
            regex=r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]",
            note="3-63 lowercase letters, digits and -, starting and ending with a letter or digit",
        ),
    ),
    "user_data": (Rule("name", "user_data", "length", USER_DATA_DOC, low=0, high=USER_DATA_MAX_BASE64, note="Base64"),),
}


# What pulumi-alicloud 4.0.0 cannot do for the hardening of issue 14 (preview shows these; docs/tls.md).
GAPS: dict[str, str] = {
    "metadata_tokens": "the ESS scaling configuration has http_endpoint but no http_tokens (installed SDK "
    "pulumi_alicloud/ess/scaling_configuration.py): pay-as-you-go nodes keep the default metadata mode; only the "
    "subscription ECS instances are set to http_tokens=required",
    "instance_protection": "ecs.Instance deletion_protection applies to pay-as-you-go instances only (SDK docstring; "
    + doc("instance")
    + "): prod's subscription instances are kept by Pulumi's protect option instead",
}
