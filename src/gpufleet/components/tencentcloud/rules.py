"""The Tencent Cloud provider contract: what terraform-provider-tencentcloud v1.82.42 accepts for every argument sent.

tencentcloud-iac-pulumi 0.2.3 is built from tencentcloudstack/terraform-provider-tencentcloud v1.82.42 (per
tencentcloudstack/pulumi-tencentcloud `provider/go.mod`). Sources: `tencentcloud/services/<svc>/resource_tc_*.go`
(schema ValidateFunc), `tencentcloud/services/<svc>/extension_*.go` (the allowed-value lists) and
`website/docs/r/*.html.markdown` at tag v1.82.42. Checked: 2026-12-03.
"""

from __future__ import annotations

from gpufleet.contract import Rule

REPO = "tencentcloudstack/terraform-provider-tencentcloud@v1.82.42"


def go(path: str) -> str:
    return f"{REPO} tencentcloud/services/{path}.go"


def doc(resource: str) -> str:
    return f"{REPO} website/docs/r/{resource}.html.markdown"


LISTENER = "tencentcloud:Clb/listener:Listener"
CLB = "tencentcloud:Clb/instance:Instance"
GROUP = "tencentcloud:As/scalingGroup:ScalingGroup"
CONFIG = "tencentcloud:As/scalingConfig:ScalingConfig"
POLICY = "tencentcloud:As/scalingPolicy:ScalingPolicy"
SCHEDULE = "tencentcloud:As/schedule:Schedule"
NAT = "tencentcloud:Nat/gateway:Gateway"
CVM = "tencentcloud:Instance/instance:Instance"
ALARM = "tencentcloud:Monitor/alarmPolicy:AlarmPolicy"
ROUTE = "tencentcloud:Route/tableEntry:TableEntry"
RULE = "tencentcloud:Clb/listenerRule:ListenerRule"
CERT = "tencentcloud:Ssl/certificate:Certificate"
SCF = "tencentcloud:Scf/function:Function"
HOOK = "tencentcloud:As/lifecycleHook:LifecycleHook"
TAT = "tencentcloud:Tat/command:Command"

# Documented limits the program derives values from (one place).
SCHEDULE_FORMAT = "%Y-%m-%dT%H:%M:%S%z"  # as_schedule: "YYYY-MM-DDThh:mm:ss+08:00" (UTC+8), parsed as RFC 3339
# AS scheduled actions read times (and the recurrence) in UTC+8: the API reference states no zone for Recurrence; its
# worked example (tccli 3.1.189.1 autoscaling/v20180419/examples.json, CreateScheduledAction "创建重复执行的定时任务")
# runs Recurrence "0 23 * * *" as "every day at 23:00 Beijing time" (StartTime ...T23:00:00+08:00).
CRON_ZONE_HOURS = 8
USER_DATA_MAX_BYTES = 16384  # as_scaling_config.html.markdown: user_data "the length limit is 16KB"
NAT_BANDWIDTHS = (20, 50, 100, 200, 500, 1000, 2000, 5000)
DISK_TYPES = ("LOCAL_BASIC", "LOCAL_SSD", "CLOUD_BASIC", "CLOUD_PREMIUM", "CLOUD_SSD", "CLOUD_HSSD", "CLOUD_TSSD", "CLOUD_BSSD")
PREPAID_PERIODS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 24, 36, 48, 60)  # cvm/extension_cvm.go CVM_PREPAID_PERIOD
# The SCF scaler (autoscaler.py). Runtime: scf/resource_tc_scf_function.go has no validator on `runtime`; Tencent's
# own provider examples use Python3.9 (scf/resource_tc_scf_trigger.md @693fd5c, 2026-07-27).
SCF_RUNTIME = "Python3.9"
SCF_MEM_MB = 128  # resource_tc_scf_function.go: mem_size in steps of 128 MB (default 128)
SCF_TIMEOUT_S = 30  # resource_tc_scf_function.go: timeout 1-900 s; the handler reads a few nodes over the VPC
SCF_TIMER_PERIOD_S = 60
# SCF timer triggers take a 7-field cron (second minute hour day month week year): every minute at second 0
# (https://www.tencentcloud.com/document/product/583/9708, "Timer Trigger", read 2026-12-03).
SCF_EVERY_MINUTE = "0 */1 * * * * *"
# AS policies that only the SCF scaler executes: a CPU alarm that can never hold; a SIMPLE policy must carry a MetricAlarm
# (as/v20180419 CreateScalingPolicyRequest: "在简单策略场景下必填"). MetricAlarm.Threshold for CPU_UTILIZATION is [1, 100]
# (tccli 3.1.189.1), so "below 0%" (threshold 0) is refused; "above 100%" is valid and never holds, whichever way the
# policy adjusts (the alarm's direction is not tied to the sign of AdjustmentValue), so both policies use it.
NEVER_OUT = {"comparison_operator": "GREATER_THAN", "threshold": 100}
NEVER_IN = {"comparison_operator": "GREATER_THAN", "threshold": 100}
DRAIN_COMMAND = "/usr/local/bin/gpufleet-drain"
RENEW_FLAGS = ("NOTIFY_AND_AUTO_RENEW", "NOTIFY_AND_MANUAL_RENEW", "DISABLE_NOTIFY_AND_MANUAL_RENEW")


def _hc(spec):
    return spec.load_balancer.health_check


