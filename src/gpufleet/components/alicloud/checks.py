"""What a spec must satisfy to be declared on Alibaba Cloud, without importing the provider (used by stack validation)."""

from __future__ import annotations

from gpufleet.components.alicloud import names
from gpufleet.images import scaling_signals
from gpufleet.registry import ListCap

# Tags: at most 20 on a scaling group (Auto Scaling TagResources, "You can attach up to 20 tags to a scaling
# group", alibabacloud.com/help/en/auto-scaling/developer-reference/api-ess-2014-08-28-tagresources, read
# 2026-12-03); keys must not start with `aliyun` or `acs:` nor contain http:// or https:// (Alibaba Cloud tag
# rules, e.g. helpcdn.aliyun.com/document_detail/137457.html "使用限制", read 2026-12-03).
MAX_TAGS = 20
RESERVED_TAG_PREFIXES = ("aliyun", "acs:")
# Scheduled tasks: "A maximum of 20 scheduled tasks can be created under an account" (Auto Scaling limits,
# alibabacloud.com/help/doc-detail/25863.htm, read 2026-12-05); the current limits page and DescribeLimitation's
# MaxNumberOfScheduledTasks ("in a region by using an Alibaba Cloud account", alibabacloud_ess20220222 1.13.3
# models/_describe_limitation_response_body.py) send the account's own value to Quota Center. One spec schedule is one
# ESS scheduled task (scaling.py), and the quota is shared by every fleet of the account in the region.
MAX_SCHEDULED_TASKS = 20
# Security group rules: "The total number of outbound and inbound rules in each security group cannot exceed 200"
# (AuthorizeSecurityGroup, alibabacloud.com/help/en/ecs/api-authorizesecuritygroup, updated 2024-11-14, read
# 2026-12-05; the 2019 FAQ said 100, and the 2026-01 page states 1,000 across the groups of one network interface).
# One SSH CIDR is one ingress rule of the nodes' group (security.py), next to gpufleet's own.
MAX_SECURITY_GROUP_RULES = 200
# CLB access control lists: "The maximum number of IP entries that each network ACL can contain: 300"
# (AddAccessControlListEntry, alibabacloud.com/help/en/slb/classic-load-balancer/developer-reference/
# api-slb-2014-05-15-addaccesscontrollistentry, updated 2025-04-23, read 2026-12-05). One client CIDR is one entry.
MAX_ACL_ENTRIES = 300

LIST_CAPS = {
    "autoscaling.schedules": ListCap(
        MAX_SCHEDULED_TASKS,
        f"Alibaba Cloud ESS allows {MAX_SCHEDULED_TASKS} scheduled tasks per account in a region (quota "
        "MaxNumberOfScheduledTasks, Auto Scaling limits), one per schedule",
        "merge schedules, or raise the quota in Quota Center and keep within it",
        scope="region",
    ),
    "tags": ListCap(
        MAX_TAGS - 2,
        f"Alibaba Cloud allows {MAX_TAGS} tags on a scaling group (ESS TagResources) and gpufleet adds its own 2 "
        "(gpufleet:fleet, gpufleet:env)",
    ),
    "network.ssh_cidrs": ListCap(
        MAX_SECURITY_GROUP_RULES,
        f"an Alibaba Cloud ECS security group holds at most {MAX_SECURITY_GROUP_RULES} rules, in and out together, "
        "and each CIDR is one rule",
        "name the operator networks by wider private ranges",
    ),
    "load_balancer.allowed_cidrs": ListCap(
        MAX_ACL_ENTRIES,
        f"an Alibaba Cloud CLB access control list holds at most {MAX_ACL_ENTRIES} entries (AddAccessControlListEntry), "
        "and each CIDR is one entry",
        "name the client networks by wider ranges",
    ),
}


