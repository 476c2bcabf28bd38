"""`cost diff`: what changes between two estimates (B minus A), line by line, per category and per scenario.

A is another stack's estimate or a saved `cost estimate --format json` (the baseline, read back by `load_baseline`).
Lines are matched by resource type, resource name without the fleet prefix (llm-prod-nat ~ llm-dev-nat), and price
kind (instance, disk, eip, nat, clb, ...) in order of appearance.

Nothing missing is a saving: a delta with an unpriced side is an interval open on that side (an unpriced cost is
somewhere in [0, ∞)), so a total that falls only because a price is missing is reported as unknown and the
unpriced lines are named. The same unknown on both sides (same price row and quantity) cancels. A delta is a
saving only when its whole interval is below zero, an increase only when it is all above.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from pathlib import Path

from msgspec import Struct

from gpufleet import inputs
from gpufleet.cost import figures
from gpufleet.cost.estimate import Amount, Estimate, Line, Scenario, money
from gpufleet.cost.resources import CATEGORIES
from gpufleet.errors import Problem, UserError

SCHEMA_VERSION = 2  # of the saved estimate (finance/report.py estimate_json) this reads


class Delta(Struct, frozen=True):
    """B minus A: the point value of the priced parts and the interval it can lie in (None = unbounded)."""

    value: Decimal | None  # None when a side is unpriced: no single number can be given
    low: Decimal | None
    high: Decimal | None

    @property
    def kind(self) -> str:
        """saving | increase | none | unknown (the interval holds zero or is unbounded on the side that matters)."""
        if self.high is not None and self.high < 0:
            return "saving"
        if self.low is not None and self.low > 0:
            return "increase"
        if self.low == self.high == 0:
            return "none"
        return "unknown"

    def text(self) -> str:
        return figures.change(self.value, self.low, self.high)

    def as_json(self) -> dict:
        s = lambda x: None if x is None else str(x)  # noqa: E731
        return {"value": s(self.value), "low": s(self.low), "high": s(self.high), "kind": self.kind}

    def __add__(self, other: Delta) -> Delta:
        add = lambda x, y: None if x is None or y is None else x + y  # noqa: E731
        return Delta(add(self.value, other.value), add(self.low, other.low), add(self.high, other.high))


ZERO = Delta(Decimal("0.00"), Decimal("0.00"), Decimal("0.00"))


def _identity(l: Line) -> tuple:
    return (l.price_key, l.billing, l.monthly_quantity, l.unit)


def line_delta(a: Line | None, b: Line | None) -> Delta:
    """B minus A for one matched line. A missing side (added/removed line) costs 0; an unpriced side is in [0, ∞)."""
    if a is not None and b is not None and a.monthly_cost is None and b.monthly_cost is None:
        return ZERO if _identity(a) == _identity(b) else Delta(None, None, None)  # the same unknown cancels
    if b is not None and b.monthly_cost is None:  # B in [0, ∞): at least minus what A cost
        return Delta(None, Decimal(0) if a is None else -a.high, None)  # type: ignore[operator]
    if a is not None and a.monthly_cost is None:  # A in [0, ∞): at most what B costs
        return Delta(None, None, Decimal(0) if b is None else b.high)
    ca, la, ha = (a.monthly_cost, a.low, a.high) if a else (Decimal(0), Decimal(0), Decimal(0))
    cb, lb, hb = (b.monthly_cost, b.low, b.high) if b else (Decimal(0), Decimal(0), Decimal(0))
    assert None not in (ca, la, ha, cb, lb, hb)  # priced lines carry their spread
    if a is not None and b is not None and (a.price_key, a.billing) == (b.price_key, b.billing):
        ends = (lb - la, hb - ha)  # type: ignore[operator]  # one price row: its unknown level moves both sides alike
        return Delta(cb - ca, min(ends), max(ends))  # type: ignore[operator]
    return Delta(cb - ca, lb - ha, hb - la)  # type: ignore[operator]


class Change(Struct, frozen=True):
    key: str
    a: Line | None
    b: Line | None

    @property
    def delta(self) -> Decimal | None:
        """The point delta, None when a side is unpriced (see `span` for the interval)."""
        return self.span.value

    @property
    def span(self) -> Delta:
        return line_delta(self.a, self.b)

    @property
    def unpriced(self) -> str:
        """Which side has no cost and why, e.g. `B: price missing` ('' when both are priced)."""
        return "; ".join(
            f"{n}: {'usage unknown' if l.monthly_quantity is None else 'price missing'}"
            for n, l in (("A", self.a), ("B", self.b))
            if l is not None and l.monthly_cost is None
        )

    @property
    def category(self) -> str:
        return (self.b or self.a).category  # type: ignore[union-attr]

    @property
    def status(self) -> str:
        if self.a is None:
            return "added"
        if self.b is None:
            return "removed"
        same = (self.a.component, self.a.monthly_quantity, self.a.unit_price) == (
            self.b.component,
            self.b.monthly_quantity,
            self.b.unit_price,
        )
        return "same" if same else "changed"


def _keyed(e: Estimate, prefix: str) -> dict[str, Line]:
    out: dict[str, Line] = {}
    for l in e.lines:
        name = l.resource_name[len(prefix) :].lstrip("-") if prefix and l.resource_name.startswith(prefix) else l.resource_name
        kind = l.price_key.split("/")[0] if l.price_key else l.component
        base = f"{l.resource_type.split(':')[-1]} {name} {kind}"
        key, n = base, 1
        while key in out:
            n += 1
            key = f"{base} #{n}"
        out[key] = l
    return out


def diff(a: Estimate, a_prefix: str, b: Estimate, b_prefix: str) -> list[Change]:
    ka, kb = _keyed(a, a_prefix), _keyed(b, b_prefix)
    keys = list(ka) + [k for k in kb if k not in ka]
    return [Change(k, ka.get(k), kb.get(k)) for k in keys]


def _sum(deltas) -> Delta:
    out = ZERO
    for d in deltas:
        out = out + d
    return out


def _scenario_delta(a: Scenario, b: Scenario, a_unknown: list[str], b_unknown: list[str]) -> Delta:
    """A scenario keeps totals only: the same unpriced lines on both sides cancel, otherwise the delta is unknown."""
    if sorted(a_unknown) != sorted(b_unknown):
        return _amount_delta(a.total, b.total)
    ends = (b.total.low - a.total.low, b.total.high - a.total.high)
    return Delta(b.total.value - a.total.value, min(ends), max(ends))


def _amount_delta(a: Amount, b: Amount) -> Delta:
    return Delta(
        b.value - a.value if a.complete and b.complete else None,
        b.low - a.high if a.complete else None,
        b.high - a.low if b.complete else None,
    )


class Result(Struct):
    a: Estimate
    b: Estimate
    changes: list[Change]

    @property
    def total(self) -> Delta:
        return _sum(c.span for c in self.changes)

    @property
    def by_category(self) -> dict[str, Delta]:
        return {cat: _sum(c.span for c in self.changes if c.category == cat) for cat in CATEGORIES}

    @property
    def priced(self) -> Delta:
        """The bounded part: B minus A over the lines priced on both sides (an added or removed priced line counts)."""
        return _sum(c.span for c in self.changes if not c.unpriced)

    @property
    def unpriced(self) -> list[Change]:
        """Changes with a side that has no price, unless both sides are the same unknown (it cancels)."""
        return [c for c in self.changes if c.unpriced and c.span != ZERO]

    @property
    def scenarios(self) -> dict[str, Delta]:
        ua = [_unknown_name(l) for l in self.a.unpriced]
        ub = [_unknown_name(l) for l in self.b.unpriced]
        return {
            k: _scenario_delta(self.a.scenarios[k], self.b.scenarios[k], ua, ub)
            for k in self.b.scenarios
            if k in self.a.scenarios
        }


def _unknown_name(l: Line) -> str:
    return f"{l.price_key} ({l.billing}) x {l.monthly_quantity} {l.unit}"


def percent(d: Delta, base: Amount) -> str:
    if d.value is None or not base.complete or base.value == 0:
        return "n/a"
    return f"{(d.value / base.value * 100).quantize(Decimal('0.1')):+}%"


def run(a: Estimate, b: Estimate, a_shown: str = "--stack") -> Result:
    """B minus A; A in another currency than B is a UserError on `a_shown` (the baseline file, or --stack): a baseline
    saved with `--currency USD --fx ...` was subtracted from B's CNY figures as if they were CNY."""
    if a.currency != b.currency:
        raise UserError(
            [
                Problem(
                    a_shown,
                    "currency",
                    f"A is in {a.currency}, B in {b.currency}: a diff subtracts figures of one currency; save A "
                    "without --currency (gpufleet cost estimate --stack S --format json -o FILE.json)",
                )
            ]
        )
    return Result(a, b, diff(a, a.prefix, b, b.prefix))


