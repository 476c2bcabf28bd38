"""Price a resource inventory: components (resources.py) x catalog rows (catalog.py) x discounts.

Money is Decimal; 730 hours a month. Nothing missing is ever zero: a component whose quantity is unknown or
whose unit price is missing keeps its line (unit price or `missing`), the estimate is then not `complete` and its
total is a lower bound ("≥ X"); a category with such a line is a lower bound too. Each priced line carries the
sourced spread of its price (`low`/`high`), the date of its source and whether that source is over a year old.

Scenarios: the same inventory priced for the schedules' average (what `monthly_total` is), the floor
(`replicas.min` nodes all month), the peak (`replicas.max`) and, when spot is in use, the interruption
fallback (every spot node replaced at pay-as-you-go).
"""

from __future__ import annotations

import fnmatch
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from msgspec import Struct, field

from gpufleet import clock, inputs, registry
from gpufleet.cost import catalog as pricecat
from gpufleet.cost import figures, resources
from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.resources import CATEGORIES, COMPUTE, PricingContext, shown_nodes
from gpufleet.cost.usage import Usage, keys_of, schedule_average
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.naming import group_prefix
from gpufleet.stacks import rollout

CENT = Decimal("0.01")


def money(x: Decimal) -> Decimal:
    return x.quantize(CENT, rounding=ROUND_HALF_UP)


class Line(Struct, frozen=True):
    resource_type: str
    resource_name: str
    component: str
    unit: str
    monthly_quantity: Decimal | None
    unit_price: Decimal | None
    monthly_cost: Decimal | None
    category: str
    price_quality: str
    price_key: str
    billing: str
    source: str
    as_of: str
    note: str = ""
    derivation: str = ""
    price_low: Decimal | None = None  # the sourced spread of the unit price (= unit_price for an exact quote)
    price_high: Decimal | None = None
    stale: bool = False  # the price's source is over a year old
    shared: bool = False  # one bill for every stack using it (KMS instance, bucket, image snapshot): counted once across stacks
    quantity_bound: Decimal | None = None  # the most an unknown monthly_quantity can be (a declared cap), see bound_how
    bound_how: str = ""
    shared_id: str = ""  # with `shared`: the thing shared (bucket, secret name); "" = one per cloud and region
    term_months: int = 0  # a subscription's declared term (0: none); one the catalog has no price for leaves it unpriced

    @property
    def term_unpriced(self) -> str:
        """Why the line is not priced for its declared term ("" when the term is priced or none is declared)."""
        return pricecat.term_not_priced(self.billing, self.term_months) if self.monthly_cost is None else ""

    @property
    def bound_cost(self) -> Decimal | None:
        """The most an unpriced line can cost: its unit price x its quantity bound (None: no documented bound)."""
        if self.monthly_cost is not None:
            return self.monthly_cost
        if self.quantity_bound is None or self.unit_price is None:
            return None
        return money((self.price_high or self.unit_price) * self.quantity_bound)

    @property
    def low(self) -> Decimal | None:
        """Monthly cost at the low end of the price's spread; None when the line is unpriced."""
        return self._at(self.price_low)

    @property
    def high(self) -> Decimal | None:
        return self._at(self.price_high)

    def _at(self, price: Decimal | None) -> Decimal | None:
        """The monthly cost with the unit price at `price` (price x quantity), held on the cost's side of the spread:
        an end equal to the unit price is the cost itself, and low <= cost <= high. The stored quantity is rounded to
        4 places and a converted unit price to 6, so price x quantity alone put a low 0.01 above the cost at 300 CNY/h
        (607464.30 around 607464.29) and gave an exact quote a range once converted to USD."""
        if self.monthly_cost is None:
            return None
        at = _times(price, self.monthly_quantity)
        if at is None or price is None or self.unit_price is None or price == self.unit_price:
            return self.monthly_cost
        return min(at, self.monthly_cost) if price < self.unit_price else max(at, self.monthly_cost)


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _times(price: Decimal | None, quantity: Decimal | None) -> Decimal | None:
    return None if price is None or quantity is None else money(price * quantity)