def tag_problems(spec) -> list[tuple[str, str]]:
    """Reserved tag keys (the number of tags is capped by LIST_CAPS["tags"], before the model)."""
    out = []
    for key in spec.tags:
        if key.lower().startswith(RESERVED_TAG_PREFIXES) or "http://" in key or "https://" in key:
            out.append(
                (f"fleet.tags.{key}", "Alibaba Cloud reserves keys starting aliyun or acs: and refuses http(s):// in keys")
            )
    return out


def spec_problems(spec) -> list[tuple[str, str]]:
    if spec.model.source.startswith("cos://"):
        return tag_problems(spec) + [
            (
                "fleet.model.source",
                "a cos:// source is Tencent COS; Alibaba nodes fetch from oss:// (OSS, with the node's RAM role) "
                "or https:// — copy the archive to an OSS bucket in the region and point source at it",
            )
        ]
    return tag_problems(spec) + names.problems(spec)


def scaling_note(spec) -> str:
    """What drives scaling and how fast it can react, from the spec (gpufleet preview)."""

    a = spec.autoscaling
    cool = f"at most one step per cooldown_s {a.cooldown_s} s"
    if a.metric == "cpu_utilization":
        return (
            f"scaling: ESS event-triggered tasks on CpuUtilization: out at >= {a.scale_out_above}% for "
            f"{a.evaluation_minutes} x 60 s = {a.evaluation_minutes * 60} s, in at <= {a.scale_in_below}% for "
            f"{a.scale_in_evaluation_minutes} x 60 s; {cool}"
        )
    sig = scaling_signals.load()
    t = getattr(a, a.metric)
    unit = "%" if a.metric == "kv_cache" else " waiting"
    out_s = sig.period_s * a.evaluation_minutes
    return (
        f"scaling: ESS event-triggered tasks on the custom metric {sig.name(a.metric)} (per-node average in the fleet's "
        f"CloudMonitor group, dimension {sig.dimension}): out above {t.scale_out_above:g}{unit} for {a.evaluation_minutes} x "
        f"{sig.period_s} s = {out_s} s (+ up to {sig.period_s} s until the nodes' next report: {out_s + sig.period_s} s, "
        f"and CloudMonitor's report lag; `plan scaling` gives the whole reaction), in when waiting < {a.queue.scale_in_below:g} and KV cache < {a.kv_cache.scale_in_below:g}% for "
        f"{a.scale_in_evaluation_minutes} x {sig.period_s} s; {cool}; a node leaving runs the drain for up to "
        f"{a.drain_timeout_s} s (SCALE_IN lifecycle hook); {NO_DATA}"
    )


# Before the first data point: what ESS does with a custom metric nobody has published yet (a new fleet, a node still
# loading: the agent publishes only what vLLM answers, images/node_agent.py). ESS's CreateAlarm takes no no-data
# setting; an alarm without data is in its documented INSUFFICIENT_DATA state ("Auto Scaling cannot determine whether the
# alert condition is met due to insufficient data", DescribeAlarms State, alibabacloud_ess20220222 1.13.3), where it
# executes no scaling rule.
NO_DATA = (
    "before the first data point (a new fleet; a node still loading publishes nothing) both tasks are INSUFFICIENT_DATA "
    "and ESS runs neither: the group holds its size, and nodes that never publish never scale it (docs/first-hour.md)"
)


def contact_group_problem(contact: str) -> str | None:
    """None: CloudMonitor takes alarms.contact_group as an alert contact group's name (ContactGroups,
    ContactGroupList), of any form the spec accepts; whether the group exists is the account's (docs/monitoring.md)."""
    return None


def notes(spec) -> list[str]:
    lb = spec.load_balancer
    return [
        scaling_note(spec),
        f"load_balancer.request_timeout_s {lb.request_timeout_s}: the HTTP listener answers 504 to a request that has not "
        "finished within it; stream long generations (stream: true) or keep max_tokens within what the node generates in "
        "that time (the gateway itself waits serving.gateway.read_timeout_s)",
    ]
