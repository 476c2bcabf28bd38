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

from gpufleet.components.tencentcloud import names

# Tags: at most 50 per resource; keys starting qcloud, tencent or project are reserved (Tencent Cloud tag
# limits, "每个云资源允许的最大标签数是50" / "qcloud、tencent、project 开头为系统预留标签键",
# cloud.tencent.com/document/product/597/33355, updated 2021-12-28, read 2026-12-03).
MAX_TAGS = 50
RESERVED_TAG_PREFIXES = ("qcloud", "tencent", "project")


def tag_problems(spec) -> list[tuple[str, str]]:
    tags = spec.stack_tags
    out = []
    if len(tags) > MAX_TAGS:
        out.append(
            ("fleet.tags", f"{len(tags)} tags with gpufleet's own 2; Tencent Cloud allows at most {MAX_TAGS} per resource")
        )
    for key in spec.tags:
        if key.lower().startswith(RESERVED_TAG_PREFIXES):
            out.append((f"fleet.tags.{key}", "Tencent Cloud reserves keys starting qcloud, tencent or project"))
    return out


def cron_to_utc8(text: str) -> str:
    """The spec's UTC cron as the same instants in the zone Tencent AS reads (UTC+8, rules.CRON_ZONE_HOURS);
    a ValueError (cron.CronError) when no single cron says that."""
    from gpufleet import cron
    from gpufleet.components.tencentcloud import rules

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
    from gpufleet.components.tencentcloud import rules

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


def notes(spec) -> list[str]:
    contact = spec.alarms.contact_group
    if contact.startswith("notice-"):
        return scaling_notes(spec)
    return scaling_notes(spec) + [
        f"alarms.contact_group {contact!r} is not a Cloud Monitor notification template id (notice-...): the alarm policies "
        "are declared without notification; create a template in Cloud Monitor and put its id here"
    ]