class Amount(Struct, frozen=True):
    """A sum of lines: the priced part (`value`), its sourced spread, and whether every line has a price.

    An incomplete amount is a lower bound: the unpriced lines would only add to it. Never shown as a plain number.
    """

    value: Decimal
    low: Decimal
    high: Decimal
    complete: bool
    lines: int = 0
    priced: int = 0

    @property
    def exact(self) -> bool:
        return self.low == self.value == self.high

    def text(self, spread: bool = True) -> str:
        """`123.45`, `123.45 (110.00–140.00)` for an estimated price, `≥ 123.45` with unpriced lines, `unpriced`."""

        if self.lines and not self.priced:
            return figures.UNPRICED
        # with unpriced lines there is no high end (as in the JSON): only the low end of the spread is shown
        return figures.amount(self.value, self.low, self.high if self.complete else None, self.complete, spread)

    def as_json(self) -> dict:
        return {
            "amount": str(self.value),
            "complete": self.complete,
            "low": str(self.low),
            "high": str(self.high) if self.complete else None,  # with unpriced lines there is no upper bound
            "priced_lines": self.priced,
            "unpriced_lines": self.lines - self.priced,
        }


def amount(lines: list[Line]) -> Amount:
    priced = [l for l in lines if l.monthly_cost is not None]

    def total(values) -> Decimal:  # every priced line has a cost, a low and a high
        return money(sum((v for v in values if v is not None), Decimal(0)))

    return Amount(
        total(l.monthly_cost for l in priced),
        total(l.low for l in priced),
        total(l.high for l in priced),
        len(priced) == len(lines),
        len(lines),
        len(priced),
    )


class Scenario(Struct, frozen=True):
    name: str  # average | floor | peak | spot_fallback
    nodes: Decimal  # GPU nodes running on average in this scenario
    how: str
    total: Amount


class Discount(Struct, frozen=True):
    match: str  # glob over price keys, e.g. instance/*
    billing: str  # payg | monthly | yearly | spot | any | *
    factor: Decimal
    note: str


class Estimate(Struct):
    stack: str
    cloud: str
    region: str
    instance_type: str
    billing: str
    currency: str
    catalog_as_of: str
    catalog_built: str
    lines: list[Line]
    assumptions: list[str]
    free: list[tuple[str, str, str]]  # (type, name, reason)
    break_even: dict | None = None
    discounts: list[str] = field(default_factory=list)
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    prefix: str = ""  # the fleet's name prefix (llm-prod): cost diff matches lines without it
    # the estimate as priced, in the catalog's currency, when this one is a conversion of it (cost/fx.py): usage
    # figures (GB, GiB) come from it, not from converted money rounded to the cent
    converted_from: Estimate | None = None

    @property
    def total(self) -> Amount:
        return amount(self.lines)

    @property
    def monthly_total(self) -> Decimal:
        """The priced part of the total: a lower bound when the estimate is not `complete`."""
        return self.total.value

    @property
    def complete(self) -> bool:
        return not self.unpriced

    @property
    def monthly_low(self) -> Decimal:
        return self.total.low

    @property
    def monthly_high(self) -> Decimal:
        """The high end of the priced part's spread (with unpriced lines the total has no upper bound)."""
        return self.total.high

    @property
    def categories(self) -> dict[str, Amount]:
        return {c: amount([l for l in self.lines if l.category == c]) for c in CATEGORIES}

    @property
    def by_category(self) -> dict[str, Decimal]:
        """The priced part per category (for arithmetic); render `categories` (a category with an unpriced line
        is a lower bound there, never a plain 0.00)."""
        return {c: a.value for c, a in self.categories.items()}

    @property
    def overhead_share(self) -> Decimal | None:
        """What is not compute, as a share of the priced total; None while a compute line is unpriced (the share of
        an unknown total: it read 100 % for a node type the catalog has no price for)."""
        if not self.categories[COMPUTE].complete:
            return None
        total = self.monthly_total
        return Decimal(0) if total == 0 else ((total - self.by_category[COMPUTE]) / total).quantize(Decimal("0.0001"))

    @property
    def unpriced(self) -> list[Line]:
        return [l for l in self.lines if l.monthly_cost is None]

    @property
    def estimated(self) -> list[Line]:
        return [l for l in self.lines if l.price_quality in ("estimate", "third-party", "missing")]

    @property
    def stale(self) -> list[Line]:
        return [l for l in self.lines if l.stale]

    @property
    def oldest_as_of(self) -> str | None:
        """The oldest source date among the priced lines (what the total rests on)."""
        return min((l.as_of for l in self.lines if l.monthly_cost is not None and _is_date(l.as_of)), default=None)


