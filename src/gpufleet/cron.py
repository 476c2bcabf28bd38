"""Five-field cron: parse, validate, translate between the clouds' time zones, and find the next (or last) firing.

Fields: minute hour day-of-month month day-of-week. Each field is `*`, a number, a range `a-b`, a step
`*/n` or `a-b/n` (n >= 1; `*/0` and a step after one value, `5/15`, are refused), a list of those, and names for months (JAN-DEC) and week days
(SUN-SAT; 0 and 7 are Sunday). As in Vixie cron, when both day-of-month and day-of-week are restricted a
day matches either of them.

Dialects: the spec's cron is UTC; Alibaba ESS reads `recurrence_value` as UTC
(website/docs/r/ess_scheduled_task.html.markdown: "a cron expression which is written in UTC"), Tencent AS
reads `recurrence` in UTC+8 (components/tencentcloud/checks.py shifts it). `next_firing` works in any fixed
offset, so preview shows each firing in the provider's zone and in UTC; `last_firing` finds the one before a time
(where the schedules left a group when a simulation starts); `firings` lists them over a span (the simulation fires
them), `held` how long each of a group's schedules holds over one (what `plan capacity --stack` checks).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone

from msgspec import Struct

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# (name, low, high, names) per field.
FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day-of-month", 1, 31, ()),
    ("month", 1, 12, MONTHS),
    ("day-of-week", 0, 7, DAYS),
)
MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # the most days each month has (29 February: leap years)
SEARCH_DAYS = 366 * 5  # a cron that never fires (e.g. 30 February) is reported, not searched forever


class CronError(ValueError):
    pass


class Cron(Struct, frozen=True):
    """A cron expression parsed into the values each field allows."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # day-of-month is *
    any_weekday: bool  # day-of-week is *

    def matches_day(self, day: datetime) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow


def _number(token: str, field: int) -> int:
    name, low, high, names = FIELDS[field]
    upper = token.upper()
    if upper in names:
        return names.index(upper) + (1 if field == 3 else 0)
    if not token.isdigit():
        raise CronError(f"{name} field: {token!r} is not a number" + (f" or a name ({', '.join(names)})" if names else ""))
    value = int(token)
    if not low <= value <= high:
        raise CronError(f"{name} field: {value} is outside {low}-{high}")
    return value


def _field(text: str, field: int) -> tuple[frozenset[int], bool]:
    name, low, high, _ = FIELDS[field]
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"{name} field: empty list item in {text!r}")
        base, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) == 0:
                raise CronError(f"{name} field: step {step_text!r} must be a whole number of at least 1")
            step = int(step_text)
        if base == "*":
            a, b = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            a, b = _number(first, field), _number(last, field)
            if a > b:
                raise CronError(f"{name} field: range {base!r} runs backwards")
        elif step_text:  # `5/15`: crontab(5) steps through a range ("a range followed by /<number>", or *); cron
            # implementations differ on a single number before the step, and what the clouds' schedulers read is unstated
            raise CronError(f"{name} field: step {part!r} follows a single value; write a range, e.g. {base}-{high}/{step_text}")
        else:
            a = b = _number(base, field)
        values.update(range(a, b + 1, step))
    if field == 4:
        values = {v % 7 for v in values}
    return frozenset(values), text == "*"


def _listing(values: frozenset[int]) -> str:
    return ", ".join(map(str, sorted(values)))


def parse(text: str) -> Cron:
    """The cron expression, or CronError saying which field is wrong and why."""
    parts = text.split()
    if len(parts) != 5:
        raise CronError(f"has {len(parts)} fields; needs 5: minute hour day-of-month month day-of-week")
    fields = [_field(p, i) for i, p in enumerate(parts)]
    days, months = fields[2][0], fields[3][0]
    if not fields[2][1] and fields[4][1] and not any(d <= MONTH_DAYS[m - 1] for d in days for m in months):
        # day-of-week `*`: only these days of these months (a restricted day-of-week would fire on its week days too)
        raise CronError(
            f"day-of-month field: never fires: none of the months {_listing(months)} has a day {_listing(days)} "
            "(e.g. 30 February, 31 April); choose a day those months have"
        )
    return Cron(
        text=text,
        minutes=fields[0][0],
        hours=fields[1][0],
        days=fields[2][0],
        months=fields[3][0],
        weekdays=fields[4][0],
        any_day=fields[2][1],
        any_weekday=fields[4][1],
    )


def next_firing(cron: Cron | str, after: datetime, tz: timezone = UTC) -> datetime:
    """The first minute strictly after `after` at which the cron fires, read in zone `tz`; returned in `tz`."""
    c = parse(cron) if isinstance(cron, str) else cron
    if after.tzinfo is None:
        raise CronError("next_firing needs an aware datetime")
    t = after.astimezone(tz).replace(second=0, microsecond=0) + timedelta(minutes=1)
    day = t.replace(hour=0, minute=0)
    for _ in range(SEARCH_DAYS):
        if c.matches_day(day):
            for h in sorted(c.hours):
                for m in sorted(c.minutes):
                    candidate = day.replace(hour=h, minute=m)
                    if candidate >= t:
                        return candidate
        day = day + timedelta(days=1)
    raise CronError(f"{c.text!r} never fires (no matching day in {SEARCH_DAYS} days)")


