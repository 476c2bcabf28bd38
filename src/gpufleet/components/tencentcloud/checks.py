"""What a spec must satisfy to be declared on Tencent Cloud, without importing the provider (used by stack validation).

- The node fetches the weights with coscli or curl: model.source is cos:// or https://.
- AS scheduled actions take times in UTC+8 (the AS API's ISO 8601 format): the spec's UTC cron is shifted
  by eight hours, and a day boundary shifts day-of-week / day-of-month; a cron that cannot be shifted exactly
  is a problem, not a silently different schedule.
- The API-key secret is an SSM secret name: letters, digits, - and _, starting with a letter or digit, at most
  128 bytes (SSM CreateSecret, SecretName: https://cloud.tencent.com/document/product/1105/40529, read 2026-12-03).
- A COS bucket is named <name>-<appid> (COS "Bucket Overview", naming rules:
  https://cloud.tencent.com/document/product/436/13312, read 2026-12-03); the node role's CAM resource names
  uid/<appid>, so a bucket without it would be refused by COS and widen the policy to uid/*.
- Cloud Monitor alarm policies notify through a notification template id (notice-...); another value is a
  note in the preview (the policies are declared without notification), not an error.
"""

from __future__ import annotations

from gpufleet import cron
from gpufleet.components.tencentcloud import names, rules
from gpufleet.registry import ListCap

# Tags: the fleet's tags go to every resource, so the spec takes what the strictest destination allows: the `count`
# rules on fleet.tags (rules.py; tccli 3.1.189.1, read 2026-12-06): the nodes' InstanceTags of the AS launch
# configuration, at most 10 ("最多支持指定10个标签"); the CLB 20, the AS group and the launch configuration 30; all under
# the 50 per resource of the tag service ("每个云资源允许的最大标签数是50", cloud.tencent.com/document/product/597/33355,
# updated 2021-12-28, read 2026-12-03). Keys starting qcloud, tencent or project are reserved (same page).
_TAG_COUNT = min((r for r in rules.RULES if r.kind == "count" and r.spec == "fleet.tags"), key=lambda r: r.high or 0)
MAX_TAGS = int(_TAG_COUNT.high or 0)
OWN_TAGS = 2  # gpufleet:fleet, gpufleet:env (FleetSpec.stack_tags)
RESERVED_TAG_PREFIXES = ("qcloud", "tencent", "project")
# Scheduled actions per AS group: NOT FOUND in the AS API reference (tccli api.json) nor in the pages searched
# (2026-12-05). ESTIMATE: gpufleet applies Alibaba ESS's documented 20 (alicloud/checks.py MAX_SCHEDULED_TASKS).
MAX_SCHEDULED_ACTIONS = 20
# Security group rules: SecurityGroupPolicyLimit 100 ("安全组下的最大规则数") in the documented answer of
# DescribeSecurityGroupLimits (cloud.tencent.com/document/api/215/41428, read 2026-12-05; the account's own value is
# what that API returns). One SSH CIDR is one rule of the nodes' group, one client CIDR one rule of the CLB's group
# (security.py), each next to gpufleet's own rules.
MAX_SECURITY_GROUP_RULES = 100

LIST_CAPS = {
    "autoscaling.schedules": ListCap(
        MAX_SCHEDULED_ACTIONS,
        f"Tencent Cloud AS publishes no scheduled-action quota; gpufleet keeps to {MAX_SCHEDULED_ACTIONS} per group "
        "(an estimate: Alibaba ESS's documented quota), one per schedule",
        "merge schedules",
    ),
    "tags": ListCap(
        MAX_TAGS - OWN_TAGS,
        f"Tencent Cloud takes at most {MAX_TAGS} tags on {_TAG_COUNT.arg} of {_TAG_COUNT.type.split(':')[1]} "
        f"({_TAG_COUNT.source}), the fewest of the resources the fleet's tags go to, and gpufleet adds its own "
        f"{OWN_TAGS} (gpufleet:fleet, gpufleet:env)",
    ),
    "network.ssh_cidrs": ListCap(
        MAX_SECURITY_GROUP_RULES,
        f"a Tencent Cloud security group holds at most {MAX_SECURITY_GROUP_RULES} rules (SecurityGroupPolicyLimit) "
        "and each CIDR is one rule",
        "name the operator networks by wider private ranges",
    ),
    "load_balancer.allowed_cidrs": ListCap(
        MAX_SECURITY_GROUP_RULES,
        f"a Tencent Cloud security group holds at most {MAX_SECURITY_GROUP_RULES} rules (SecurityGroupPolicyLimit); "
        "each client CIDR is one rule of the CLB's group",
        "name the client networks by wider ranges",
    ),
}


def tag_problems(spec) -> list[tuple[str, str]]:
    """Reserved tag keys (the number of tags is capped by LIST_CAPS["tags"], before the model)."""
    out = []
    for key in spec.tags:
        if key.lower().startswith(RESERVED_TAG_PREFIXES):
            out.append((f"fleet.tags.{key}", "Tencent Cloud reserves keys starting qcloud, tencent or project"))
    return out