DISCOUNT_KEYS = ("match", "billing", "factor", "note")


# The fix of a --discounts file that does not exist: what it holds, and where its format is described.
MISSING_DISCOUNTS = (
    "write one: YAML `discounts: [{match: GLOB, factor: F}]`, the negotiated rates, each a price factor (0 to 1) for the "
    'lines matching the glob, e.g. `discounts: [{match: "instance/*", billing: payg, factor: 0.8, note: contract}]` '
    "(docs/cost.md: Discounts)"
)


def load_discounts(path: str | None) -> list[Discount]:
    """Finance's negotiated rates: `discounts: [{match: "instance/*", billing: payg, factor: 0.8, note: ...}]`."""
    if not path:
        return []

    doc = inputs.load_mapping(path, path, MISSING_DISCOUNTS, what="a mapping with a `discounts:` list")
    out, problems = [], []
    problems += [Problem(path, str(k), "unknown key" + did_you_mean(str(k), ["discounts"])) for k in doc if k != "discounts"]
    rules = doc.get("discounts")  # `discounts: {}`, `""`, `0` or `false` were read as no discounts
    first: dict[tuple[str, str], int] = {}
    for i, d in enumerate(inputs.sequence([] if rules is None else rules, path, "discounts", "a list of discounts")):
        if not isinstance(d, dict):
            problems.append(Problem(path, f"discounts.{i}", f"expected a mapping (match, factor, ...), got {inputs.kind(d)}"))
            continue
        unknown = [k for k in d if k not in DISCOUNT_KEYS]
        problems += [Problem(path, f"discounts.{i}.{k}", "unknown key" + did_you_mean(str(k), DISCOUNT_KEYS)) for k in unknown]
        if unknown:
            continue
        try:
            if isinstance(d["factor"], bool) or not isinstance(d["factor"], (int, float, str)):
                raise ValueError
            f = Decimal(str(d["factor"]))
            if not f.is_finite() or not 0 < f <= 1:
                raise ValueError
            if not isinstance(d["match"], str):
                problems.append(
                    Problem(
                        path, f"discounts.{i}.match", f"expected text (a glob such as instance/*), got {inputs.kind(d['match'])}"
                    )
                )
                continue
            if not d["match"].strip():
                problems.append(Problem(path, f"discounts.{i}.match", "empty: give a glob such as instance/*"))
                continue
            billing = d.get("billing", "*")
            if billing not in (*pricecat.BILLINGS, "*"):  # named the choices, and `billing: null` was "unknown billing 'None'"
                given = (
                    f"unknown billing {billing!r}" if isinstance(billing, str) else f"expected text, got {inputs.kind(billing)}"
                )
                choices = did_you_mean(str(billing), (*pricecat.BILLINGS, "*")) if isinstance(billing, str) else ""
                choices = choices or f" (choose one of: {', '.join((*pricecat.BILLINGS, '*'))})"
                problems.append(Problem(path, f"discounts.{i}.billing", given + choices))
                continue
            if (j := first.setdefault((d["match"], billing), i)) != i:  # the first rule that matches applies
                problems.append(
                    Problem(path, f"discounts.{i}", f"repeats the match and billing of discounts.{j}, which applies; keep one")
                )
                continue
            out.append(Discount(str(d["match"]), billing, f, str(d.get("note", ""))))
        except KeyError as exc:
            problems.append(Problem(path, f"discounts.{i}", f"missing {exc.args[0]}"))
        except Exception:
            problems.append(Problem(path, f"discounts.{i}.factor", "must be a number above 0 and at most 1 (0.8 = 20% off)"))
    if problems:
        raise UserError(problems)
    return out


