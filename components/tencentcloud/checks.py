"""What a spec must satisfy to be declared on Tencent Cloud, without importing the provider (used by stack validation).

- The node fetches the weights with coscli or curl: model.source is cos:// or https://.
- AS scheduled actions take times in UTC+8 (the AS API's ISO 8601 format): the spec's UTC cron is shifted
  by eight hours, and a day boundary shifts day-of-week / day-of-month; a cron that cannot be shifted exactly
  is a problem, not a silently different schedule.
- Cloud Monitor alarm policies notify through a notification template id (notice-...); another value is a
  note in the preview (the policies are declared without notification), not an error.
"""

from __future__ import annotations

UTC8_HOURS = 8


def cron_to_utc8(cron: str) -> str:
    """The spec's UTC cron as the same instants in UTC+8; ValueError (gpufleet.cron.CronError) when no single cron says that."""
    from gpufleet.cron import shift

    return shift(cron, UTC8_HOURS)


def spec_problems(spec) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if spec.model.source.startswith("oss://"):
        out.append(
            (
                "fleet.model.source",
                "an oss:// source is Alibaba OSS; Tencent nodes fetch from cos:// (COS) or https:// — "
                "copy the archive to a COS bucket in the region and point source at it",
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


def notes(spec) -> list[str]:
    contact = spec.alarms.contact_group
    if contact.startswith("notice-"):
        return []
    return [
        f"alarms.contact_group {contact!r} is not a Cloud Monitor notification template id (notice-...): the alarm policies "
        "are declared without notification; create a template in Cloud Monitor and put its id here"
    ]
