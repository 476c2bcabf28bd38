"""Price a resource inventory: components (resources.py) x catalog rows (catalog.py) x discounts.

Money is Decimal; 730 hours a month. A component whose quantity is unknown or whose unit price is
missing keeps its line (unit price or `missing`) and is left out of the total, and the estimate says so.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from gpufleet.cost import catalog as pricecat
from gpufleet.cost import resources
from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.resources import CATEGORIES, PricingContext
from gpufleet.cost.usage import Usage, schedule_average

from gpufleet.errors import Problem, UserError, did_you_mean

CENT = Decimal("0.01")


def money(x: Decimal) -> Decimal:
    return x.quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Line:
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


@dataclass(frozen=True)
class Discount:
    match: str  # glob over price keys, e.g. instance/*
    billing: str  # payg | monthly | yearly | spot | any | *
    factor: Decimal
    note: str


@dataclass
class Estimate:
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

    @property
    def monthly_total(self) -> Decimal:
        return money(sum((l.monthly_cost for l in self.lines if l.monthly_cost is not None), Decimal(0)))

    @property
    def by_category(self) -> dict[str, Decimal]:
        out = {c: Decimal(0) for c in CATEGORIES}
        for l in self.lines:
            if l.monthly_cost is not None:
                out[l.category] += l.monthly_cost
        return {c: money(v) for c, v in out.items()}

    @property
    def overhead_share(self) -> Decimal:
        total = self.monthly_total
        return Decimal(0) if total == 0 else ((total - self.by_category["gpu_compute"]) / total).quantize(Decimal("0.0001"))

    @property
    def unpriced(self) -> list[Line]:
        return [l for l in self.lines if l.monthly_cost is None]

    @property
    def estimated(self) -> list[Line]:
        return [l for l in self.lines if l.price_quality in ("estimate", "third-party", "missing")]


DISCOUNT_KEYS = ("match", "billing", "factor", "note")


def load_discounts(path: str | None) -> list[Discount]:
    """Finance's negotiated rates: `discounts: [{match: "instance/*", billing: payg, factor: 0.8, note: ...}]`."""
    if not path:
        return []
    from gpufleet import inputs

    doc = inputs.load_mapping(path, path, what="a mapping with a `discounts:` list")
    out, problems = [], []
    problems += [Problem(path, str(k), "unknown key" + did_you_mean(str(k), ["discounts"])) for k in doc if k != "discounts"]
    for i, d in enumerate(inputs.sequence(doc.get("discounts") or [], path, "discounts", "a list of discounts")):
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
            billing = str(d.get("billing", "*"))
            if billing not in (*pricecat.BILLINGS, "*"):
                problems.append(Problem(path, f"discounts.{i}.billing", f"unknown billing {billing!r}"))
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


def fleet_average(spec, usage: Usage) -> tuple[Decimal, str]:
    if usage.replicas_average is not None:
        return usage.replicas_average, f"{usage.replicas_average} average running nodes (usage replicas_average)"
    schedules = [(s.cron, s.desired if s.desired is not None else s.min) for s in spec.autoscaling.schedules]
    return schedule_average(spec.replicas.desired_or_min, schedules)


def price_inventory(
    stack: str,
    spec,
    instance_type: str,
    resources_list: list[dict],
    usage: Usage,
    discounts: list[Discount] | None = None,
    data: Path | None = None,
) -> Estimate:
    cat = pricecat.load(spec.cloud, spec.region, data)
    discounts = discounts or []
    avg, how = fleet_average(spec, usage)
    ctx = PricingContext(spec.cloud, spec.region, usage, avg, resources_list)
    lines: list[Line] = []
    free: list[tuple[str, str, str]] = []
    for res in resources_list:
        token = res["type"]
        fn = resources.cost_function(spec.cloud, token)
        if fn is None:
            why = resources.free_reason(spec.cloud, token)
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
            row = cat.get(comp.price_key, comp.billing)
            unit = row.unit if row else "-"
            price = row.price if row else None
            quality = row.quality if row else "missing"
            note = comp.note
            if price is not None and comp.price_cap is not None and comp.price_cap < price:
                price, note = (
                    comp.price_cap,
                    (note + "; " if note else "") + f"spot price limit {comp.price_cap} below the catalog's {price}",
                )
            d = _discount(discounts, comp.price_key, comp.billing) if price is not None else None
            if d is not None and price is not None:  # d is None without a price
                price = price * d.factor
                note = (note + "; " if note else "") + f"discount x{d.factor} {d.note}".rstrip()
            cost = None if price is None or comp.monthly_quantity is None else money(price * comp.monthly_quantity)
            if row is None:
                note = (note + "; " if note else "") + f"no catalog row {comp.price_key} ({comp.billing})"
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
                    comp.price_key,
                    comp.billing,
                    row.source if row else "",
                    row.as_of if row else "",
                    note,
                    row.derivation if row else "",
                )
            )
    assumptions = [f"{HOURS_PER_MONTH} hours a month", f"GPU nodes: {how}"]
    for k, v in usage.known().items():
        if k == "replicas_average":
            continue
        if v is None and k == "nat_cu_hours":
            assumptions.append(f"{k}: unknown; the documented minimum of 1 CU each hour ({HOURS_PER_MONTH}) is priced")
        else:
            assumptions.append(f"{k}: {v if v is not None else 'unknown (shown as a unit price, not in the total)'}")
    if usage.files:
        assumptions.append("usage files: " + ", ".join(usage.files))
    assumptions.extend(usage.notes)
    if spec.billing.model == "spot" or any(l.billing == "spot" for l in lines):
        assumptions.append(
            "spot nodes can be reclaimed at any time after the protection period (about 5 minutes' notice); "
            "the spot price is an estimate (40% of pay-as-you-go; vendor floor 10%)"
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
        [f"{d.match} ({d.billing}) x{d.factor} {d.note}".rstrip() for d in discounts],
    )
    return est


def break_even(cat: pricecat.Catalog, itype: str) -> dict | None:
    """Utilisation above which a monthly (and yearly) subscription beats pay-as-you-go for one node."""
    payg = cat.get(f"instance/{itype}", "payg")
    if payg is None or payg.price is None:
        return None
    full = payg.price * HOURS_PER_MONTH
    out = {"instance_type": itype, "payg_hourly": payg.price, "payg_full_month": money(full)}
    for b in ("monthly", "yearly"):
        row = cat.get(f"instance/{itype}", b)
        if row is not None and row.price is not None:
            out[f"{b}_price"] = money(row.price)
            out[f"{b}_break_even_utilisation"] = (row.price / full).quantize(Decimal("0.0001"))
    return out
