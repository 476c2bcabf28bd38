"""The average running nodes of a week of schedules read every day-of-week form a stack may hold.

crontab(5): "day of week 0-7 (0 or 7 is Sunday, or use names)"; gpufleet/cron.py accepts both (its docstring:
"names for ... week days (SUN-SAT; 0 and 7 are Sunday)"), and `gpufleet check` passes such stacks. By hand, a schedule of
4 nodes at 01:00 every day and 2 at 14:00 every day holds 4 for 13 h and 2 for 11 h a day: (13 x 4 + 11 x 2) / 24 =
74 / 24 = 3.083333... nodes, however "every day" is written; "1-5" and "MON-FRI" are the same days.

cost/usage.py's own cron reader turned "1-7" into "1-0" (an empty range: average 2, the cost under-estimated by a third)
and parsed "MON" with int() (a ValueError traceback from `cost estimate`); it reads through gpufleet.cron now.
"""

from decimal import Decimal

from gpufleet.cost import usage

DAILY = Decimal(74) / Decimal(24)


def test_every_day_as_zero_to_six_is_the_hand_average():
    avg, _ = usage.schedule_average(2, [("0 1 * * 0-6", 4), ("0 14 * * *", 2)])
    assert avg == DAILY


def test_every_day_as_one_to_seven_is_the_same_average():
    avg, _ = usage.schedule_average(2, [("0 1 * * 1-7", 4), ("0 14 * * *", 2)])
    assert avg == DAILY


def test_day_names_are_the_same_days_as_numbers():
    by_number, _ = usage.schedule_average(2, [("0 1 * * 1-5", 4), ("0 14 * * *", 2)])
    by_name, _ = usage.schedule_average(2, [("0 1 * * MON-FRI", 4), ("0 14 * * *", 2)])
    assert by_name == by_number
