"""--allow-unpriced with both a bounded and an unbounded unpriced line: within only when priced + bounds is.

cost/budget.py check's rule: "an unpriced line with a documented bound (a declared cap) adds at most its bound ...
within when the bounded total (priced + bounds) is"; --allow-unpriced only drops the lines with no bound. By hand:
priced 1000.00, a NAT EIP's traffic capped at 250 GB x 0.80 = 200.00, a line with no bound: at most 1200.00 besides the
open line, so a budget of 1100 is over and one of 1200 within.
"""

from decimal import Decimal
from types import SimpleNamespace

from gpufleet.cost import budget
from gpufleet.cost.estimate import Line


def _line(name, quantity_bound=None, unit_price=None):
    return Line(
        resource_type="t",
        resource_name=name,
        component=f"{name} traffic",
        unit="GB",
        monthly_quantity=None,
        unit_price=unit_price,
        monthly_cost=None,
        category="network",
        price_quality="list",
        price_key="k",
        billing="payg",
        source="s",
        as_of="2026-12-01",
        quantity_bound=quantity_bound,
        bound_how="the declared cap",
    )


def _estimate():
    bounded = _line("nat-eip", quantity_bound=Decimal(250), unit_price=Decimal("0.80"))
    return SimpleNamespace(monthly_total=Decimal("1000.00"), currency="CNY", unpriced=[bounded, _line("bucket")])


def test_the_bounds_count_against_the_budget_with_allow_unpriced():
    over = budget.check(_estimate(), Decimal(1100), allow_unpriced=True)
    assert not over.ok and "1200.00 with the bounded lines at their bounds" in over.message, over.message
    within = budget.check(_estimate(), Decimal(1200), allow_unpriced=True)
    assert within.ok, within.message