# --- the saved baseline (cost estimate --format json) -------------------------------------------------------------


# A figure of a saved estimate (a quantity, a unit price, money) is below 10**18: money() rounds it to the cent in 28
# significant digits, and nothing a fleet costs a month comes near it.
MAX_FIGURE = Decimal(10) ** 18


class _Unreadable(Exception):
    """A field of a saved estimate that cannot be read back (field path, what is wrong)."""


def _dec(x, field: str) -> Decimal | None:
    """A saved figure (a decimal string, as estimate_json writes it; a number is read too), None for null."""
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, (str, int, float)):
        raise _Unreadable(field, f'expected a decimal string such as "12.50" or null, got {inputs.kind(x)}')
    try:
        d = Decimal(str(x))
    except InvalidOperation:
        d = None
    if d is None or not d.is_finite() or abs(d) >= MAX_FIGURE:
        raise _Unreadable(field, f"not a finite number below 10**18: {str(x)[:40]!r}")
    return d


def _required(doc: dict, key: str, field: str, read):
    if key not in doc:
        raise _Unreadable(field, "missing")
    value = read(doc[key], field)
    if value is None:
        raise _Unreadable(field, "is null; a saved estimate has a value here")
    return value


def _of(x, field: str, kind: type, what: str):
    if not isinstance(x, kind):
        raise _Unreadable(field, f"expected {what}, got {inputs.kind(x)}")
    return x