def _discount(discounts: list[Discount], key: str, billing: str) -> Discount | None:
    return next((d for d in discounts if fnmatch.fnmatch(key, d.match) and d.billing in ("*", billing)), None)


def discount_notes(discounts: list[Discount], lines: list[Line]) -> list[str]:
    """Each rule as the estimate lists it; a rule that priced no line says so (a misspelt match or billing was listed as
    if it applied)."""
    applied = {id(d) for ln in lines if ln.unit_price is not None and (d := _discount(discounts, ln.price_key, ln.billing))}
    return [
        f"{d.match} ({d.billing}) x{d.factor} {d.note}".rstrip()
        + ("" if id(d) in applied else ": applied to no priced line of this stack; check its match and billing")
        for d in discounts
    ]


def group_averages(spec, usage: Usage) -> tuple[tuple[str, Decimal], ...]:
    """A rollout's serving groups and the average nodes each runs (stacks/rollout.py sizes them): the fleet's group as
    the usage or its schedules say, at its minimum once promoted; the candidate's from its own size and schedules.
    Empty without a rollout."""
    if getattr(spec, "rollout", None) is None:
        return ()

    current, candidate = rollout.current_spec(spec), rollout.candidate_spec(spec)
    held = spec.rollout.phase == "promoted"
    first = Decimal(current.replicas.desired_or_min) if held else fleet_average(current, usage, groups=False)[0]
    second = fleet_average(candidate, Usage(), groups=False)[0]
    return ((group_prefix(current), first), (group_prefix(candidate), second))


def group_bounds(spec) -> tuple[tuple[str, int, int], ...]:
    """A rollout's serving groups: (logical prefix, floor, peak) each, from the sizes stacks/rollout.py gives them (the
    peak: the group's max, or a schedule's higher max). Empty without a rollout."""
    if getattr(spec, "rollout", None) is None:
        return ()

    out = []
    for g in (rollout.current_spec(spec), rollout.candidate_spec(spec)):
        out.append((group_prefix(g), g.replicas.min, max([g.replicas.max, *(s.max for s in g.autoscaling.schedules)])))
    return tuple(out)


def fleet_average(spec, usage: Usage, groups: bool = True) -> tuple[Decimal, str]:
    """Average running GPU nodes of the fleet: with a rollout, of both serving groups (group_averages)."""
    parts = group_averages(spec, usage) if groups else ()
    if parts:
        total = sum((n for _, n in parts), Decimal(0))
        return total, " + ".join(
            f"{shown_nodes(n)} ({prefix})" for prefix, n in parts
        ) + " average nodes of the rollout's two groups"
    if usage.replicas_average is not None:
        return usage.replicas_average, f"{usage.replicas_average} average running nodes (usage replicas_average)"
    schedules = [(s.cron, s.desired if s.desired is not None else s.min) for s in spec.autoscaling.schedules]
    return schedule_average(spec.replicas.desired_or_min, schedules)


def row_spread_and_staleness(row: pricecat.PriceRow, today: date) -> tuple[Decimal | None, Decimal | None, bool]:
    """(low, high, stale) of a catalog row: the sourced spread of its price (the price itself when the row states
    none: an exact quote) and whether its source is more than a year old on `today`."""
    return row.lowest, row.highest, pricecat.stale(row, today)