RULES: tuple[Rule, ...] = (
    # --- Clb.Listener (clb/resource_tc_clb_listener.go; lists in clb/extension_clb.go)
    Rule(
        LISTENER,
        "protocol",
        "one_of",
        go("clb/resource_tc_clb_listener"),
        values=("TCP", "UDP", "HTTP", "HTTPS", "TCP_SSL", "QUIC"),
    ),
    Rule(LISTENER, "scheduler", "one_of", go("clb/resource_tc_clb_listener"), values=("WRR", "LEAST_CONN", "IP_HASH")),
    Rule(LISTENER, "target_type", "one_of", go("clb/resource_tc_clb_listener"), values=("NODE", "TARGETGROUP")),
    Rule(
        LISTENER,
        "health_check_type",
        "one_of",
        go("clb/resource_tc_clb_listener"),
        values=("CUSTOM", "PING", "TCP", "HTTP", "HTTPS", "GRPC", "GRPCS"),
    ),
    Rule(LISTENER, "health_check_http_version", "one_of", go("clb/resource_tc_clb_listener"), values=("HTTP/1.0", "HTTP/1.1")),
    Rule(LISTENER, "health_check_http_method", "one_of", go("clb/resource_tc_clb_listener"), values=("GET", "HEAD")),
    Rule(LISTENER, "health_check_http_code", "between", go("clb/resource_tc_clb_listener"), low=1, high=31),
    Rule(LISTENER, "health_source_ip_type", "one_of", go("clb/resource_tc_clb_listener"), values=(0, 1)),
    Rule(
        LISTENER,
        "port",
        "between",
        go("clb/resource_tc_clb_listener"),
        low=1,
        high=65535,
        spec="fleet.load_balancer.listener_port",
    ),
    Rule(
        LISTENER, "health_check_port", "between", go("clb/resource_tc_clb_listener"), low=1, high=65535, spec="fleet.serving.port"
    ),
    Rule(LISTENER, "listener_name", "length", go("clb/resource_tc_clb_listener"), low=1, high=60, spec="fleet.name"),
    Rule(
        LISTENER,
        "health_check_time_out",
        "between",
        go("clb/resource_tc_clb_listener"),
        low=2,
        high=60,
        spec="fleet.load_balancer.health_check.timeout_s",
        of_spec=lambda s: _hc(s).timeout_s,
    ),
    Rule(
        LISTENER,
        "health_check_interval_time",
        "between",
        go("clb/resource_tc_clb_listener"),
        low=2,
        high=300,
        spec="fleet.load_balancer.health_check.interval_s",
        of_spec=lambda s: _hc(s).interval_s,
    ),
    Rule(
        LISTENER,
        "health_check_health_num",
        "between",
        go("clb/resource_tc_clb_listener"),
        low=2,
        high=10,
        spec="fleet.load_balancer.health_check.healthy_threshold",
        of_spec=lambda s: _hc(s).healthy_threshold,
    ),
    Rule(
        LISTENER,
        "health_check_unhealth_num",
        "between",
        go("clb/resource_tc_clb_listener"),
        low=2,
        high=10,
        spec="fleet.load_balancer.health_check.unhealthy_threshold",
        of_spec=lambda s: _hc(s).unhealthy_threshold,
    ),
    Rule(
        LISTENER,
        "idle_connect_timeout",
        "between",
        go("clb/resource_tc_clb_listener") + " (Description: 300-900 for shared and dedicated instances)",
        low=300,
        high=900,
    ),
    # --- Clb.Instance
    Rule(
        CLB,
        "network_type",
        "one_of",
        go("clb/resource_tc_clb_instance"),
        values=("OPEN", "INTERNAL"),
        spec="fleet.load_balancer.public",
    ),
    Rule(CLB, "clb_name", "length", go("clb/resource_tc_clb_instance"), low=1, high=60, spec="fleet.name"),
    Rule(
        CLB,
        "subnet_id",
        "required",
        doc("clb_instance") + " (an INTERNAL CLB needs its subnet)",
        when={"network_type": "INTERNAL"},
    ),
    # --- As.ScalingGroup (as/resource_tc_as_scaling_group.go)
    Rule(GROUP, "scaling_group_name", "length", go("as/resource_tc_as_scaling_group"), low=1, high=55, spec="fleet.name"),
    Rule(GROUP, "min_size", "between", go("as/resource_tc_as_scaling_group"), low=0, high=2000, spec="fleet.replicas.min"),
    Rule(GROUP, "max_size", "between", go("as/resource_tc_as_scaling_group"), low=0, high=2000, spec="fleet.replicas.max"),
    Rule(
        GROUP,
        "termination_policies",
        "one_of",
        go("as/resource_tc_as_scaling_group"),
        values=("OLDEST_INSTANCE", "NEWEST_INSTANCE"),
    ),
    Rule(
        GROUP,
        "retry_policy",
        "one_of",
        go("as/resource_tc_as_scaling_group"),
        values=("IMMEDIATE_RETRY", "INCREMENTAL_INTERVALS", "NO_RETRY"),
    ),
    Rule(GROUP, "multi_zone_subnet_policy", "one_of", go("as/resource_tc_as_scaling_group"), values=("PRIORITY", "EQUALITY")),
    Rule(GROUP, "health_check_type", "one_of", doc("as_scaling_group"), values=("CVM", "CLB")),
    Rule(GROUP, "replace_mode", "one_of", doc("as_scaling_group"), values=("RECREATE", "RESET")),
    Rule(
        GROUP,
        "lb_health_check_grace_period",
        "between",
        go("as/resource_tc_as_scaling_group") + " (Description: 0-7200 s)",
        low=0,
        high=7200,
        spec="fleet.load_balancer.health_check.grace_period_s",
        of_spec=lambda s: _hc(s).grace_period_s,
    ),
    Rule(GROUP, "forward_balancer_ids", "conflicts", go("as/resource_tc_as_scaling_group"), others=("load_balancer_ids",)),
    # --- As.ScalingConfig (as/resource_tc_as_scaling_config.go; lists in as/extension_as.go)
    Rule(CONFIG, "configuration_name", "length", go("as/resource_tc_as_scaling_config"), low=1, high=60, spec="fleet.name"),
    Rule(
        CONFIG,
        "system_disk_type",
        "one_of",
        go("as/resource_tc_as_scaling_config"),
        values=DISK_TYPES,
        spec="fleet.disks.system.tier",
    ),
    Rule(
        CONFIG,
        "data_disks.disk_type",
        "one_of",
        go("as/resource_tc_as_scaling_config"),
        values=DISK_TYPES,
        spec="fleet.disks.data.tier",
    ),
    Rule(
        CONFIG,
        "system_disk_size",
        "between",
        go("as/resource_tc_as_scaling_config"),
        low=50,
        high=500,
        spec="fleet.disks.system.size_gib",
        of_spec=lambda s: s.disks.system.size_gib,
    ),
    Rule(
        CONFIG,
        "instance_charge_type",
        "one_of",
        doc("as_scaling_config"),
        values=("POSTPAID_BY_HOUR", "SPOTPAID", "PREPAID"),
        spec="fleet.billing.model",
    ),
    Rule(CONFIG, "spot_instance_type", "one_of", go("as/resource_tc_as_scaling_config"), values=("one-time",)),
    Rule(
        CONFIG,
        "spot_max_price",
        "pattern",
        go("as/resource_tc_as_scaling_config") + " (ValidateStringNumber)",
        regex=r"\d+(\.\d+)?",
        note='a decimal string such as "0.50"',
        spec="fleet.billing.spot_price_limit",
    ),
    Rule(
        CONFIG,
        "spot_max_price",
        "required",
        doc("as_scaling_config") + " (instance_charge_type: SPOTPAID must set spot_instance_type and spot_max_price)",
        when={"instance_charge_type": "SPOTPAID"},
        spec="fleet.billing.spot_price_limit",
    ),
    Rule(
        CONFIG,
        "spot_max_price",
        "requires",
        doc("as_scaling_config") + " (spot_max_price only with SPOTPAID)",
        others=("spot_instance_type",),
    ),
    Rule(
        CONFIG,
        "instance_name_settings.instance_name_style",
        "one_of",
        go("as/resource_tc_as_scaling_config"),
        values=("ORIGINAL", "UNIQUE"),
    ),
    Rule(
        CONFIG,
        "user_data",
        "length",
        doc("as_scaling_config") + " (Base64 user data, at most 16 KB)",
        low=0,
        high=USER_DATA_MAX_BYTES,
    ),
    # --- As.ScalingPolicy
    Rule(
        POLICY,
        "adjustment_type",
        "one_of",
        go("as/resource_tc_as_scaling_policy"),
        values=("CHANGE_IN_CAPACITY", "EXACT_CAPACITY", "PERCENT_CHANGE_IN_CAPACITY"),
    ),
    Rule(
        POLICY,
        "comparison_operator",
        "one_of",
        go("as/resource_tc_as_scaling_policy"),
        values=("GREATER_THAN", "GREATER_THAN_OR_EQUAL_TO", "LESS_THAN", "LESS_THAN_OR_EQUAL_TO", "EQUAL_TO", "NOT_EQUAL_TO"),
    ),
    Rule(
        POLICY,
        "metric_name",
        "one_of",
        go("as/resource_tc_as_scaling_policy"),
        values=("CPU_UTILIZATION", "MEM_UTILIZATION", "LAN_TRAFFIC_OUT", "LAN_TRAFFIC_IN", "WAN_TRAFFIC_OUT", "WAN_TRAFFIC_IN"),
    ),
    Rule(POLICY, "statistic", "one_of", go("as/resource_tc_as_scaling_policy"), values=("AVERAGE", "MAXIMUM", "MINIMUM")),
    Rule(POLICY, "period", "one_of", go("as/resource_tc_as_scaling_policy"), values=(60, 300)),
    Rule(
        POLICY,
        "continuous_time",
        "between",
        go("as/resource_tc_as_scaling_policy"),
        low=1,
        high=10,
        spec="fleet.autoscaling.evaluation_minutes",
    ),
    Rule(
        POLICY,
        "continuous_time",
        "between",
        go("as/resource_tc_as_scaling_policy"),
        low=1,
        high=10,
        spec="fleet.autoscaling.scale_in_evaluation_minutes",
        of_spec=lambda s: s.autoscaling.scale_in_evaluation_minutes,
    ),
    # --- Scf.Function (scf/resource_tc_scf_function.go)
    Rule(SCF, "timeout", "between", go("scf/resource_tc_scf_function"), low=1, high=900),
    Rule(SCF, "name", "length", go("scf/resource_tc_scf_function"), low=2, high=60),
    Rule(SCF, "handler", "length", go("scf/resource_tc_scf_function"), low=2, high=60),
    Rule(
        SCF,
        "vpc_id",
        "requires",
        go("scf/resource_tc_scf_function") + " (CheckIfSetTogether vpc_id, subnet_id)",
        others=("subnet_id",),
    ),
    Rule(
        SCF,
        "zip_file",
        "conflicts",
        go("scf/resource_tc_scf_function"),
        others=("cos_bucket_name", "cos_object_name", "cos_bucket_region", "image_configs"),
    ),
    Rule(
        SCF,
        "triggers.type",
        "one_of",
        go("scf/resource_tc_scf_function"),
        values=("timer", "ckafka", "custom_kafka", "apigw", "cmq", "cos", "mqtt", "cls", "clb", "mps", "vod", "cm", "eb", "http"),
    ),
    Rule(SCF, "triggers.name", "length", go("scf/resource_tc_scf_function"), low=1, high=100),
    # --- As.LifecycleHook (as/resource_tc_as_lifecycle_hook.go)
    Rule(
        HOOK,
        "lifecycle_transition",
        "one_of",
        go("as/resource_tc_as_lifecycle_hook"),
        values=("INSTANCE_LAUNCHING", "INSTANCE_TERMINATING"),
    ),
    Rule(HOOK, "default_result", "one_of", go("as/resource_tc_as_lifecycle_hook"), values=("CONTINUE", "ABANDON")),
    Rule(
        HOOK,
        "heartbeat_timeout",
        "between",
        go("as/resource_tc_as_lifecycle_hook"),
        low=30,
        high=7200,
        spec="fleet.autoscaling.drain_timeout_s",
        of_spec=lambda s: s.autoscaling.drain_timeout_s,
    ),
    Rule(
        HOOK,
        "lifecycle_command",
        "conflicts",
        go("as/resource_tc_as_lifecycle_hook") + " (NotificationTarget and LifecycleCommand cannot be set together)",
        others=("notification_target_type",),
    ),
    # --- Tat.Command (tat/resource_tc_tat_command.go)
    Rule(TAT, "command_type", "one_of", go("tat/resource_tc_tat_command"), values=("SHELL", "POWERSHELL", "BAT")),
    Rule(TAT, "timeout", "between", go("tat/resource_tc_tat_command"), low=1, high=86400),
    Rule(
        TAT,
        "command_name",
        "pattern",
        go("tat/resource_tc_tat_command"),
        regex=r"[A-Za-z0-9_.-]{1,60}",
        note="up to 60 of [a-z], [A-Z], [0-9] and [_-.]",
    ),
    # --- As.Schedule (as/resource_tc_as_schedule.go; common/validators.go ValidateAsScheduleTimestamp)
    Rule(
        SCHEDULE,
        "schedule_action_name",
        "length",
        go("as/resource_tc_as_schedule"),
        low=1,
        high=60,
        spec="fleet.autoscaling.schedules",
    ),
    Rule(
        SCHEDULE,
        "start_time",
        "date",
        go("as/resource_tc_as_schedule")
        + " (YYYY-MM-DDThh:mm:ss+08:00); AS API InvalidParameterValue.StartTimeBeforeCurrentTime",
        date_format=SCHEDULE_FORMAT,
        note="YYYY-MM-DDThh:mm:ss+08:00",
        future=True,
        spec="fleet.autoscaling.schedule_window_start",
    ),
    Rule(
        SCHEDULE,
        "end_time",
        "date",
        go("as/resource_tc_as_schedule") + " (YYYY-MM-DDThh:mm:ss+08:00)",
        date_format=SCHEDULE_FORMAT,
        note="YYYY-MM-DDThh:mm:ss+08:00",
        future=True,
        spec="fleet.autoscaling.schedule_window_start",
    ),
    Rule(
        SCHEDULE,
        "recurrence",
        "requires",
        go("as/resource_tc_as_schedule") + " (recurrence is set with end_time)",
        others=("end_time",),
    ),
    # --- Nat.Gateway (vpc/resource_tc_nat_gateway.go)
    Rule(
        NAT, "bandwidth", "one_of", go("vpc/resource_tc_nat_gateway"), values=NAT_BANDWIDTHS, spec="fleet.egress.bandwidth_mbps"
    ),
    Rule(NAT, "max_concurrent", "one_of", go("vpc/resource_tc_nat_gateway"), values=(1000000, 2000000, 3000000, 10000000)),
    Rule(NAT, "nat_product_version", "one_of", go("vpc/resource_tc_nat_gateway"), values=(1, 2)),
    Rule(NAT, "name", "length", go("vpc/resource_tc_nat_gateway"), low=1, high=60, spec="fleet.name"),
    Rule(
        ROUTE,
        "next_type",
        "one_of",
        go("vpc/resource_tc_route_table_entry"),
        values=(
            "CVM",
            "VPN",
            "DIRECTCONNECT",
            "PEERCONNECTION",
            "SSLVPN",
            "HAVIP",
            "NAT",
            "NORMAL_CVM",
            "EIP",
            "LOCAL_GATEWAY",
            "CCN",
            "GWLB",
        ),
    ),
    # --- Instance (subscription baseline; cvm/resource_tc_instance.go, lists in cvm/extension_cvm.go)
    Rule(
        CVM,
        "instance_charge_type",
        "one_of",
        go("cvm/resource_tc_instance"),
        values=("PREPAID", "POSTPAID_BY_HOUR", "SPOTPAID", "CDHPAID", "CDCPAID", "UNDERWRITE"),
    ),
    Rule(
        CVM,
        "instance_charge_type_prepaid_period",
        "one_of",
        go("cvm/resource_tc_instance"),
        values=PREPAID_PERIODS,
        spec="fleet.billing.period_months",
    ),
    Rule(CVM, "instance_charge_type_prepaid_renew_flag", "one_of", go("cvm/resource_tc_instance"), values=RENEW_FLAGS),
    Rule(CVM, "system_disk_type", "one_of", go("cvm/resource_tc_instance"), values=DISK_TYPES, spec="fleet.disks.system.tier"),
    Rule(CVM, "instance_name", "length", go("cvm/resource_tc_instance"), low=2, high=128, spec="fleet.name"),
    Rule(CVM, "user_data", "conflicts", go("cvm/resource_tc_instance"), others=("user_data_raw",)),
    Rule(CVM, "user_data", "length", doc("instance") + " (base64, up to 16 KB)", low=0, high=USER_DATA_MAX_BYTES),
    Rule(CVM, "orderly_security_groups", "conflicts", go("cvm/resource_tc_instance"), others=("security_groups",)),
    Rule(
        CVM,
        "instance_type",
        "pattern",
        f"{REPO} tencentcloud/common/validators.go ValidateInstanceType",
        regex=r".*\..*",
        note="FAMILY.SIZE, e.g. GN7.2XLARGE32",
    ),
    Rule(LISTENER, "clb_id", "length", go("clb/resource_tc_clb_listener"), low=1, high=60),
    Rule(NAT, "assigned_eip_sets", "ip", go("vpc/resource_tc_nat_gateway") + " (ValidateIp)"),
    Rule(
        "tencentcloud:Route/table:Table", "name", "length", go("vpc/resource_tc_route_table"), low=1, high=60, spec="fleet.name"
    ),
    Rule(ROUTE, "destination_cidr_block", "cidr", go("vpc/resource_tc_route_table_entry") + " (ValidateCIDRNetworkAddress)"),
    Rule(
        "tencentcloud:Security/group:Group",
        "name",
        "length",
        go("vpc/resource_tc_security_group"),
        low=1,
        high=60,
        spec="fleet.name",
    ),
    Rule("tencentcloud:Security/group:Group", "description", "length", go("vpc/resource_tc_security_group"), low=1, high=100),
    Rule(
        "tencentcloud:Subnet/instance:Instance", "name", "length", go("vpc/resource_tc_subnet"), low=1, high=60, spec="fleet.name"
    ),
    Rule(
        "tencentcloud:Subnet/instance:Instance",
        "cidr_block",
        "cidr",
        go("vpc/resource_tc_subnet") + " (ValidateCIDRNetworkAddress)",
        spec="fleet.network.subnet_prefix",
    ),
    Rule("tencentcloud:Vpc/instance:Instance", "name", "length", go("vpc/resource_tc_vpc"), low=1, high=60, spec="fleet.name"),
    Rule(
        "tencentcloud:Vpc/instance:Instance",
        "cidr_block",
        "cidr",
        go("vpc/resource_tc_vpc") + " (ValidateCIDRNetworkAddress)",
        spec="fleet.network.vpc_cidr",
    ),
    # --- HTTPS (load_balancer.tls; docs/tls.md). Listener certificate arguments: clb/resource_tc_clb_listener.go.
    Rule(LISTENER, "certificate_ssl_mode", "one_of", go("clb/resource_tc_clb_listener"), values=("UNIDIRECTIONAL", "MUTUAL")),
    Rule(
        LISTENER,
        "protocol",
        "requires",
        doc("clb_listener") + " (certificate_id: HTTPS and TCP_SSL listeners, must be set when available)",
        others=("certificate_id", "certificate_ssl_mode"),
        when={"protocol": ("HTTPS", "TCP_SSL")},
        spec="fleet.load_balancer.tls.certificate_id",
    ),
    # The health check of an HTTPS listener lives on its rule (clb/service_tencentcloud_clb.go checkHealthCheckPara:
    # "health para can only be set with TCP/UDP/TCP_SSL listener or rule of HTTP/HTTPS listener").
    Rule(
        RULE, "forward_type", "one_of", go("clb/resource_tc_clb_listener_rule"), values=("HTTP", "HTTPS", "GRPC", "GRPCS", "TRPC")
    ),
    Rule(RULE, "scheduler", "one_of", go("clb/resource_tc_clb_listener_rule"), values=("WRR", "LEAST_CONN", "IP_HASH")),
    Rule(RULE, "target_type", "one_of", go("clb/resource_tc_clb_listener_rule"), values=("NODE", "TARGETGROUP")),
    Rule(
        RULE,
        "health_check_type",
        "one_of",
        go("clb/resource_tc_clb_listener_rule") + " (HEALTH_CHECK_TYPE, clb/extension_clb.go)",
        values=("CUSTOM", "PING", "TCP", "HTTP", "HTTPS", "GRPC", "GRPCS"),
    ),
    Rule(RULE, "health_check_http_method", "one_of", go("clb/resource_tc_clb_listener_rule"), values=("GET", "HEAD")),
    Rule(RULE, "health_check_http_code", "between", go("clb/resource_tc_clb_listener_rule"), low=1, high=31),
    Rule(RULE, "health_source_ip_type", "one_of", go("clb/resource_tc_clb_listener_rule"), values=(0, 1)),
    Rule(
        RULE,
        "health_check_interval_time",
        "between",
        go("clb/resource_tc_clb_listener_rule"),
        low=2,
        high=300,
        spec="fleet.load_balancer.health_check.interval_s",
    ),
    Rule(
        RULE,
        "health_check_time_out",
        "between",
        go("clb/resource_tc_clb_listener_rule"),
        low=2,
        high=60,
        spec="fleet.load_balancer.health_check.timeout_s",
    ),
    *(
        Rule(
            RULE,
            arg,
            "between",
            go("clb/resource_tc_clb_listener_rule"),
            low=2,
            high=10,
            spec=f"fleet.load_balancer.health_check.{f}",
        )
        for arg, f in (("health_check_health_num", "healthy_threshold"), ("health_check_unhealth_num", "unhealthy_threshold"))
    ),
    Rule(
        RULE,
        "domain",
        "conflicts",
        go("clb/resource_tc_clb_listener_rule") + " (ExactlyOneOf domain, domains)",
        others=("domains",),
    ),
    Rule(CERT, "type", "one_of", go("ssl/resource_tc_ssl_certificate"), values=("CA", "SVR")),
    *(
        Rule(
            CERT,
            arg,
            "pattern",
            go("ssl/resource_tc_ssl_certificate") + f" ({arg}: no \\n prefix or suffix)",
            regex=r"(?s)[^\n](.*[^\n])?",
            note="PEM without a newline at the start or end",
            spec=f"fleet.load_balancer.tls.{field}",
        )
        for arg, field in (("cert", "certificate_config"), ("key", "private_key_config"))
    ),
    # --- no password login (keep_image_login: the golden image has none)
    Rule(
        CONFIG,
        "keep_image_login",
        "conflicts",
        go("as/resource_tc_as_scaling_config") + " (keep_image_login ConflictsWith password, key_ids)",
        others=("password", "key_ids"),
    ),
    Rule(CVM, "keep_image_login", "conflicts", go("cvm/resource_tc_instance"), others=("password", "key_ids", "key_name")),
    # --- Monitor.AlarmPolicy (monitor/resource_tc_monitor_alarm_policy.go)
    Rule(ALARM, "conditions.is_union_rule", "one_of", go("monitor/resource_tc_monitor_alarm_policy"), values=(0, 1)),
    Rule(ALARM, "remark", "length", go("monitor/resource_tc_monitor_alarm_policy"), low=0, high=100),
)