def last_firing(cron: Cron | str, before: datetime, tz: timezone = UTC) -> datetime | None:
    """The last minute strictly before `before` at which the cron fires, read in zone `tz`; returned in `tz`. None
    when it did not fire in the SEARCH_DAYS before (or before the first date Python represents)."""
    c = parse(cron) if isinstance(cron, str) else cron
    if before.tzinfo is None:
        raise CronError("last_firing needs an aware datetime")
    t = before.astimezone(tz)
    day = t.replace(hour=0, minute=0, second=0, microsecond=0)
    for _ in range(SEARCH_DAYS):
        if c.matches_day(day):
            for h in sorted(c.hours, reverse=True):
                for m in sorted(c.minutes, reverse=True):
                    candidate = day.replace(hour=h, minute=m)
                    if candidate < t:
                        return candidate
        try:
            day = day - timedelta(days=1)
        except OverflowError:
            return None
    return None


def firings(cron: Cron | str, start: datetime, end: datetime, tz: timezone = UTC) -> Iterator[datetime]:
    """Each minute from `start`'s minute on and before `end` at which the cron fires, read in zone `tz`; in `tz`."""
    c = parse(cron) if isinstance(cron, str) else cron
    t = start - timedelta(minutes=1)
    while (t := next_firing(c, t, tz)) < end:
        yield t


def held(crons: Sequence[Cron | str], start: datetime, end: datetime, tz: timezone = UTC) -> list[timedelta]:
    """How long each of several schedules holds between `start` and `end`, schedules that each set the same thing when
    they fire (a scaling group's min, max and desired): one holds from its firing until any of them fires next. At the
    start the one that fired last before `start`'s minute holds (none: nothing is counted until one fires); at one
    minute, the later in the list wins (the order the simulation applies them in, gpufleet.simulate.engine)."""
    parsed = [parse(c) if isinstance(c, str) else c for c in crons]
    first_minute = start.replace(second=0, microsecond=0)
    before = [(t, i) for i, c in enumerate(parsed) if (t := last_firing(c, first_minute, tz)) is not None]
    changes = [(start, max(before)[1])] if before else []
    changes += sorted((max(t, start), i) for i, c in enumerate(parsed) for t in firings(c, start, end, tz))
    out = [timedelta(0)] * len(parsed)
    for (at, i), (until, _) in zip(changes, [*changes[1:], (end, -1)]):
        out[i] += until - at
    return out


def zone(offset_hours: int) -> timezone:
    return UTC if offset_hours == 0 else timezone(timedelta(hours=offset_hours), f"UTC{offset_hours:+d}")


class Window(Struct, frozen=True):
    """When a recurring schedule starts firing and when its recurrence ends (aware datetimes, UTC)."""

    first: datetime
    end: datetime
    stored: bool  # the window start is written in the spec (else it is the day of the run)


def window(cron: str, autoscaling, now: datetime) -> Window:
    """The schedule window of one cron under the spec's autoscaling settings, from the time of the run."""
    start_day = autoscaling.schedule_window_start or now.astimezone(UTC).date()
    start = datetime(start_day.year, start_day.month, start_day.day, tzinfo=UTC)
    first = next_firing(cron, max(now, start) + timedelta(minutes=autoscaling.schedule_lead_minutes))
    return Window(
        first=first,
        end=start + timedelta(days=autoscaling.schedule_window_days),
        stored=autoscaling.schedule_window_start is not None,
    )


def _listed(text: str, field: int) -> list[int] | None:
    """A field of numbers, ranges and lists as its sorted values; None for `*`; CronError for steps and names
    (a shifted step or name is no longer exact)."""
    if text == "*":
        return None
    if "/" in text or any(c.isalpha() for c in text):
        raise CronError(f"{FIELDS[field][0]} field {text!r} uses steps or names, which cannot be shifted to another zone exactly")
    values, _ = _field(text, field)
    return sorted(values)


def _join(values: list[int]) -> str:
    """Sorted values as a cron list, runs of three or more written as ranges (2,3,4,5,6 -> 2-6)."""
    parts, run = [], [values[0]]
    for v in [*values[1:], None]:
        if v is not None and v == run[-1] + 1:
            run.append(v)
            continue
        parts.append(f"{run[0]}-{run[-1]}" if len(run) >= 3 else ",".join(map(str, run)))
        if v is not None:
            run = [v]
    return ",".join(parts)


def shift(text: str, hours: int) -> str:
    """The UTC cron `text` as the same instants read in UTC+`hours` (0 < hours < 24), e.g. Tencent AS's UTC+8;
    CronError when no single cron says that (hours falling on two days of a cron that names days, a month end)."""
    parse(text)
    minute, hour, dom, month, dow = text.split()
    listed = _listed(hour, 1)
    if listed is None:
        return text  # every hour: the same instants in any whole-hour zone
    shifted = sorted((h + hours) % 24 for h in listed)
    wraps = {h + hours >= 24 for h in listed}
    if wraps == {False}:
        return " ".join((minute, _join(shifted), dom, month, dow))
    if len(wraps) == 2 and (dom, dow) != ("*", "*"):
        raise CronError(f"hours {hour} fall on two different days in UTC{hours:+d} and the cron names days ({dom} {dow})")
    if dow != "*":
        days = _listed(dow, 4)
        assert days is not None  # None only for "*", excluded above
        dow = _join(sorted({(d + 1) % 7 for d in days}))
    if dom != "*":
        days = _listed(dom, 2)
        assert days is not None  # None only for "*", excluded above
        if 31 in days or month != "*":
            raise CronError(f"day-of-month {dom} would move past a month end in UTC{hours:+d}")
        dom = _join([d + 1 for d in days])
    return " ".join((minute, _join(shifted), dom, month, dow))
