"""`cost compare`'s answer: the cheapest option, its margin over the current one (the stack as declared), and how
sure that order is. One home for the rules; the table, JSON, HTML and XLSX all print what `decide` returns.

Two options are compared pairwise, on what differs between them:
1. Lines common to both cancel: the same resource (type and name), component, catalog row, billing, quantity and unit
   price on both sides (a NAT gateway, a shared bucket, a usage line unknown on both sides alike) add the same amount
   (or the same unknown) to both totals and say nothing about which is cheaper.
2. A line left without a price or quantity:
   - with a documented bound (`Line.quantity_bound`: a cap the program declares and the vendor enforces, such as an
     EIP's bandwidth cap for its traffic) counts at that bound (its high; its low adds nothing);
   - otherwise the unknown it rests on (a usage key such as `lb_lcu_hours`, or a missing catalog row) is "not
     compared": every line resting on it is left out on BOTH sides alike, and the decision names it.
3. Each side is then a central value with the sourced spread of its prices (low-high). The margin is the other
   option's central minus this one's; its range runs from other.low - this.high to other.high - this.low.
4. Confidence of "A is cheaper than B": `certain` when the ranges do not overlap (the margin's low end is above 0),
   `likely` when the central margin is positive and one side's central lies outside the other's range, `toss-up`
   otherwise (the centrals sit inside each other's spread: the sourced prices cannot order them).
The spreads of two options are taken as independent (they often rest on the same quotes, which makes `toss-up`
the cautious reading).
5. An option whose GPU compute has a line without a price or bound (compute_unknowns) is not ranked: leaving its nodes
   out would make it the cheapest on a total without them. It is named with what its compute rests on; when it is the
   current option, the answer is the cheapest of the others, with no margin against it.
"""

from __future__ import annotations

import re
from decimal import Decimal

from msgspec import Struct, field

from gpufleet.cost import view
from gpufleet.cost.estimate import Estimate, Line, money
from gpufleet.cost.resources import COMPUTE

CONFIDENCES = ("certain", "likely", "toss-up")
_USAGE = re.compile(r"\busage (\w+)")


def _identity(l: Line) -> tuple:
    return (l.resource_type, l.resource_name, l.component, l.price_key, l.billing, l.monthly_quantity, l.unit_price)


def usage_key(l: Line) -> str | None:
    """The usage key a line's quantity comes from (`lb_lcu_hours`), from its note; None for a declared quantity."""
    m = _USAGE.search(l.note or "")
    return m.group(1) if m else None


def unknown(l: Line) -> str:
    """What an unpriced line's missing amount rests on: its usage key, else its missing catalog row (for a subscription
    term the catalog does not price, that row and term)."""
    key = usage_key(l) if l.monthly_quantity is None else None
    if key:
        return f"usage {key}"
    term = f" ({l.billing}, a {l.term_months}-month term)" if l.term_unpriced else ""
    return f"price {l.price_key or l.component}{term}"


def _rests_on(l: Line, what: str) -> bool:
    key = usage_key(l)
    return (key is not None and what == f"usage {key}") or (l.monthly_cost is None and unknown(l) == what)


def compute_unknowns(e: Estimate) -> list[str]:
    """What an option's GPU compute rests on that has no price and no bound (a missing instance row, a subscription
    term the catalog does not price): such an option is not ranked, since comparing the rest of it would compare a
    fleet without its nodes (rule 5 of the module doc)."""
    return sorted({unknown(l) for l in e.lines if l.category == COMPUTE and l.monthly_cost is None and l.bound_cost is None})


class Side(Struct, frozen=True):
    """One option's part of a pairwise comparison: central value and the sourced spread (low-high)."""

    value: Decimal
    low: Decimal
    high: Decimal
    lines: int


def _cancel(a: list[Line], b: list[Line]) -> tuple[list[Line], list[Line], int]:
    """Each line of `a` with an identical line in `b` cancels one of them (a multiset difference)."""
    pool: dict[tuple, int] = {}
    for l in b:
        pool[_identity(l)] = pool.get(_identity(l), 0) + 1
    left_a, cancelled = [], 0
    for l in a:
        k = _identity(l)
        if pool.get(k):
            pool[k] -= 1
            cancelled += 1
        else:
            left_a.append(l)
    seen: dict[tuple, int] = {}
    left_b = []
    for l in b:
        k = _identity(l)
        seen[k] = seen.get(k, 0) + 1
        if seen[k] > sum(1 for x in a if _identity(x) == k):
            left_b.append(l)
    return left_a, left_b, cancelled