def cron_to_utc8(text: str) -> str:
    """The spec's UTC cron as the same instants in the zone Tencent AS reads (UTC+8, rules.CRON_ZONE_HOURS);
    a ValueError (cron.CronError) when no single cron says that."""

    return cron.shift(text, rules.CRON_ZONE_HOURS)


def spec_problems(spec) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = names.problems(spec) + tag_problems(spec)
    if spec.model.source.startswith("oss://"):
        out.append(
            (
                "fleet.model.source",
                "an oss:// source is Alibaba OSS; Tencent nodes fetch from cos:// (COS) or https:// — "
                "copy the archive to a COS bucket in the region and point source at it",
            )
        )
    if spec.billing.model == "spot" and spec.billing.above_base_percent:
        out.append(
            (
                "fleet.billing.on_demand_above_base_percent",
                "Tencent AS groups of tencentcloud-iac-pulumi 0.2.3 have no mixed on-demand / spot allocation: the "
                "on-demand base is its own group and every node above it is spot; remove it (or set 0)",
            )
        )
    for i, s in enumerate(spec.autoscaling.schedules):
        try:
            cron_to_utc8(s.cron)
        except ValueError as exc:
            out.append(
                (
                    f"fleet.autoscaling.schedules.{i}.cron",
                    f"{s.cron!r} cannot be expressed as one Tencent AS recurrence (UTC+8): {exc}; split it into two schedules",
                )
            )
    return out


def scaling_notes(spec) -> list[str]:
    """What drives scaling and how fast it can react, from the spec (gpufleet preview)."""

    a = spec.autoscaling
    cool = f"at most one step per cooldown_s {a.cooldown_s} s"
    base = spec.billing.base if spec.billing.model == "spot" else 0
    out = []
    if a.metric == "cpu_utilization":
        out.append(
            f"scaling: AS alarms on CPU_UTILIZATION: out at >= {a.scale_out_above}% for {a.evaluation_minutes} x 60 s = "
            f"{a.evaluation_minutes * 60} s, in at <= {a.scale_in_below}% for {a.scale_in_evaluation_minutes} x 60 s; {cool}"
        )
    else:
        # deferred: the autoscaler component imports the Pulumi SDK and provider (~100 ms), and these checks run
        # wherever a stack is loaded (plan fit --stack included)
        from gpufleet.components.tencentcloud import autoscaler

        t = getattr(a, a.metric)
        unit = "%" if a.metric == "kv_cache" else " waiting"
        out.append(
            f"scaling: the SCF scaler reads every node's {autoscaler.METRICS_PATH} each {rules.SCF_TIMER_PERIOD_S} s "
            f"(timer) and executes the AS policy when the per-node average {a.metric} is above {t.scale_out_above:g}{unit} "
            f"(in: below {t.scale_in_below:g}{unit}): it reacts within {rules.SCF_TIMER_PERIOD_S} s of one reading "
            f"(autoscaling.evaluation_minutes does not apply); {cool}; before the first reading (no node answers yet) it "
            "holds, and it never scales in while a node does not answer (scaler/index.py decide). Cloud Monitor cannot "
            "carry a custom metric to AS (docs/scaling.md)"
        )
    if base:
        out.append(
            f"spot: {base} pay-as-you-go nodes in their own AS group (the on-demand base) behind the same listener; the "
            "scaling policies, the schedules and the SCF scaler act on the spot group"
        )
    out.append(
        f"drain: a node leaving an AS group runs /usr/local/bin/gpufleet-drain through TAT (INSTANCE_TERMINATING hook, "
        f"up to {a.drain_timeout_s} s); the image must keep the TAT agent"
    )
    return out


# What notifies someone: a Cloud Monitor notification template's id (AlarmPolicy NoticeIds, "notice-..."). Any other
# alarms.contact_group is declared with no NoticeIds (alarms.py): policies that notify nobody.
NOTICE_PREFIX = "notice-"


def notifies(contact: str) -> bool:
    """Whether the alarm policies go out with this alarms.contact_group as their notification template (alarms.py):
    an id after the prefix (a bare `notice-` names no template)."""
    return contact.startswith(NOTICE_PREFIX) and len(contact) > len(NOTICE_PREFIX)


def contact_group_problem(contact: str) -> str | None:
    """Why the alarms would notify nobody with this alarms.contact_group (a preview note; `region new` refuses it)."""
    if notifies(contact):
        return None
    return (
        f"{contact!r} is not a Cloud Monitor notification template id ({NOTICE_PREFIX}...): the alarm policies are "
        "declared without notification; create a template in Cloud Monitor and give its id"
    )


def notes(spec) -> list[str]:
    why = contact_group_problem(spec.alarms.contact_group)
    return scaling_notes(spec) + ([f"alarms.contact_group {why}"] if why else [])