def _str(x, field: str) -> str:
    return _of(x, field, str, "text")


def _bool(x, field: str) -> bool:
    return _of(x, field, bool, "true or false")


def _list(x, field: str) -> list:
    return _of(x, field, list, "a list")


def _obj(x, field: str) -> dict:
    return _of(x, field, dict, "an object")


def _line(l, at: str) -> Line:
    l = _obj(l, at)
    text = {k: _required(l, k, f"{at}.{k}", _str) for k in _LINE_TEXT}
    if text["category"] not in CATEGORIES:
        raise _Unreadable(f"{at}.category", f"unknown category {text['category']!r} (one of {', '.join(CATEGORIES)})")
    figure = {k: _dec(l.get(k), f"{at}.{k}") for k in _LINE_FIGURES}
    extra = {k: _str(l.get(k, ""), f"{at}.{k}") for k in ("price_source", "price_as_of", "note", "derivation")}
    return Line(
        resource_type=text["resource_type"],
        resource_name=text["resource_name"],
        component=text["component"],
        unit=text["unit"],
        monthly_quantity=figure["monthly_quantity"],
        unit_price=figure["unit_price"],
        monthly_cost=figure["monthly_cost"],
        category=text["category"],
        price_quality=text["price_quality"],
        price_key=text["price_key"],
        billing=text["billing"],
        source=extra["price_source"],
        as_of=extra["price_as_of"],
        note=extra["note"],
        derivation=extra["derivation"],
        price_low=figure["unit_price_low"],
        price_high=figure["unit_price_high"],
        stale=bool(l.get("stale", False)),
    )


_LINE_TEXT = ("resource_type", "resource_name", "component", "unit", "category", "price_quality", "price_key", "billing")
_LINE_FIGURES = ("monthly_quantity", "unit_price", "monthly_cost", "unit_price_low", "unit_price_high")
_ESTIMATE_TEXT = ("stack", "cloud", "region", "instance_type", "billing", "currency", "catalog_as_of", "catalog_built")


def _scenario(k: str, s, at: str) -> Scenario:
    s = _obj(s, at)
    value = _required(s, "monthly_total", f"{at}.monthly_total", _dec)
    r = _obj(s.get("range"), f"{at}.range")
    low = _required(r, "low", f"{at}.range.low", _dec)
    high = _dec(r.get("high"), f"{at}.range.high")
    total = Amount(value, low, high if high is not None else value, _required(s, "complete", f"{at}.complete", _bool))
    return Scenario(k, _required(s, "nodes", f"{at}.nodes", _dec), _str(s.get("how", ""), f"{at}.how"), total)


def load_baseline(path: Path) -> Estimate:
    """An Estimate from a saved `cost estimate --format json` (schema_version checked; each field read back is checked
    for its type, a figure for being a finite number: bad input is a UserError naming the field)."""
    shown = str(path)
    how = "save one with `gpufleet cost estimate --stack S --format json -o FILE.json`"
    doc = inputs.mapping(inputs.load_json(path, shown, how), shown, "", "a saved cost estimate (JSON object)")
    version = doc.get("schema_version")
    if version is None:
        raise UserError([Problem(shown, "schema_version", f"missing: not a saved cost estimate of this version; {how}")])
    if version != SCHEMA_VERSION:
        raise UserError(
            [
                Problem(
                    shown,
                    "schema_version",
                    f"is {version!r}; this gpufleet reads saved estimates of schema_version {SCHEMA_VERSION}: {how}",
                )
            ]
        )
    try:
        lines = [_line(l, f"lines.{i}") for i, l in enumerate(_list(doc.get("lines"), "lines"))]
        scenarios = {k: _scenario(k, s, f"scenarios.{k}") for k, s in _obj(doc.get("scenarios") or {}, "scenarios").items()}
        text = {k: _required(doc, k, k, _str) for k in _ESTIMATE_TEXT}
        total = _required(doc, "monthly_total", "monthly_total", _dec)
        est = Estimate(
            stack=text["stack"],
            cloud=text["cloud"],
            region=text["region"],
            instance_type=text["instance_type"],
            billing=text["billing"],
            currency=text["currency"],
            catalog_as_of=text["catalog_as_of"],
            catalog_built=text["catalog_built"],
            lines=lines,
            assumptions=[str(a) for a in _list(doc.get("assumptions") or [], "assumptions")],
            free=[],
            discounts=list(_list(doc.get("discounts") or [], "discounts")),
            scenarios=scenarios,
            prefix=_str(doc.get("prefix") or "", "prefix"),
        )
    except _Unreadable as exc:
        field, message = exc.args
        raise UserError([Problem(shown, field, f"{message}: not a readable saved cost estimate; {how}")]) from None
    if money(est.monthly_total) != total:
        raise UserError([Problem(shown, "monthly_total", "does not match the sum of its lines: the file was edited; " + how)])
    return est
