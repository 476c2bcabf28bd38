"""A team's budget is checked against its own cost plus its allocation of the shared costs.

cost/teambudget.py module doc: "each team's monthly cost (its own lines plus its allocation of the shared costs,
finance/allstacks.py) against the budget"; allstacks: "a group's `with shared` column is its own cost plus its
allocation". By hand: ml-platform's own 58000.00 + its 2500.00 of the shared KMS and bucket = 60500.00, over a budget of
60000 that its own cost alone would pass; search's 11000.00 + 500.00 = 11500.00 is within 12000.
"""

from decimal import Decimal

from gpufleet.cost import teambudget
from gpufleet.finance.allstacks import Group, Report


def _report():
    ml = Group("ml-platform", ["a"], monthly=Decimal("58000.00"), allocated=Decimal("2500.00"))
    search = Group("search", ["b"], monthly=Decimal("11000.00"), allocated=Decimal("500.00"))
    shared = Group("shared (counted once)", ["a", "b"], monthly=Decimal("3000.00"))
    total = Group("total", ["a", "b"], monthly=Decimal("72000.00"))
    return Report("team", "CNY", [ml, search], shared, total, [], "evenly")


def test_the_shared_allocation_takes_a_team_over_its_budget():
    verdicts = {v.group: v for v in teambudget.check(_report(), {"ml-platform": Decimal(60000), "search": Decimal(12000)})}
    ml, search = verdicts["ml-platform"], verdicts["search"]
    assert not ml.ok and ml.cost == Decimal("60500.00") and "over budget" in ml.message
    assert search.ok and search.cost == Decimal("11500.00")