# --- Limits the vendor's own API reference states (tccli 3.1.189.1: tccli/services/<svc>/<version>/api.json, each request
# member's `document`), where the provider's schema states none or a looser one. Each cites `tccli==<version> <member>`;
# tests/system/test_spec_coverage.py checks the cited limit is still stated there. Read 2026-12-04.
API_SPEC = "tccli==3.1.189.1"
EIP = "tencentcloud:Eip/instance:Instance"
SG_RULES = "tencentcloud:Security/groupRuleSet:GroupRuleSet"


def api(member: str) -> str:
    return f"{API_SPEC} {member}"


_AS = "autoscaling/v20180419/"
_BASE64 = r"[A-Za-z0-9+/]*={0,2}"
_CHECK_TYPES = ("TCP", "HTTP", "HTTPS", "GRPC", "PING", "CUSTOM", "UDP")  # no GRPCS, which the provider's list has
_SG_PROTOCOLS = ("TCP", "UDP", "ICMP", "ICMPv6", "ALL")

RULES = RULES + (
    # AS: MetricAlarm.Threshold is [1, 100] for CPU and memory (so a "never below 0%" alarm is refused).
    *(
        Rule(
            POLICY,
            "threshold",
            "between",
            api(_AS + "CreateScalingPolicy:MetricAlarm.Threshold"),
            low=1,
            high=100,
            when={"metric_name": metric},
        )
        for metric in ("CPU_UTILIZATION", "MEM_UTILIZATION")
    ),
    Rule(POLICY, "policy_name", "length", api(_AS + "CreateScalingPolicy:ScalingPolicyName"), low=1, high=60, spec="fleet.name"),
    Rule(GROUP, "default_cooldown", "between", api(_AS + "CreateAutoScalingGroup:DefaultCooldown"), low=0, high=3600),
    Rule(
        GROUP,
        "desired_capacity",
        "between",
        api(_AS + "CreateAutoScalingGroup:DesiredCapacity"),
        low=0,
        high=2000,
        spec="fleet.replicas.min",
    ),
    Rule(
        GROUP,
        "forward_balancer_ids.target_attributes.port",
        "between",
        api(_AS + "CreateAutoScalingGroup:ForwardLoadBalancers.TargetAttributes.Port"),
        low=1,
        high=65535,
        spec="fleet.serving.port",
    ),
    Rule(
        GROUP,
        "forward_balancer_ids.target_attributes.weight",
        "between",
        api(_AS + "CreateAutoScalingGroup:ForwardLoadBalancers.TargetAttributes.Weight"),
        low=0,
        high=100,
    ),
    Rule(CONFIG, "user_data", "pattern", api(_AS + "CreateLaunchConfiguration:UserData"), regex=_BASE64, note="Base64"),
    Rule(CVM, "user_data", "pattern", api("cvm/v20170312/RunInstances:UserData"), regex=_BASE64, note="Base64"),
    Rule(
        CVM,
        "instance_charge_type",
        "one_of",
        api("cvm/v20170312/RunInstances:InstanceChargeType"),
        values=("PREPAID", "POSTPAID_BY_HOUR", "SPOTPAID"),
        spec="fleet.billing.model",
    ),
    Rule(
        CVM,
        "data_disks.data_disk_type",
        "one_of",
        api("cvm/v20170312/RunInstances:DataDisks.DiskType"),
        values=DISK_TYPES,
        spec="fleet.disks.data.tier",
    ),
    Rule(
        "tencentcloud:Cam/policy:Policy",
        "name",
        "length",
        api("cam/v20190116/CreatePolicy:PolicyName"),
        low=1,
        high=128,
        spec="fleet.name",
    ),
    Rule(
        "tencentcloud:Cam/role:Role",
        "name",
        "length",
        api("cam/v20190116/CreateRole:RoleName"),
        low=1,
        high=128,
        spec="fleet.name",
    ),
    Rule(LISTENER, "health_check_type", "one_of", api("clb/v20180317/CreateListener:HealthCheck.CheckType"), values=_CHECK_TYPES),
    Rule(RULE, "health_check_type", "one_of", api("clb/v20180317/CreateRule:Rules.HealthCheck.CheckType"), values=_CHECK_TYPES),
    Rule(RULE, "domain", "length", api("clb/v20180317/CreateRule:Rules.Domain"), low=1, high=80),
    Rule(RULE, "url", "length", api("clb/v20180317/CreateRule:Rules.Url"), low=1, high=200),
    Rule(
        EIP,
        "internet_charge_type",
        "one_of",
        api("vpc/v20170312/AllocateAddresses:InternetChargeType"),
        values=("BANDWIDTH_PACKAGE", "BANDWIDTH_POSTPAID_BY_HOUR", "BANDWIDTH_PREPAID_BY_MONTH", "TRAFFIC_POSTPAID_BY_HOUR"),
    ),
    # EIP bandwidth: the range depends on the charge type.
    *(
        Rule(
            EIP,
            "internet_max_bandwidth_out",
            "between",
            api("vpc/v20170312/AllocateAddresses:InternetMaxBandwidthOut"),
            low=1,
            high=high,
            when={"internet_charge_type": charge},
            spec="fleet.egress.bandwidth_mbps",
        )
        for charge, high in (
            ("BANDWIDTH_PACKAGE", 2000),
            ("BANDWIDTH_POSTPAID_BY_HOUR", 100),
            ("BANDWIDTH_PREPAID_BY_MONTH", 200),
            ("TRAFFIC_POSTPAID_BY_HOUR", 100),
        )
    ),
    Rule(
        ALARM, "policy_name", "length", api("monitor/v20180724/CreateAlarmPolicy:PolicyName"), low=1, high=60, spec="fleet.name"
    ),
    Rule(SCF, "description", "length", api("scf/v20180416/CreateFunction:Description"), low=0, high=1000),
    # The character sets of the two texts the program writes (review A3, A4; the provider checks the length only):
    # Description "最大支持 1000 个英文字母、数字、空格、逗号、换行符和英文句号，支持中文"; Remark "备注，不超过100字符，仅支持中英文、
    # 数字、下划线、-". Chinese is read as the CJK Unified Ideographs block (U+4E00-U+9FFF).
    Rule(
        SCF,
        "description",
        "pattern",
        api("scf/v20180416/CreateFunction:Description"),
        regex="[A-Za-z0-9 ,.\n\u4e00-\u9fff]{0,1000}",
        note="letters, digits, spaces, commas, newlines, periods and Chinese",
    ),
    Rule(
        ALARM,
        "remark",
        "pattern",
        api("monitor/v20180724/CreateAlarmPolicy:Remark"),
        regex="[A-Za-z0-9_\u4e00-\u9fff-]{0,100}",
        note="Chinese or English letters, digits, _ and - (no space)",
    ),
    # MemorySize "可选范围 64、128MB-3072MB，并且以 128MB 为阶梯" (review C4: the step was not encoded). 64 is listed
    # too; the rule keeps to 128-3072 as before (the program sends SCF_MEM_MB, 128).
    Rule(SCF, "mem_size", "one_of", api("scf/v20180416/CreateFunction:MemorySize"), values=tuple(range(128, 3073, 128))),
    # MaxConcurrentConnection "支持参数值：1000000、3000000、10000000 ... 当NatProductVersion参数值为2即标准型时，此参数无需
    # 填写，默认为2000000" (review C4: the provider's list, above, also takes 2000000, the standard NAT's own value).
    Rule(
        NAT,
        "max_concurrent",
        "one_of",
        api("vpc/v20170312/CreateNatGateway:MaxConcurrentConnection"),
        values=(1000000, 3000000, 10000000),
        when={"nat_product_version": 1},
    ),
    Rule(
        SG_RULES,
        "ingresses.protocol",
        "one_of",
        api("vpc/v20170312/ReplaceSecurityGroupPolicies:SecurityGroupPolicySet.Ingress.Protocol"),
        values=_SG_PROTOCOLS,
    ),
    Rule(
        SG_RULES,
        "egresses.protocol",
        "one_of",
        api("vpc/v20170312/ReplaceSecurityGroupPolicies:SecurityGroupPolicySet.Egress.Protocol"),
        values=_SG_PROTOCOLS,
    ),
    Rule(TAT, "description", "length", api("tat/v20201028/CreateCommand:Description"), low=None, high=120),
    # The VPC's block rests on Tencent Cloud VPC "Network Planning" (tencentcloud.com/document/product/215/31795, last
    # updated 2024-01-24): 10.0.0.0-10.255.255.255 and 172.16.0.0-172.31.255.255 with a mask of 12 to 28,
    # 192.168.0.0-192.168.255.255 of 16 to 28. The API member says less (review C3): CreateVpc CidrBlock
    # "仅能在10.0.0.0/12，172.16.0.0/12，192.168.0.0/16这三个内网网段内", read literally 10.0.0.0-10.15.255.255, which the
    # shipped 10.30-10.32.0.0/16 lie outside; the page's whole 10.0.0.0/8 is what the rule takes, so the page is its source.
    Rule(
        "tencentcloud:Vpc/instance:Instance",
        "cidr_block",
        "pattern",
        "https://www.tencentcloud.com/document/product/215/31795 (VPC Network Planning, last updated 2024-01-24: "
        "10.0.0.0/8 and 172.16.0.0/12 with a mask of 12 to 28, 192.168.0.0/16 of 16 to 28; tccli 3.1.189.1 vpc "
        "CreateVpc CidrBlock names 10.0.0.0/12, 172.16.0.0/12, 192.168.0.0/16)",
        regex=r"(10\.[0-9.]+|172\.(1[6-9]|2[0-9]|3[01])\.[0-9.]+)/(1[2-9]|2[0-8])|192\.168\.[0-9.]+/(1[6-9]|2[0-8])",
        note="a /12 to /28 block of 10.0.0.0/8 or 172.16.0.0/12, or a /16 to /28 block of 192.168.0.0/16",
        spec="fleet.network.vpc_cidr",
    ),
    # How many tags each destination takes (the fleet's tags, fleet.tags plus gpufleet:fleet and gpufleet:env, go to
    # every resource). The strictest is the nodes' own: InstanceTags "最多支持指定10个标签"; checks.LIST_CAPS["tags"]
    # caps the spec by it. CreateLaunchConfiguration Tags "每个启动配置最多支持30个标签", CreateAutoScalingGroup Tags
    # "每个伸缩组最多支持30个标签", CreateLoadBalancer Tags "最大支持20个标签键值对". Read 2026-12-06.
    *(
        Rule(type_, arg, "count", api(member), high=most, spec="fleet.tags")
        for type_, arg, member, most in (
            (CONFIG, "instance_tags", _AS + "CreateLaunchConfiguration:InstanceTags", 10),
            (CONFIG, "tags", _AS + "CreateLaunchConfiguration:Tags", 30),
            (GROUP, "tags", _AS + "CreateAutoScalingGroup:Tags", 30),
            (CLB, "tags", "clb/v20180317/CreateLoadBalancer:Tags", 20),
        )
    ),
    # The TAT drain command's tags: the list's length, i.e. the number of tags (the provider's doc: "At most 10 tags
    # are allowed"); cited without `==` since speclib reads the sentence as a length.
    Rule(
        TAT,
        "tags",
        "count",
        f'{doc("tat_command")}; tccli 3.1.189.1 tat/v20201028/CreateCommand:Tags "列表长度不超过10"',
        high=10,
        spec="fleet.tags",
    ),
    # The program sends one of each: InstanceTypes "最多支持10种实例机型"; SetLoadBalancerSecurityGroups SecurityGroups
    # "一个负载均衡实例最多可绑定50个安全组".
    Rule(CONFIG, "instance_types", "count", api(_AS + "CreateLaunchConfiguration:InstanceTypes"), high=10),
    Rule(CLB, "security_groups", "count", api("clb/v20180317/SetLoadBalancerSecurityGroups:SecurityGroups"), high=50),
)


