"""`--budget`: is a monthly total within an amount? A line without a price counts at its documented bound where it
has one (a declared cap); a total with a line that has none cannot pass unless the caller accepts comparing its lower
bound (`--allow-unpriced`), and then the verdict says so; even the lower bound above the budget fails."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from msgspec import Struct

from gpufleet.cost import figures, view
from gpufleet.errors import Problem, UserError


class Verdict(Struct, frozen=True):
    ok: bool
    message: str


def parse(text: str | None) -> Decimal | None:
    """The budget amount, or a UserError (exit 2) for anything but a finite number >= 0."""
    if text is None:
        return None
    try:
        amount = Decimal(text.strip().replace(",", "").replace("_", ""))
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite() or amount < 0:
        raise UserError([Problem("--budget", "", f"must be a finite number >= 0 (e.g. 25000), not {text!r}")])
    return amount


def check(e, limit: Decimal, allow_unpriced: bool = False) -> Verdict:
    """Pass or fail on what is known: the priced total is a lower bound; an unpriced line with a documented bound
    (`Line.quantity_bound`, a declared cap) adds at most its bound. Over when even the lower bound is over; within when
    the bounded total (priced + bounds) is; a line with no bound leaves the total open (not checked, unless
    --allow-unpriced compares the lower bound). The verdict names every line it bounded and how."""
    total, currency = view.total(e), e.currency
    missing = view.unpriced(e)
    bounded = [l for l in missing if l.bound_cost is not None]
    open_ = [l for l in missing if l.bound_cost is None]
    at_most = total + sum((l.bound_cost for l in bounded), Decimal(0))
    how = "".join(
        f"; bounded {l.resource_name}: {l.component} at most {l.bound_cost} {currency} ({l.bound_how})" for l in bounded
    )
    if missing and total > limit:
        return Verdict(
            False, f"over budget: even the lower bound {figures.at_least(total, False)} {currency} is above {limit}{how}"
        )
    if open_ and not allow_unpriced:
        names = "; ".join(f"{l.resource_name}: {l.component}" for l in open_[:5]) + ("; ..." if len(open_) > 5 else "")
        return Verdict(
            False,
            f"budget not checked: the total is incomplete ({figures.at_least(total, False)} {currency}; {len(open_)} line(s) without a price or "
            f"quantity and no documented bound: {names}){how}; price them (cost/data, usage file) or pass --allow-unpriced "
            "to compare the lower bound",
        )
    if open_:
        what = f"the lower bound {figures.at_least(total, False)} {currency} ({len(open_)} line(s) without a price or a bound are not in it)"
        ok = (at_most if bounded else total) <= limit
        if bounded:
            what += f", {at_most} with the bounded lines at their bounds"
    elif bounded:
        what = f"the bounded total: at most {at_most} {currency} (priced {total} + {len(bounded)} bounded line(s))"
        ok = at_most <= limit
    else:
        what = f"the monthly total {total} {currency}"
        ok = total <= limit
    if not ok:
        return Verdict(False, f"over budget: {what} > {limit}{how}")
    return Verdict(True, f"within budget: {what} <= {limit}{how}")