def _note(note: str, more: str) -> str:
    return (note + "; " if note else "") + more


def _price_lines(
    cat: pricecat.Catalog,
    cloud: str,
    resources_list: list[dict],
    ctx: PricingContext,
    discounts: list[Discount],
    today: date,
    spot_as_payg: bool = False,
) -> tuple[list[Line], list[tuple[str, str, str]]]:
    """Every resource's cost components priced from the catalog. spot_as_payg: the interruption fallback (each
    spot component priced at the pay-as-you-go row of its item, without the spot price limit)."""
    lines: list[Line] = []
    free: list[tuple[str, str, str]] = []
    for res in resources_list:
        token = res["type"]
        fn = resources.cost_function(cloud, token)
        if fn is None:
            why = resources.free_reason(cloud, token)
            if why is None:
                lines.append(
                    Line(
                        token,
                        res["name"],
                        "resource type not priced",
                        "-",
                        None,
                        None,
                        None,
                        "other",
                        "missing",
                        "",
                        "any",
                        "",
                        "",
                        "no cost function and not listed as free",
                    )
                )
            else:
                free.append((token, res["name"], why))
            continue
        for comp in fn(res, ctx):
            billing, cap, note, key = comp.billing, comp.price_cap, comp.note, comp.price_key
            if spot_as_payg and billing == "spot":
                billing, cap, key = "payg", None, comp.replaced_by or key
                note = _note(
                    note, "spot node reclaimed: replaced at pay-as-you-go" + (f" by {key}" if key != comp.price_key else "")
                )
            row = cat.get(key, billing)
            unit = row.unit if row else "-"
            if row is not None and (why := pricecat.term_not_priced(billing, comp.term_months)):
                # a 36-month subscription is not a 1-year one: no row prices it, so it is left unpriced, said why
                note, row = _note(note, why), None
            price = row.price if row else None
            low, high, is_stale = row_spread_and_staleness(row, today) if row else (None, None, False)
            quality = row.quality if row else "missing"
            if price is not None and cap is not None and cap < price:
                note = _note(note, f"spot price limit {cap} below the catalog's {price}")
                price = cap
                low, high = min(low, cap) if low is not None else cap, cap  # the limit is the most that is paid
            d = _discount(discounts, key, billing) if price is not None else None
            if d is not None and price is not None:  # d is None without a price
                price = price * d.factor
                low = None if low is None else low * d.factor
                high = None if high is None else high * d.factor
                note = _note(note, f"discount x{d.factor} {d.note}".rstrip())
            cost = None if price is None or comp.monthly_quantity is None else money(price * comp.monthly_quantity)
            if price is None and comp.monthly_quantity == 0:
                cost = Decimal("0.00")  # nothing used: nothing to pay, whatever the price
                note = _note(note, "quantity 0: no charge although the price is unknown")
            if row is None and not pricecat.term_not_priced(billing, comp.term_months):
                note = _note(note, f"no catalog row {key} ({billing})")
            lines.append(
                Line(
                    token,
                    res["name"],
                    comp.name,
                    unit,
                    None if comp.monthly_quantity is None else comp.monthly_quantity.quantize(Decimal("0.0001")),
                    price,
                    cost,
                    comp.category,
                    quality,
                    key,
                    billing,
                    row.source if row else "",
                    row.as_of if row else "",
                    note,
                    row.derivation if row else "",
                    low if price is not None else None,
                    high if price is not None else None,
                    is_stale,
                    comp.shared,
                    comp.bound if comp.monthly_quantity is None else None,
                    comp.bound_how if comp.monthly_quantity is None else "",
                    comp.shared_id,
                    comp.term_months,
                )
            )
    return lines, free