# Where an SDK docstring's "Valid values" is narrower than what the provider validates: (type, arg) -> why, cited.
DOCSTRING_OVERRIDES: dict[tuple[str, str], str] = {
    (CONFIG, "system_disk_type"): "the docstring lists CLOUD_PREMIUM and CLOUD_SSD; the schema validates against "
    "SYSTEM_DISK_ALLOW_TYPE (" + go("as/extension_as") + "), which includes CLOUD_HSSD (the spec's `high` tier)",
}


# Arguments the program sends that the provider schema does not validate: (source file checked, arguments).
# Read at the REPO commit above: their schema entries carry no ValidateFunc (the documented "Valid values" of the
# installed SDK are checked for every argument by tests/contract/test_docstrings.py).
NO_CONSTRAINT: dict[str, tuple[str, tuple[str, ...]]] = {
    "tencentcloud:As/lifecycleHook:LifecycleHook": (
        f"{REPO} tencentcloud/services/as/resource_tc_as_lifecycle_hook.go",
        ("lifecycle_hook_name", "scaling_group_id"),
    ),
    "tencentcloud:Scf/function:Function": (
        f"{REPO} tencentcloud/services/scf/resource_tc_scf_function.go (runtime: no validator, rules.SCF_RUNTIME; mem_size: "
        "multiples of 128, rules.SCF_MEM_MB)",
        ("enable_public_net", "environment", "role", "runtime", "subnet_id", "tags"),
    ),
    "tencentcloud:Tat/command:Command": (
        f"{REPO} tencentcloud/services/tat/resource_tc_tat_command.go (content: at most 64 KB, sent as Base64)",
        ("content", "username"),
    ),
    "tencentcloud:As/attachment:Attachment": (
        f"{REPO} tencentcloud/services/as/resource_tc_as_attachment.go",
        (
            "instance_ids",
            "scaling_group_id",
        ),
    ),
    "tencentcloud:As/protectInstances:ProtectInstances": (
        f"{REPO} tencentcloud/services/as/resource_tc_as_protect_instances.go",
        (
            "auto_scaling_group_id",
            "instance_ids",
            "protected_from_scale_in",
        ),
    ),
    "tencentcloud:As/scalingConfig:ScalingConfig": (
        f"{REPO} tencentcloud/services/as/resource_tc_as_scaling_config.go",
        (
            "cam_role_name",
            "enhanced_monitor_service",
            "enhanced_security_service",
            "image_id",
            "internet_max_bandwidth_out",
            "public_ip_assigned",
            "security_group_ids",
        ),
    ),
    "tencentcloud:As/scalingGroup:ScalingGroup": (
        f"{REPO} tencentcloud/services/as/resource_tc_as_scaling_group.go",
        (
            "configuration_id",
            "replace_load_balancer_unhealthy",
            "replace_monitor_unhealthy",
            "subnet_ids",
            "vpc_id",
        ),
    ),
    "tencentcloud:As/scalingPolicy:ScalingPolicy": (
        f"{REPO} tencentcloud/services/as/resource_tc_as_scaling_policy.go",
        (
            "adjustment_value",
            "cooldown",
            "scaling_group_id",
        ),
    ),
    "tencentcloud:As/schedule:Schedule": (
        f"{REPO} tencentcloud/services/as/resource_tc_as_schedule.go",
        (
            "desired_capacity",
            "max_size",
            "min_size",
            "scaling_group_id",
        ),
    ),
    "tencentcloud:Cam/policy:Policy": (
        f"{REPO} tencentcloud/services/cam/resource_tc_cam_policy.go",
        (
            "description",
            "document",
        ),
    ),
    "tencentcloud:Cam/role:Role": (
        f"{REPO} tencentcloud/services/cam/resource_tc_cam_role.go",
        (
            "console_login",
            "description",
            "document",
            "tags",
        ),
    ),
    "tencentcloud:Cam/rolePolicyAttachment:RolePolicyAttachment": (
        f"{REPO} tencentcloud/services/cam/resource_tc_cam_role_policy_attachment.go",
        (
            "policy_id",
            "role_id",
        ),
    ),
    "tencentcloud:Clb/instance:Instance": (
        f"{REPO} tencentcloud/services/clb/resource_tc_clb_instance.go",
        (
            "delete_protect",
            "internet_charge_type",
            "load_balancer_pass_to_target",
            "vpc_id",
        ),
    ),
    "tencentcloud:Clb/listener:Listener": (
        f"{REPO} tencentcloud/services/clb/resource_tc_clb_listener.go",
        (
            "certificate_id",
            "health_check_http_path",
            "health_check_switch",
        ),
    ),
    "tencentcloud:Clb/listenerRule:ListenerRule": (
        f"{REPO} tencentcloud/services/clb/resource_tc_clb_listener_rule.go",
        (
            "clb_id",
            "health_check_http_path",
            "health_check_switch",
            "listener_id",
        ),
    ),
    "tencentcloud:Ssl/certificate:Certificate": (
        f"{REPO} tencentcloud/services/ssl/resource_tc_ssl_certificate.go",
        ("name", "tags"),
    ),
    "tencentcloud:Eip/instance:Instance": (
        f"{REPO} tencentcloud/services/cvm/resource_tc_eip.go",
        (
            "name",
            "tags",
        ),
    ),
    "tencentcloud:Instance/instance:Instance": (
        f"{REPO} tencentcloud/services/cvm/resource_tc_instance.go",
        (
            "allocate_public_ip",
            "availability_zone",
            "cam_role_name",
            "disable_api_termination",
            "image_id",
            "internet_max_bandwidth_out",
            "subnet_id",
            "system_disk_size",
            "tags",
            "vpc_id",
        ),
    ),
    "tencentcloud:Monitor/alarmPolicy:AlarmPolicy": (
        f"{REPO} tencentcloud/services/monitor/resource_tc_monitor_alarm_policy.go",
        (
            "enable",
            "monitor_type",
            "namespace",
            "notice_ids",
            "policy_tags",
            "project_id",
        ),
    ),
    "tencentcloud:Nat/gateway:Gateway": (
        f"{REPO} tencentcloud/services/vpc/resource_tc_nat_gateway.go",
        (
            "tags",
            "vpc_id",
        ),
    ),
    "tencentcloud:Route/table:Table": (
        f"{REPO} tencentcloud/services/vpc/resource_tc_route_table.go",
        (
            "tags",
            "vpc_id",
        ),
    ),
    "tencentcloud:Route/tableEntry:TableEntry": (
        f"{REPO} tencentcloud/services/vpc/resource_tc_route_table_entry.go",
        (
            "description",
            "next_hub",
            "route_table_id",
        ),
    ),
    "tencentcloud:Security/group:Group": (f"{REPO} tencentcloud/services/vpc/resource_tc_security_group.go", ("tags",)),
    "tencentcloud:Security/groupRuleSet:GroupRuleSet": (
        f"{REPO} tencentcloud/services/vpc/resource_tc_security_group_rule_set.go",
        ("security_group_id",),
    ),
    "tencentcloud:Subnet/instance:Instance": (
        f"{REPO} tencentcloud/services/vpc/resource_tc_subnet.go",
        (
            "availability_zone",
            "route_table_id",
            "tags",
            "vpc_id",
        ),
    ),
    "tencentcloud:Vpc/instance:Instance": (f"{REPO} tencentcloud/services/vpc/resource_tc_vpc.go", ("tags",)),
}


