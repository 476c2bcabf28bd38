"""`--budget`: is a monthly total within an amount? An incomplete total (a line without a price) cannot pass unless
the caller accepts comparing its lower bound (`--allow-unpriced`), and then the verdict says so."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from gpufleet.cost import view
from gpufleet.errors import Problem, UserError


@dataclass(frozen=True)
class Verdict:
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
    total, currency = view.total(e), e.currency
    missing = view.unpriced(e)
    if missing and not allow_unpriced:
        names = "; ".join(f"{l.resource_name}: {l.component}" for l in missing[:5]) + ("; ..." if len(missing) > 5 else "")
        return Verdict(
            False,
            f"budget not checked: the total is incomplete (>= {total} {currency}; {len(missing)} line(s) without a price or "
            f"quantity: {names}); price them (cost/data, usage file) or pass --allow-unpriced to compare the lower bound",
        )
    what = (
        f"the lower bound >= {total} {currency} ({len(missing)} line(s) without a price are not in it)"
        if missing
        else (f"the monthly total {total} {currency}")
    )
    if total > limit:
        return Verdict(False, f"over budget: {what} > {limit}")
    return Verdict(True, f"within budget: {what} <= {limit}")
