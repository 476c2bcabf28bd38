"""A cost exactly equal to its budget is within it, for a stack and for a team.

cost/budget.py prints "within budget: ... <= LIMIT" and "over budget: ... > LIMIT"; cost/teambudget.py the same
("over budget: ... > limit"): a budget is the most that may be spent, so spending all of it is not over. By hand:
25000.00 against 25000 is within, 25000.01 over; a team's 40000.00 own + 2000.00 shared = 42000.00 against 42000 within.
"""

from decimal import Decimal
from types import SimpleNamespace

from gpufleet.cost import budget, teambudget
from gpufleet.finance.allstacks import Group, Report


def test_a_stack_total_equal_to_the_budget_is_within():
    e = SimpleNamespace(monthly_total=Decimal("25000.00"), currency="CNY", unpriced=[])
    assert budget.check(e, Decimal(25000)).ok
    e = SimpleNamespace(monthly_total=Decimal("25000.01"), currency="CNY", unpriced=[])
    assert not budget.check(e, Decimal(25000)).ok


def test_a_team_cost_equal_to_its_budget_is_within():
    team = Group("search", ["s"], monthly=Decimal("40000.00"), allocated=Decimal("2000.00"))
    r = Report("team", "CNY", [team], Group("shared (counted once)"), Group("total", ["s"], monthly=Decimal("40000.00")), [])
    (v,) = teambudget.check(r, {"search": Decimal(42000)})
    assert v.ok and "within budget" in v.message, v.message
    (v,) = teambudget.check(r, {"search": Decimal("41999.99")})
    assert not v.ok
