"""`--currency USD --fx 7.12@2026-12-01`: an estimate shown in another currency at a rate the user gives, dated.

No sourced, dated exchange rate ships with the catalog (nothing here can fetch one), so a conversion needs --fx. The
rate is the catalog currency per unit of the target (CNY per USD). Every money figure of the estimate is divided by
it; the currency the reports print becomes "USD (converted from CNY at 7.12 CNY/USD, 2026-12-01)", and every
line says it was converted. A line whose CNY price was itself derived from an international-site USD list price (its
derivation names the catalog's CNY/USD of services) says so: converting it back at --fx gives a USD figure that is
not that list price (the two rates differ), and the list price is in its derivation, never silently replaced.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal, InvalidOperation

import msgspec
from msgspec import Struct

from gpufleet.clock import now
from gpufleet.cost.estimate import Amount, Estimate, Line, Scenario
from gpufleet.errors import Problem, UserError

CURRENCIES = ("CNY", "USD")
_FX = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*@\s*(\d{4}-\d{2}-\d{2})\s*$")
# A rate outside these bounds is a typo, not a CNY/USD rate (about 7 these years; 1.5 to 8.7 since 1980): a rate of
# 1e-30 overflowed the conversion (a decimal.InvalidOperation traceback), one of 1e30 turned every figure into 0.00.
FX_MIN, FX_MAX = Decimal("0.01"), Decimal("1000")


class Rate(Struct, frozen=True):
    source: str  # catalog currency (CNY)
    target: str  # USD
    per_unit: Decimal  # source per 1 target (7.12 CNY per USD)
    as_of: str

    def label(self) -> str:
        return f"{self.target} (converted from {self.source} at {self.per_unit} {self.source}/{self.target}, {self.as_of})"


def parse(currency: str | None, fx: str | None, catalog_currency: str = "CNY") -> Rate | None:
    """The rate to convert with, None for the catalog's own currency; a UserError (exit 2) for anything unclear."""
    if currency is None or currency == catalog_currency:
        if fx is not None and currency is None:
            raise UserError([Problem("--fx", "", "give --currency too (e.g. --currency USD --fx 7.12@2026-12-01)")])
        if fx is not None:
            raise UserError([Problem("--fx", "", f"not used with --currency {currency} (the catalog's own currency): drop --fx")])
        return None
    if currency not in CURRENCIES:
        raise UserError([Problem("--currency", "", f"unknown currency {currency!r}; one of {', '.join(CURRENCIES)}")])
    if fx is None:
        raise UserError(
            [
                Problem(
                    "--fx",
                    "",
                    f"give the rate as RATE@YYYY-MM-DD ({catalog_currency} per {currency}, e.g. 7.12@2026-12-01): "
                    "no sourced, dated rate ships with the catalog",
                )
            ]
        )
    m = _FX.match(fx)
    try:
        if not m:
            raise ValueError
        value, when = Decimal(m.group(1)), m.group(2)
        date.fromisoformat(when)
        if not FX_MIN <= value <= FX_MAX:
            raise ValueError
    except (ValueError, InvalidOperation):
        raise UserError(
            [
                Problem(
                    "--fx",
                    "",
                    f"expected RATE@YYYY-MM-DD with a rate from {FX_MIN} to {FX_MAX} {catalog_currency} per {currency} "
                    f"(e.g. 7.12@2026-12-01), not {fx!r}",
                )
            ]
        ) from None

    if date.fromisoformat(when) > (today := now().date()):  # a rate dated 2099 labelled every figure as of 2099
        raise UserError([Problem("--fx", "", f"{when} is after today ({today}): give the day the rate was quoted")])
    return Rate(catalog_currency, currency, value, when)


def _div(x: Decimal | None, r: Rate, places: str = "0.000001") -> Decimal | None:
    return None if x is None else (x / r.per_unit).quantize(Decimal(places))


def _money(x: Decimal | None, r: Rate) -> Decimal | None:
    return _div(x, r, "0.01")


def _line(l: Line, r: Rate) -> Line:
    from_usd = "CNY/USD of services" in (l.derivation or "")
    note = f"converted at {r.per_unit} {r.source}/{r.target} ({r.as_of})" + (
        f"; the {r.source} price came from a USD list price at the catalog's CNY/USD of services (see derivation): "
        "this is not that list price"
        if from_usd
        else ""
    )
    return msgspec.structs.replace(
        l,
        unit_price=_div(l.unit_price, r),
        price_low=_div(l.price_low, r),
        price_high=_div(l.price_high, r),
        monthly_cost=_money(l.monthly_cost, r),
        note=(l.note + "; " if l.note else "") + note,
    )


def _amount(a: Amount, r: Rate) -> Amount:
    def m(x: Decimal) -> Decimal:
        return (x / r.per_unit).quantize(Decimal("0.01"))

    return msgspec.structs.replace(a, value=m(a.value), low=m(a.low), high=m(a.high))


def convert(e: Estimate, r: Rate | None) -> Estimate:
    """The estimate in the rate's target currency (the same estimate when r is None)."""
    if r is None:
        return e
    if e.currency != r.source:
        raise UserError([Problem("--fx", "", f"the rate is {r.source}/{r.target} but {e.stack} is priced in {e.currency}")])
    out = msgspec.structs.replace(
        e,
        currency=r.label(),
        lines=[_line(l, r) for l in e.lines],
        assumptions=[*e.assumptions, f"every figure converted: {r.label()}; the rate is the user's (--fx), not sourced here"],
        converted_from=e.converted_from or e,
    )
    out.scenarios = {k: Scenario(s.name, s.nodes, s.how, _amount(s.total, r)) for k, s in e.scenarios.items()}
    if e.break_even:
        out.break_even = {
            k: (v if not isinstance(v, Decimal) or k.endswith("utilisation") else _div(v, r) if "hourly" in k else _money(v, r))
            for k, v in e.break_even.items()
        }
    return out
