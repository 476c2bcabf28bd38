"""How a cost figure reads wherever it is printed as text (terminal tables, HTML, Markdown, messages), one function per
kind of figure, so that no two formats can say it differently (issue 27 item 4). JSON, CSV and XLSX carry the same
figures as data (decimal strings or cells, `complete`, `low`, `high` with null/blank where there is no high end);
tests/test_formats_agree.py reads every format of every command back and compares.

- A total with a line that has no price is a lower bound: `≥ 123.45`. Never `>=`, never a bare number.
- A spread: `123.45 (110.00–140.00)`; a lower bound has no high end, so only its low end: `≥ 123.45 (low 110.00)`.
- A change (B minus A): `+12.00`, `+12.00 (+10.00–+14.00)`; a change with an unpriced side is a one-sided bound,
  said in words: `at most +400.00`, `at least −50.00`, or `not known` when neither side is bounded.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

SIGN = "≥"
AT_LEAST = SIGN + " "
UNPRICED = "unpriced"


def at_least(value: Decimal | str, complete: bool) -> str:
    """`123.45`, or `≥ 123.45` when a line without a price is left out of it."""
    return ("" if complete else AT_LEAST) + str(value)


def amount(value: Decimal, low: Decimal, high: Decimal | None, complete: bool, spread: bool = True) -> str:
    """A sum with its sourced spread: `123.45`, `123.45 (110.00–140.00)`, `≥ 123.45 (low 110.00)` (no high end)."""
    out = at_least(value, complete)
    if not spread or low == value == high or (not complete and low == value):
        return out
    return f"{out} ({span(low, high if complete else None)})"


def span(low: Decimal | str, high: Decimal | str | None) -> str:
    """The sourced spread of a sum: `110.00–140.00`, or `low 110.00` when it has no high end (a line without a price)."""
    return f"{low}–{high}" if high is not None else f"low {low}"


def signed(x: Decimal) -> str:
    return f"{x:+}"


def change(value: Decimal | None, low: Decimal | None, high: Decimal | None) -> str:
    """B minus A. With a side unpriced no single number exists: the bound that does exist, in words."""
    if value is not None and low == value == high:
        return signed(value)
    if value is not None and low is not None and high is not None:
        return f"{signed(value)} ({signed(low)}–{signed(high)})"
    if low is None and high is not None:
        return f"at most {signed(high)}"
    if high is None and low is not None:
        return f"at least {signed(low)}"
    return "not known"


def share(x: Decimal | None) -> str:
    """An overhead share for a table: 18.8%, or n/a while compute is unpriced (Estimate.overhead_share)."""
    return "n/a (compute unpriced)" if x is None else f"{x:.1%}"


def rounded(x: Decimal, places: int) -> str:
    """A figure the JSON gives in full, shortened for a table: rounded half up, as money is (never half to even)."""
    return str(x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))