def on_demand_base(spec) -> tuple[int, int]:
    """(on_demand_base, on_demand_above_base_percent) of the fleet's billing (0, 0 unless spot with a base)."""
    return spec.billing.on_demand_base or 0, spec.billing.on_demand_above_base_percent or 0


def peak_nodes(spec) -> tuple[int, str]:
    """The most nodes the fleet can run: replicas.max (a schedule's max never exceeds it: the loader refuses one
    above); with a rollout, both serving groups' (group_bounds)."""
    bounds = group_bounds(spec)
    if bounds:
        tops = [(prefix, top) for prefix, _, top in bounds]
        total = sum(t for _, t in tops)
        return total, f"{total} nodes all month (" + " + ".join(f"{t} {p}" for p, t in tops) + ": each group's max)"
    top = spec.replicas.max
    return top, f"{top} nodes all month (replicas.max {top})"


def price_inventory(
    stack: str,
    spec,
    instance_type: str,
    resources_list: list[dict],
    usage: Usage,
    discounts: list[Discount] | None = None,
    data: Path | None = None,
    today: date | None = None,
    scenarios: bool = True,
) -> Estimate:
    """The inventory priced for the schedules' average; with `scenarios`, also floor, peak and the spot fallback."""
    cat = pricecat.load(spec.cloud, spec.region, data)
    discounts = discounts or []
    today = today or clock.now().date()
    avg, how = fleet_average(spec, usage)
    parts = group_averages(spec, usage)

    bounds = group_bounds(spec)

    def priced(nodes: Decimal, spot_as_payg: bool = False, split: str = "") -> tuple[list[Line], list[tuple[str, str, str]]]:
        # a rollout: each group at its own part of the scenario: its floor or peak (split), else the average's share
        groups = tuple((p, n * nodes / avg) for p, n in parts) if avg else ()
        if bounds and split:
            which = {"floor": 1, "peak": 2}[split]
            groups = tuple((b[0], Decimal(b[which])) for b in bounds)
        ctx = PricingContext(spec.cloud, spec.region, usage, nodes, resources_list, groups=groups)
        return _price_lines(cat, spec.cloud, resources_list, ctx, discounts, today, spot_as_payg)

    lines, free = priced(avg)
    assumptions = [f"{HOURS_PER_MONTH} hours a month", f"GPU nodes: {how}"]
    unknown = {k.name: k.unknown for k in keys_of(spec.cloud) if k.unknown}
    for k, v in usage.known(spec.cloud).items():
        if k == "replicas_average":
            continue
        if v is None and k in unknown:
            assumptions.append(f"{k}: {unknown[k]}")
        else:
            assumptions.append(f"{k}: {v if v is not None else 'unknown (shown as a unit price, not in the total)'}")
    terms = sorted({l.term_months for l in lines if l.term_unpriced})
    for months in terms:
        n = sum(1 for l in lines if l.term_months == months and l.term_unpriced)
        assumptions.append(
            f"subscription term {months} months (billing.period_months): not priced, {n} line(s) left out of the total "
            f"(a lower bound): the catalog's yearly rows price a {pricecat.YEARLY_TERM_MONTHS}-month term and no "
            f"sourced price of a {months}-month term exists; period_months {pricecat.YEARLY_TERM_MONTHS} is priced"
        )
    if usage.files:
        assumptions.append("usage files: " + ", ".join(usage.files))
    assumptions.extend(usage.notes)
    spot = spec.billing.model == "spot" or any(l.billing == "spot" for l in lines)
    if spot:
        assumptions.append(
            "spot nodes can be reclaimed at any time after the protection period (about 5 minutes' notice); "
            "the spot price is the catalog row's (a spot quote where one exists, else a ratio of pay-as-you-go from public points; see its derivation)"
        )
    est = Estimate(
        stack,
        spec.cloud,
        spec.region,
        instance_type,
        spec.billing.model,
        cat.currency,
        cat.as_of,
        cat.built,
        lines,
        assumptions,
        free,
        break_even(cat, instance_type),
        discount_notes(discounts, lines),
        prefix=f"{spec.name}-{spec.environment}",
    )
    if scenarios:
        est.scenarios = _scenarios(spec, avg, how, est, priced, spot, declared_floor(spec.cloud, resources_list))
    return est


