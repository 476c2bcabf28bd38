"""A UTC schedule at 16:00 read in Tencent AS's UTC+8 is midnight of the next day.

By hand: Monday 16:00 UTC = Tuesday 00:00 UTC+8 (16 + 8 = 24 h: the day rolls over at 24, not after it), so
"0 16 * * 1-5" is "0 0 * * 2-6" in UTC+8; 15:00 UTC stays on the same day (23:00). Tencent AS reads recurrence in
UTC+8 (gpufleet/cron.py module doc; components/tencentcloud/checks.py shifts it).
"""

from datetime import UTC, datetime

from gpufleet import cron


def test_sixteen_utc_is_midnight_of_the_next_day_in_utc8():
    assert cron.shift("0 16 * * 1-5", 8) == "0 0 * * 2-6"
    assert cron.shift("0 15 * * 1-5", 8) == "0 23 * * 1-5"


def test_the_shifted_cron_fires_at_the_same_instants():
    start = datetime(2026, 12, 7, tzinfo=UTC)  # a Monday
    end = datetime(2026, 12, 21, tzinfo=UTC)
    utc = list(cron.firings("0 16 * * 1-5", start, end))
    shifted = list(cron.firings(cron.shift("0 16 * * 1-5", 8), start, end, cron.zone(8)))
    assert [t.astimezone(UTC) for t in shifted] == utc and len(utc) == 10