def no_constraint(type_: str, arg: str) -> str | None:
    entry = NO_CONSTRAINT.get(type_)
    return f"no documented constraint (checked: {entry[0]})" if entry and arg in entry[1] else None


# Provider-facing names and sizes other parts of gpufleet check (gpufleet.contract.name_problems): kind -> rules.
TAGS_DOC = "https://www.tencentcloud.com/document/product/651/13354 (tag naming limits)"
_TAG_CHARS = r"[\w+\-=._:/@()\[\],;><]([\w +\-=._:/@()\[\],;><]*[\w+\-=._:/@()\[\],;><])?"
NAMES: dict[str, tuple[Rule, ...]] = {
    "tag_key": (
        Rule("name", "tag_key", "length", TAGS_DOC, low=1, high=127),
        Rule(
            "name",
            "tag_key",
            "pattern",
            TAGS_DOC,
            regex=r"(?!qcs:|project:)" + _TAG_CHARS,
            note="letters, digits, inner spaces and + - = . _ : / @ ( ) [ ] , ; > <; not qcs:* or project:*",
        ),
    ),
    "tag_value": (
        Rule("name", "tag_value", "length", TAGS_DOC, low=1, high=255),
        Rule(
            "name",
            "tag_value",
            "pattern",
            TAGS_DOC,
            regex=_TAG_CHARS,
            note="letters, digits, inner spaces and + - = . _ : / @ ( ) [ ] , ; > <",
        ),
    ),
    "secret_name": (
        Rule(
            "name",
            "secret_name",
            "pattern",
            doc("ssm_secret") + " (secret_name)",
            regex=r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}",
            note="1-128 letters, digits, _ and -, starting with a letter or digit",
        ),
    ),
    "bucket_name": (
        Rule(
            "name",
            "bucket_name",
            "pattern",
            f"{REPO} tencentcloud/common/validators.go ValidateCosBucketName",
            regex=r"(?=.{1,60}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?-[0-9]{10}",
            note="<name>-<appid>: lowercase letters, digits, -, then - and the 10-digit APPID; at most 60",
        ),
    ),
    "user_data": (
        Rule(
            "name",
            "user_data",
            "length",
            doc("as_scaling_config") + " (user_data: base64, up to 16KB)",
            low=0,
            high=USER_DATA_MAX_BYTES,
            note="Base64",
        ),
    ),
}


# What tencentcloud-iac-pulumi 0.2.3 (provider v1.82.42) cannot do for the hardening of issue 14 (docs/tls.md).
GAPS: dict[str, str] = {
    "tls_policy": "Clb.Listener has no TLS security-policy argument: the HTTPS listener uses the CLB default policy",
    "redirect": "no HTTP->HTTPS redirect is declared (it needs an HTTP listener, a rule and Clb.Redirection): "
    "nothing listens on port 80",
    "disk_encryption": "As.ScalingConfig data_disks has no encrypt and neither AS nor Instance.Instance encrypts the "
    "system disk: only the subscription instances' data disks are encrypted (Instance.Instance data_disks.encrypt)",
    "protection": "As.ScalingGroup, Nat.Gateway and Eip.Instance have no deletion-protection argument: prod's are kept "
    "by Pulumi's protect option (a `pulumi destroy` stops at them; the console does not)",
}
