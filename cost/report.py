"""Reports of estimates and comparisons: JSON, terminal table (rich), CSV, XLSX (native chart), HTML.

Every report shows the currency, the catalog date, the usage assumptions and which prices are
estimates (or third-party, or missing). JSON money values are strings of decimals (exact).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from gpufleet.cost.compare import Option
from gpufleet.cost.estimate import Estimate, Line
from gpufleet.cost.resources import CATEGORIES
from rich.console import Console
from rich.table import Table
from rich.text import Text

TEMPLATES = Path(__file__).parent / "templates"


def _s(x: Decimal | None) -> str | None:
    return None if x is None else str(x)


# --- estimate ----------------------------------------------------------------------------------


def line_json(l: Line) -> dict:
    return {
        "resource_type": l.resource_type,
        "resource_name": l.resource_name,
        "component": l.component,
        "unit": l.unit,
        "monthly_quantity": _s(l.monthly_quantity),
        "unit_price": _s(l.unit_price),
        "monthly_cost": _s(l.monthly_cost),
        "category": l.category,
        "price_quality": l.price_quality,
        "price_key": l.price_key,
        "billing": l.billing,
        "price_source": l.source,
        "price_as_of": l.as_of,
        "note": l.note,
        "derivation": l.derivation,
    }


def estimate_json(e: Estimate) -> dict:
    be = e.break_even
    return {
        "stack": e.stack,
        "cloud": e.cloud,
        "region": e.region,
        "instance_type": e.instance_type,
        "billing": e.billing,
        "currency": e.currency,
        "catalog_as_of": e.catalog_as_of,
        "catalog_built": e.catalog_built,
        "monthly_total": str(e.monthly_total),
        "by_category": {k: str(v) for k, v in e.by_category.items()},
        "overhead_share": str(e.overhead_share),
        "lines": [line_json(l) for l in e.lines],
        "unpriced_lines": len(e.unpriced),
        "assumptions": e.assumptions,
        "discounts": e.discounts,
        "free_resources": [{"resource_type": t, "resource_name": n, "reason": r} for t, n, r in e.free],
        "break_even": {k: (str(v) if isinstance(v, Decimal) else v) for k, v in be.items()} if be else None,
        "money_format": "decimal strings",
    }


def estimate_table(e: Estimate, console: Console) -> None:
    t = Table(title=f"{e.stack}: {e.cloud} {e.region}, {e.instance_type}, billing {e.billing} — monthly cost in {e.currency}")
    for col in ("resource", "component", "quantity", "unit", "unit price", "monthly", "category", "quality"):
        t.add_column(col, justify="right" if col in ("quantity", "unit price", "monthly") else "left")
    for l in e.lines:
        t.add_row(
            l.resource_name,
            l.component,
            _s(l.monthly_quantity) or "usage unknown",
            l.unit,
            _s(l.unit_price) or "missing",
            _s(l.monthly_cost) or "—",
            l.category,
            l.price_quality + ("*" if l.price_quality in ("estimate", "third-party", "missing") else ""),
        )
    console.print(t)
    cats = ", ".join(f"{k} {v}" for k, v in e.by_category.items())
    console.print(
        Text.assemble(
            (f"monthly total {e.monthly_total} {e.currency}", "bold"), f" ({cats}); overhead share {e.overhead_share:.1%}"
        )
    )
    if e.unpriced:
        console.print(
            Text(
                f"{len(e.unpriced)} line(s) not in the total (unknown usage or missing price): "
                + "; ".join(f"{l.component} at {_s(l.unit_price) or 'missing'} per {l.unit}" for l in e.unpriced),
                "yellow",
            )
        )
    console.print(
        f"catalog as of {e.catalog_as_of} (built {e.catalog_built}); * = estimate / third-party / missing price; "
        f"{len(e.estimated)} of {len(e.lines)} lines"
    )
    for a in e.assumptions:
        console.print(f"  assumption: {a}")
    for d in e.discounts:
        console.print(f"  discount: {d}")
    if e.break_even:
        b = e.break_even
        parts = [
            f"{k.split('_')[0]} subscription beats pay-as-you-go above {Decimal(v):.0%} utilisation"
            for k, v in b.items()
            if k.endswith("break_even_utilisation")
        ]
        console.print(f"  break-even for {b['instance_type']}: " + "; ".join(parts))


# --- compare -----------------------------------------------------------------------------------


def _label(o: Option) -> str:
    return f"{o.cloud} {o.region} {o.billing}"


def _estimated_prices(options: list[Option]) -> list[dict]:
    seen, out = set(), []
    for o in options:
        if not o.estimate:
            continue
        for l in o.estimate.lines:
            if l.price_quality in ("estimate", "third-party", "missing") and l.price_key:
                k = (o.cloud, o.region, l.price_key, l.billing)
                if k not in seen:
                    seen.add(k)
                    out.append(
                        {
                            "where": f"{o.cloud} {o.region}",
                            "key": l.price_key,
                            "billing": l.billing,
                            "price": _s(l.unit_price) or "missing",
                            "quality": l.price_quality,
                            "derivation": l.derivation or l.note,
                        }
                    )
    return out


def _rows(options: list[Option]) -> list[dict]:
    rows = []
    for o in options:
        e = o.estimate
        rows.append(
            {
                "label": _label(o),
                "cloud": o.cloud,
                "region": o.region,
                "instance_type": o.instance_type,
                "billing": o.billing,
                "monthly_total": e.monthly_total if e else None,
                "by_category": e.by_category if e else None,
                "overhead_share": e.overhead_share if e else None,
                "unpriced": len(e.unpriced) if e else None,
                "equivalence": o.mapping,
                "problem": o.problem,
            }
        )
    return rows


def _meta(options: list[Option]) -> tuple[str, str, list[str]]:
    ests = [o.estimate for o in options if o.estimate]
    currency = "/".join(sorted({e.currency for e in ests})) or "n/a"
    as_of = max((e.catalog_as_of for e in ests), default="n/a")
    return currency, as_of, (ests[0].assumptions if ests else [])


def compare_table(stack: str, options: list[Option], console: Console) -> None:
    currency, as_of, assumptions = _meta(options)
    t = Table(title=f"{stack}: monthly cost per option, {currency} (catalog as of {as_of})")
    for col in ("cloud", "region", "instance type", "billing", *CATEGORIES, "total", "overhead", "unpriced"):
        t.add_column(col, justify="left" if col in ("cloud", "region", "instance type", "billing") else "right")
    for r in _rows(options):
        cats = [str(r["by_category"][c]) if r["by_category"] else "" for c in CATEGORIES]
        t.add_row(
            r["cloud"],
            r["region"],
            r["instance_type"] or "-",
            r["billing"],
            *cats,
            str(r["monthly_total"]) if r["monthly_total"] is not None else "n/a",
            f"{r['overhead_share']:.1%}" if r["overhead_share"] is not None else "",
            str(r["unpriced"] or ""),
        )
    console.print(t)
    for r in _rows(options):
        if r["problem"]:
            console.print(Text(f"{r['label']}: {r['problem']}", "yellow"))
        elif r["equivalence"]:
            console.print(f"{r['label']}: " + "; ".join(r["equivalence"]))
    for a in assumptions:
        console.print(f"  assumption: {a}")
    est = _estimated_prices(options)
    console.print(f"  {len(est)} prices are estimates, third-party or missing (see --format html/xlsx for how each was derived)")
    if any(o.billing == "spot" for o in options):
        console.print("  spot: nodes can be reclaimed; the spot price is an estimate (40% of pay-as-you-go, vendor floor 10%)")
