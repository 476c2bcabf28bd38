from datetime import UTC, datetime, timedelta

import pytest

from gpufleet import cron

NOW = datetime(2026, 12, 3, 16, 0, tzinfo=UTC)  # a Thursday


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0 1 * * 1-5", "2026-12-04 01:00"),
        ("*/15 * * * *", "2026-12-03 16:15"),
        ("0 0 1 JAN *", "2027-01-01 00:00"),
        ("30 8 * * SAT,SUN", "2026-12-05 08:30"),
        ("0 0-12/6 * * *", "2026-12-04 00:00"),
        ("0 12 15 * 1", "2026-12-07 12:00"),  # day-of-month or day-of-week (Vixie cron)
        ("0 0 * * 7", "2026-12-06 00:00"),  # 7 is Sunday
    ],
)
def test_next_firing(text, expected):
    assert f"{cron.next_firing(text, NOW):%Y-%m-%d %H:%M}" == expected


def test_next_firing_in_a_cron_zone():
    assert cron.next_firing("0 9 * * *", NOW, cron.zone(8)).isoformat() == "2026-12-04T09:00:00+08:00"


@pytest.mark.parametrize(
    "text", ["*/0 * * * *", "61 * * * *", "* * *", "0 0 30 2 *", "0 5-2 * * *", "0 0 * FOO *", "0 0 1,,2 * *"]
)
def test_refused(text):
    with pytest.raises(cron.CronError):
        cron.next_firing(text, NOW)


def test_a_step_after_a_single_value_is_refused_with_the_range_to_write():
    """crontab(5) steps through a range (`a-b/n`, `*/n`); `5/15` is read as 5-59/15 by some crons and refused by others,
    and no scheduler doc of ESS or AS says which: refused, naming the range that says it."""
    with pytest.raises(cron.CronError, match=r"minute field: step '5/15' follows a single value; write a range, e.g. 5-59/15"):
        cron.parse("5/15 * * * *")
    assert sorted(cron.parse("5-59/15 * * * *").minutes) == [5, 20, 35, 50]


@pytest.mark.parametrize("text", ["0 1 * * 1-5", "30 20 * * 1-5", "0 18 * * 0,6", "0 20 15 * *", "0 10,20 * * *", "5 23 * * 7"])
def test_shift_keeps_the_instants(text):
    """The UTC cron and its UTC+8 form fire at the same instants (the next ten firings from a few starts)."""
    shifted = cron.shift(text, 8)
    for start in (NOW, datetime(2027, 2, 27, 22, 0, tzinfo=UTC), datetime(2027, 12, 31, 12, 0, tzinfo=UTC)):
        a, b = start, start
        for _ in range(10):
            a = cron.next_firing(text, a)
            b = cron.next_firing(shifted, b, cron.zone(8))
            assert a == b, (text, shifted, a, b)


def test_firings_from_the_start_minute_to_before_the_end():
    start = datetime(2026, 12, 7, 0, 0, 30, tzinfo=UTC)  # a Monday, 30 s into its first minute
    got = list(cron.firings("0 */6 * * *", start, datetime(2026, 12, 8, tzinfo=UTC)))
    assert [f"{t:%d %H:%M}" for t in got] == ["07 00:00", "07 06:00", "07 12:00", "07 18:00"]  # not 08 00:00: the end


def test_held_counts_each_schedule_until_any_fires_next():
    """The shipped prod schedules: business-day (Mon-Fri 01:00 UTC) and night (every day 14:00): night holds from
    14:00 to the next 01:00 on weekdays and all weekend (Friday 14:00 to Monday 01:00), 103 h a week, not 11 h a day."""
    monday = datetime(2026, 12, 7, tzinfo=UTC)
    day, night = cron.held(["0 1 * * 1-5", "0 14 * * *"], monday, monday + timedelta(days=7))
    assert (day, night) == (timedelta(hours=65), timedelta(hours=103))
    # alone, a schedule holds from its last firing on: nothing resets it
    assert cron.held(["0 14 * * *"], monday, monday + timedelta(days=1)) == [timedelta(days=1)]
    # at one minute the later in the list wins, as the simulation applies them
    assert cron.held(["0 14 * * *", "0 14 * * *"], monday, monday + timedelta(days=1)) == [timedelta(0), timedelta(days=1)]
    # in the cron's zone: 09:00 UTC+8 is 01:00 UTC
    in_utc8 = cron.held(["0 9 * * 1-5", "0 22 * * *"], monday, monday + timedelta(days=7), cron.zone(8))
    assert in_utc8 == [timedelta(hours=65), timedelta(hours=103)]


def test_held_counts_a_schedule_that_fired_long_before_from_the_start():
    """Where the schedules left a group at the start is the last firing before it, searched for up to cron.SEARCH_DAYS
    back: a yearly schedule (10 December) holds a week in early December; with one on 11 December, that one (last a
    year ago) holds at the start, the first from the 10th to the 11th, the second again from then on."""
    start = datetime(2026, 12, 7, tzinfo=UTC)
    assert cron.held(["0 0 10 12 *"], start, start + timedelta(days=7)) == [timedelta(days=7)]
    assert cron.held(["0 0 10 12 *", "0 0 11 12 *"], start, start + timedelta(days=7)) == [timedelta(days=1), timedelta(days=6)]
