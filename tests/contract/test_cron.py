from datetime import UTC, datetime

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