def _side(lines: list[Line]) -> Side:
    value = low = high = Decimal(0)
    for l in lines:
        if l.monthly_cost is not None:
            value += l.monthly_cost
            low += l.low if l.low is not None else l.monthly_cost
            high += l.high if l.high is not None else l.monthly_cost
        else:  # bounded (the caller keeps only priced and bounded lines)
            b = l.bound_cost or Decimal(0)
            value += b
            high += b
    return Side(money(value), money(low), money(high), len(lines))


class Pair(Struct, frozen=True):
    """`b` against `a`: margin = b - a (positive: a is cheaper)."""

    a: Side
    b: Side
    margin: Decimal
    margin_low: Decimal
    margin_high: Decimal
    confidence: str  # of the order the central margin gives (a cheaper when margin > 0)
    cancelled: int
    bounded: tuple[str, ...]  # "resource: component at most X (how)"
    not_compared: tuple[str, ...]  # the unknowns left out on both sides


def confidence(cheap: Side, dear: Side) -> str:
    """How sure it is that `cheap` costs less than `dear` (rule 4 of the module doc)."""
    if cheap.high < dear.low:
        return "certain"
    if cheap.value < dear.value and (cheap.value < dear.low or cheap.high < dear.value):
        return "likely"
    return "toss-up"


def pair(a: Estimate, b: Estimate) -> Pair:
    la, lb, cancelled = _cancel(list(a.lines), list(b.lines))
    gaps_a = {unknown(l) for l in la if l.monthly_cost is None}
    gaps_b = {unknown(l) for l in lb if l.monthly_cost is None}
    unbounded = {unknown(l) for l in la + lb if l.monthly_cost is None and l.bound_cost is None}
    open_ = sorted(unbounded | (gaps_a & gaps_b))  # the same unknown on both sides: not compared, not bounded twice
    keep_a = [l for l in la if not any(_rests_on(l, w) for w in open_)]
    keep_b = [l for l in lb if not any(_rests_on(l, w) for w in open_)]
    bounded = tuple(
        f"{l.resource_name}: {l.component} at most {l.bound_cost} ({l.bound_how})"
        for l in keep_a + keep_b
        if l.monthly_cost is None
    )
    sa, sb = _side(keep_a), _side(keep_b)
    margin = sb.value - sa.value
    conf = confidence(sa, sb) if margin > 0 else confidence(sb, sa) if margin < 0 else "toss-up"
    return Pair(sa, sb, margin, sb.low - sa.high, sb.high - sa.low, conf, cancelled, bounded, tuple(open_))


class Row(Struct, frozen=True):
    label: str
    versus_current: Pair | None  # None: this is the current option, or there is no current option
    rank: int  # 1 = cheapest by central margin


class Decision(Struct):
    currency: str
    current: str | None  # the stack as declared (its cloud, region and billing), when among the options
    cheapest: str | None
    margin: Decimal | None  # what the cheapest saves a month against the current (central); None: no current
    margin_low: Decimal | None
    margin_high: Decimal | None
    confidence: str
    why: str
    runner_up: str | None = None
    runner_up_margin: Decimal | None = None
    runner_up_confidence: str = ""
    rows: list[Row] = field(default_factory=list)
    not_compared: list[str] = field(default_factory=list)
    bounded: list[str] = field(default_factory=list)
    unranked: list[str] = field(default_factory=list)  # options without an estimate
    compute_unpriced: dict[str, str] = field(default_factory=dict)  # option -> what its unpriced GPU compute rests on

    @property
    def current_why(self) -> str:
        """Why the current option is not compared ("" when it is)."""
        return self.compute_unpriced.get(self.current or "", "")

    @property
    def margin_share(self) -> Decimal | None:
        """The margin as a share of the current option's compared total."""
        row = next((r for r in self.rows if r.label == self.cheapest), None)
        if self.margin is None or row is None or row.versus_current is None or row.versus_current.a.value == 0:
            return None
        return (self.margin / row.versus_current.a.value).quantize(Decimal("0.0001"))

    def sentence(self) -> str:
        """The answer in one line, as every report heads with it."""
        if self.cheapest is None:
            return f"no decision: {self.why}"
        cur = self.currency
        if self.current is None:
            head = f"cheapest: {self.cheapest} (the stack as declared is not among the options)"
        elif self.current_why:
            head = f"cheapest: {self.cheapest}; the current {self.current} is not compared: its GPU compute has no price ({self.current_why})"
        elif self.cheapest == self.current:
            head = f"cheapest: {self.current}, the current option"
        else:
            share = f", {self.margin_share:.1%}" if self.margin_share is not None else ""
            head = (
                f"cheapest: {self.cheapest}, {self.margin} {cur}/month below the current {self.current}"
                f"{share} (margin {self.margin_low} to {self.margin_high}): {self.confidence}"
            )
        if self.runner_up is not None:
            head += (
                f"; next: {self.runner_up} +{self.runner_up_margin} {cur}/month"
                f" ({self.runner_up_confidence} that {self.cheapest} is cheaper)"
            )
        return head

    def as_json(self) -> dict:
        def s(x):
            return None if x is None else str(x)

        return {
            "current": self.current,
            "cheapest": self.cheapest,
            "currency": self.currency,
            "margin_over_current": s(self.margin),
            "margin_range": {"low": s(self.margin_low), "high": s(self.margin_high)},
            "margin_share": s(self.margin_share),
            "confidence": self.confidence,
            "why": self.why,
            "runner_up": self.runner_up,
            "runner_up_margin": s(self.runner_up_margin),
            "runner_up_confidence": self.runner_up_confidence or None,
            "not_compared": self.not_compared,
            "bounded": self.bounded,
            "unranked": self.unranked,
            "compute_unpriced": self.compute_unpriced,
            "sentence": self.sentence(),
            "rules": "common lines cancel; unpriced lines at a documented bound or not compared on both sides alike; "
            "certain = ranges do not overlap, likely = central outside the other's range, toss-up = otherwise",
        }


