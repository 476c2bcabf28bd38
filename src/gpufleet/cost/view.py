"""What the exports, `cost tokens` and `cost report --all` read from an Estimate, in one place: completeness
(an estimate with an unpriced line is a lower bound), the total's range, source dates, each line's status, spread,
staleness and whether it is a cost the stacks share.
"""

from __future__ import annotations

from decimal import Decimal

from msgspec import Struct

from gpufleet.cost import figures
from gpufleet.cost.resources import NODE_CATEGORIES

ESTIMATED_QUALITIES = ("estimate", "third-party", "missing")
STATUSES = ("sourced", "estimated", "unpriced")


def complete(e) -> bool:
    """Every line of the estimate has a price and a quantity."""
    return bool(e.complete)


def total(e) -> Decimal:
    """The monthly total of the priced lines (a lower bound when the estimate is incomplete)."""
    return e.monthly_total


def total_range(e) -> tuple[Decimal, Decimal | None] | None:
    """(low, high) of the total where prices are ranges, else None; high is None when a line is unpriced (the
    total has no upper bound, as the JSON says)."""
    low, high = e.monthly_low, e.monthly_high
    if low is None or high is None:
        return None
    return (low, high if complete(e) else None)


def unpriced(e) -> list:
    return list(e.unpriced)


def oldest_as_of(e) -> str:
    """The date of the oldest price the total rests on."""
    return str(e.oldest_as_of or "")


def status(line) -> str:
    """sourced (official / vendor API price), estimated (estimate / third-party price) or unpriced (not in the total)."""
    if line.monthly_cost is None:
        return "unpriced"
    return "estimated" if line.price_quality in ESTIMATED_QUALITIES else "sourced"


def stale(line) -> bool:
    return bool(line.stale)


def line_range(line) -> tuple[Decimal, Decimal] | None:
    low, high = line.low, line.high
    return (low, high) if low is not None and high is not None else None


def shared(line) -> bool:
    """A cost the stacks of one cloud / region share (KMS instance, bucket, image snapshots): counted once across stacks."""
    return bool(line.shared)


def node_own(line) -> bool:
    """A line of one node's own cost: its instance or one of its disks (the `node` categories of
    cost/data/categories.yaml), and not a cost the stacks share (the image's snapshot is a disk line, but one bill for
    every node and stack booting the image). `cost tokens`' node-month is made of these; the simulation's trace bill
    prices them through its node-hours and every other line of the estimate for the trace's share of a month."""
    return line.category in NODE_CATEGORIES and not shared(line)


def shared_key(e, line) -> tuple:
    """Lines with the same key are the same shared cost in different stacks."""
    return (e.cloud, e.region, line.price_key, line.billing, line.shared_id or line.component)


def total_text(e) -> str:
    """The total as a reader must see it: `≥ X` when a line is not priced."""
    return figures.at_least(total(e), complete(e))


def category_texts(e) -> dict[str, str]:
    """Each category's priced part as a reader must see it: `≥ X` when one of its lines is not priced."""
    return {c: figures.at_least(a.value, a.complete) for c, a in e.categories.items()}


def category_unpriced(e) -> dict[str, int]:
    """How many lines of each category are not priced (0 for a complete category)."""
    return {c: a.lines - a.priced for c, a in e.categories.items()}


class Quality(Struct, frozen=True):
    """How much of a total rests on each kind of price."""

    sourced: Decimal
    estimated: Decimal
    unpriced_lines: int
    stale_lines: int

    @property
    def estimated_share(self) -> Decimal:
        whole = self.sourced + self.estimated
        return Decimal(0) if whole == 0 else (self.estimated / whole).quantize(Decimal("0.0001"))

    def sentence(self, currency: str) -> str:
        text = f"{self.estimated_share:.0%} of the priced total rests on estimated prices ({self.estimated} {currency})"
        if self.unpriced_lines:
            text += f"; {self.unpriced_lines} line(s) without a price are not in it"
        if self.stale_lines:
            text += f"; {self.stale_lines} price(s) older than a year"
        return text


def quality(e) -> Quality:
    money = {s: Decimal(0) for s in STATUSES}
    for l in e.lines:
        if l.monthly_cost is not None:
            money[status(l)] += l.monthly_cost
    return Quality(money["sourced"], money["estimated"], len(unpriced(e)), sum(1 for l in e.lines if stale(l)))