def declared_floor(cloud: str, resources: list[dict]) -> int | None:
    """The GPU nodes the inventory keeps at the floor, as declared (the cloud's pricing.declared_floor), or None."""

    count = getattr(registry.module(cloud, "pricing"), "declared_floor", None)
    return None if count is None else count(resources)


def _scenarios(
    spec, avg: Decimal, how: str, est: Estimate, priced, spot: bool, declared: int | None = None
) -> dict[str, Scenario]:
    """The floor is what the inventory declares (e.g. a group's own minimum plus subscription nodes), so that a program
    keeping more nodes than replicas.min is priced as such."""
    out = {"average": Scenario("average", avg, how, est.total)}
    n = spec.replicas.min if declared is None else declared
    floor = Decimal(n)
    why = (
        f"{n} nodes all month (replicas.min)"
        if n == spec.replicas.min
        else f"{n} nodes all month, as declared (replicas.min {spec.replicas.min})"
    )
    bounds = group_bounds(spec)
    if bounds:  # a rollout: each group at its own floor (what the groups declare)
        n = sum(b[1] for b in bounds)
        floor = Decimal(n)
        why = f"{n} nodes all month (" + " + ".join(f"{b[1]} {b[0]}" for b in bounds) + ": each group's min)"
    out["floor"] = Scenario("floor", floor, why, amount(priced(floor, split="floor" if bounds else "")[0]))
    top, top_how = peak_nodes(spec)
    out["peak"] = Scenario("peak", Decimal(top), top_how, amount(priced(Decimal(top), split="peak" if bounds else "")[0]))
    if spot:
        base, above = on_demand_base(spec)
        mix = (
            f"; lines already pay-as-you-go (the spec's on-demand base: {base} nodes, {above}% above it) stay"
            if base or above
            else " (no on-demand base in the spec)"
        )
        out["spot_fallback"] = Scenario(
            "spot_fallback",
            avg,
            f"the average {shown_nodes(avg)} nodes with every spot line priced at pay-as-you-go (all reclaimed and replaced){mix}",
            amount(priced(avg, spot_as_payg=True)[0]),
        )
    return out


def break_even_utilisation(subscription: Decimal, hourly: Decimal) -> Decimal | None:
    """The utilisation (hours run / 730) above which a subscription of `subscription` a month costs less than paying
    `hourly` for the hours run: subscription / (hourly x 730).

    None when the hourly price is 0 (a credited contract row, a spread's low end of 0): paying nothing an hour costs
    nothing at any utilisation, so no subscription ever beats it (a free one only ties, and a tie stays hourly):
    there is no break-even."""
    if hourly == 0:
        return None
    return (subscription / (hourly * HOURS_PER_MONTH)).quantize(Decimal("0.0001"))


def break_even(cat: pricecat.Catalog, itype: str) -> dict | None:
    """Utilisation above which a monthly (and yearly) subscription beats pay-as-you-go for one node; None when
    pay-as-you-go has no price, or a price of 0 (no subscription beats it: break_even_utilisation)."""
    payg = cat.get(f"instance/{itype}", "payg")
    if payg is None or payg.price is None or payg.price == 0:
        return None
    out = {"instance_type": itype, "payg_hourly": payg.price, "payg_full_month": money(payg.price * HOURS_PER_MONTH)}
    for b in ("monthly", "yearly"):
        row = cat.get(f"instance/{itype}", b)
        if row is not None and row.price is not None:
            out[f"{b}_price"] = money(row.price)
            out[f"{b}_break_even_utilisation"] = break_even_utilisation(row.price, payg.price)
    return out