def _why(p: Pair, cheap: str, dear: str, cur: str) -> str:
    low, high = (p.margin_low, p.margin_high) if p.margin >= 0 else (-p.margin_high, -p.margin_low)
    if p.confidence == "certain":
        return f"{cheap}'s high end is below {dear}'s low end after {p.cancelled} common lines cancel"
    if p.confidence == "likely":
        return f"the ranges overlap but the central estimates sit outside each other's range (margin {low} to {high} {cur})"
    return (
        f"the central estimates sit inside each other's sourced spread (margin {low} to {high} {cur}): "
        "the public prices cannot order these two"
    )


def label(o) -> str:
    """An option's name in every output: cloud, region and billing model."""
    return f"{o.cloud} {o.region} {o.billing}"


def decide(options) -> Decision:
    """The decision over `cost compare`'s options (objects with .estimate, .current and a label via label below)."""
    open_ = {label(o): ", ".join(u) for o in options if o.estimate is not None and (u := compute_unknowns(o.estimate))}
    priced = [o for o in options if o.estimate is not None and label(o) not in open_]
    unranked = [label(o) for o in options if o.estimate is None or label(o) in open_]
    currencies = sorted({o.estimate.currency for o in priced})
    declared = next((label(o) for o in options if getattr(o, "current", False) and label(o) in open_), None)
    if not priced:
        why = "no option could be priced" + ("" if not open_ else " with its GPU compute")
        return Decision("n/a", declared, None, None, None, None, "toss-up", why, unranked=unranked, compute_unpriced=open_)
    if len(currencies) > 1:
        return Decision(
            "/".join(currencies), None, None, None, None, None, "toss-up", "the options' currencies differ", unranked=unranked
        )
    cur = currencies[0]
    current = next((o for o in priced if getattr(o, "current", False)), None)
    base = current or priced[0]
    vs = {id(o): (None if o is base else pair(base.estimate, o.estimate)) for o in priced}

    def saving(o) -> Decimal:  # what o costs against the base (negative: cheaper)
        p = vs[id(o)]
        return Decimal(0) if p is None else p.margin

    order = sorted(priced, key=saving)
    # against an unranked current option there is no margin: the rows are ordered, not measured against it
    rows = [Row(label(o), None if declared else vs[id(o)], i + 1) for i, o in enumerate(order)]
    cheapest = order[0]
    d = Decision(cur, label(current) if current else declared, label(cheapest), None, None, None, "toss-up", "", rows=rows)
    d.unranked, d.compute_unpriced = unranked, open_
    if current is not None and cheapest is not current:
        p = vs[id(cheapest)]
        assert p is not None
        d.margin, d.margin_low, d.margin_high = -p.margin, -p.margin_high, -p.margin_low
        d.confidence = p.confidence
        d.why = _why(p, label(cheapest), label(current), cur)
        d.not_compared, d.bounded = list(p.not_compared), list(p.bounded)
    if len(order) > 1:
        nxt = order[1]
        p2 = pair(cheapest.estimate, nxt.estimate)
        d.runner_up, d.runner_up_margin, d.runner_up_confidence = label(nxt), p2.margin, p2.confidence
        if current is None or cheapest is current:
            d.confidence, d.why = p2.confidence, _why(p2, label(cheapest), label(nxt), cur)
            d.not_compared, d.bounded = list(p2.not_compared), list(p2.bounded)
    elif not d.why:
        d.confidence, d.why = "certain", "the only option priced"

    share = view.quality(cheapest.estimate).estimated_share
    if share:  # the confidence reads the sourced spreads; how good the prices are is another question, said here
        d.why += f"; {share:.0%} of {label(cheapest)}'s priced total rests on estimated or third-party prices"
    return d
