"""Reports of estimates and comparisons: JSON, terminal table (rich), CSV, XLSX (native chart), HTML.

Every report shows the currency, the catalog date, the usage assumptions and which prices are
estimates (or third-party, or missing). JSON money values are strings of decimals (exact).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from gpufleet.cost import figures, overhead, view
from gpufleet.cost.decision import decide, label
from gpufleet.cost.diff import Result as DiffResult
from gpufleet.cost.diff import percent
from gpufleet.cost.estimate import Amount, Estimate, Line, Scenario
from gpufleet.cost.resources import COMPUTE, shown_nodes
from gpufleet.finance import exports
from gpufleet.finance.commitment import Plan as CommitPlan
from gpufleet.finance.compare import Option, rank

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# rich is imported by the table functions, not here: the JSON, CSV and XLSX reports (and every `--format json` run)
# need none of it, and its import is ~10 ms of a `cost estimate`.

TEMPLATES = Path(__file__).parent / "templates"


def _s(x: Decimal | None) -> str | None:
    return None if x is None else str(x)


# --- estimate ----------------------------------------------------------------------------------


SCHEMA_VERSION = 2  # of estimate_json: the saved baseline `cost diff --baseline` reads (estimate.from_json)
ESTIMATED = view.ESTIMATED_QUALITIES
SCENARIO_NAMES = {"average": "average", "floor": "floor", "peak": "peak", "spot_fallback": "spot fallback"}


def line_json(l: Line) -> dict:
    return {
        "resource_type": l.resource_type,
        "resource_name": l.resource_name,
        "component": l.component,
        "unit": l.unit,
        "monthly_quantity": _s(l.monthly_quantity),
        "unit_price": _s(l.unit_price),
        "unit_price_low": _s(l.price_low),
        "unit_price_high": _s(l.price_high),
        "monthly_cost": _s(l.monthly_cost),
        "low": _s(l.low),
        "high": _s(l.high),
        "category": l.category,
        "price_quality": l.price_quality,
        "price_key": l.price_key,
        "billing": l.billing,
        "price_source": l.source,
        "price_as_of": l.as_of,
        "stale": l.stale,
        "note": l.note,
        "derivation": l.derivation,
        "quantity_bound": _s(l.quantity_bound),
        "bound_cost": _s(l.bound_cost) if l.monthly_cost is None else None,
        "bound_how": l.bound_how or None,
        "term_months": l.term_months or None,  # a subscription's declared term
    }


def _range(a: Amount) -> dict:
    return {"low": str(a.low), "high": str(a.high) if a.complete else None}


def scenario_json(s: Scenario) -> dict:
    return {
        "nodes": str(shown_nodes(s.nodes)),
        "how": s.how,
        "monthly_total": str(s.total.value),
        "complete": s.total.complete,
        "range": _range(s.total),
    }


def estimate_json(e: Estimate) -> dict:
    """The estimate as data; `cost estimate --format json` prints it and `cost diff --baseline` reads it back.

    monthly_total is the priced part: with `complete: false` it is a lower bound and `unpriced` names what is
    missing; `range` is the sourced spread (high null when incomplete: no upper bound)."""
    be = e.break_even
    total = e.total
    return {
        "schema_version": SCHEMA_VERSION,
        "stack": e.stack,
        "prefix": e.prefix,
        "cloud": e.cloud,
        "region": e.region,
        "instance_type": e.instance_type,
        "billing": e.billing,
        "currency": e.currency,
        "catalog_as_of": e.catalog_as_of,
        "catalog_built": e.catalog_built,
        "monthly_total": str(total.value),
        "complete": total.complete,
        "range": _range(total),
        "oldest_as_of": e.oldest_as_of,
        "by_category": {k: a.as_json() for k, a in e.categories.items()},
        "overhead_share": None if e.overhead_share is None else str(e.overhead_share),
        "scenarios": {k: scenario_json(s) for k, s in e.scenarios.items()},
        "unpriced": [line_json(l) for l in e.unpriced],
        "unpriced_lines": len(e.unpriced),
        "stale_lines": len(e.stale),
        "lines": [line_json(l) for l in e.lines],
        "assumptions": e.assumptions,
        "discounts": e.discounts,
        "free_resources": [{"resource_type": t, "resource_name": n, "reason": r} for t, n, r in e.free],
        "break_even": {k: (str(v) if isinstance(v, Decimal) else v) for k, v in be.items()} if be else None,
        "overhead_scenarios": overhead.as_json(e),
        "money_format": "decimal strings",
    }


def _mark(l: Line) -> str:
    return l.price_quality + ("*" if l.price_quality in ESTIMATED else "") + (" †" if l.stale else "")


def _unit_price(l: Line) -> str:
    if l.unit_price is None:
        return "missing"
    if l.price_low is not None and l.price_high is not None and not l.price_low == l.unit_price == l.price_high:
        return f"{l.unit_price} ({l.price_low}–{l.price_high})"
    return str(l.unit_price)


def _qty(q: Decimal) -> str:
    """A quantity for people (2024.87 hour); JSON keeps every digit."""
    return format((q if q == q.to_integral_value() else q.quantize(Decimal("0.01"))).normalize(), "f")


def _money_column(t: Table, name: str) -> None:
    t.add_column(name, justify="right", no_wrap=True, overflow="fold")  # money is never cut


def estimate_table(e: Estimate, console: Console) -> None:
    # deferred: rich: only a drawn table or styled text needs it, not --json or a preview
    from rich.table import Table
    from rich.text import Text

    t = Table(title=f"{e.stack}: {e.cloud} {e.region}, {e.instance_type}, billing {e.billing} — monthly cost in {e.currency}")
    t.add_column("resource: component", overflow="fold")
    t.add_column("quantity", justify="right", overflow="fold")
    t.add_column("unit price", justify="right", overflow="fold")
    _money_column(t, "monthly")
    t.add_column("category / quality", overflow="fold")
    for l in e.lines:
        t.add_row(
            f"{l.resource_name}: {l.component}",
            f"{_qty(l.monthly_quantity)} {l.unit}" if l.monthly_quantity is not None else f"usage unknown ({l.unit})",
            _unit_price(l),
            _s(l.monthly_cost) or "unpriced",
            f"{l.category} {_mark(l)}",
        )
    console.print(t)
    total = e.total
    console.print(
        Text.assemble(
            (f"monthly total {total.text()} {e.currency}", "bold"),
            f"  (oldest price {e.oldest_as_of or 'n/a'}; overhead share {figures.share(e.overhead_share)})",
        )
    )
    console.print("  " + "; ".join(f"{k} {a.text()}" for k, a in e.categories.items()))
    if e.scenarios:
        s = Table(title="scenarios", title_justify="left")
        s.add_column("scenario")
        s.add_column("nodes", justify="right")
        _money_column(s, f"monthly {e.currency}")
        s.add_column("how", overflow="fold")
        for k, sc in e.scenarios.items():
            s.add_row(SCENARIO_NAMES.get(k, k), str(shown_nodes(sc.nodes)), sc.total.text(), sc.how)
        console.print(s)
    lev = overhead.levers(e)
    if lev:
        o = Table(
            title=f"overhead {figures.share(e.overhead_share)} now: what takes it to 30% / 50% (one lever at a time)",
            title_justify="left",
        )
        o.add_column("lever")
        o.add_column("now", justify="right")
        for share in overhead.SHARES:
            o.add_column(f"+ for {share:.0%}", justify="right")
        o.add_column("priced at", overflow="fold")
        for v in lev:
            o.add_row(
                v.name,
                "unknown" if v.now is None else _qty(v.now),
                *(_qty(q) if (q := v.needed[x]) is not None else "n/a" for x in overhead.SHARES),
                v.how,
            )
        console.print(o)
    if e.unpriced:
        console.print(
            Text(
                f"{len(e.unpriced)} line(s) without a price (unknown usage or missing price): the total is a lower bound (≥): "
                + "; ".join(
                    f"{l.component} at {_s(l.unit_price) or 'missing'} per {l.unit}"
                    + (f" (at most {l.bound_cost}: {l.bound_how})" if l.bound_cost is not None else "")
                    + (f" (a {l.term_months}-month term: no sourced price)" if l.term_unpriced else "")
                    for l in e.unpriced
                ),
                "yellow",
            )
        )
    console.print(
        f"catalog as of {e.catalog_as_of} (built {e.catalog_built}); * = estimate / third-party / missing price "
        f"({len(e.estimated)} of {len(e.lines)} lines); † = the price's source is over a year old ({len(e.stale)} lines); "
        "x (low–high) = the sourced spread of an estimated price"
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
        console.print(f"  break-even for {b['instance_type']}: " + "; ".join(parts) + " (plan it: gpufleet cost commit)")


# --- compare -----------------------------------------------------------------------------------


def _label(o: Option) -> str:
    return label(o)


def _rows(options: list[Option]) -> list[dict]:
    """One row per option. monthly_total is the priced part: read `complete` (False: a lower bound) and `total`."""
    rows = []
    for o, r in zip(options, rank(options)):
        e = o.estimate
        rows.append(
            {
                "label": _label(o),
                "cloud": o.cloud,
                "region": o.region,
                "instance_type": o.instance_type,
                "billing": o.billing,
                "monthly_total": e.monthly_total if e else None,
                "total": e.total if e else None,  # Amount: value, low, high, complete, text()
                "complete": e.complete if e else None,
                "categories": e.categories if e else None,
                "by_category": e.by_category if e else None,
                "overhead_share": e.overhead_share if e else None,
                "oldest_as_of": e.oldest_as_of if e else None,
                "unpriced": len(e.unpriced) if e else None,
                "unpriced_lines": [f"{l.resource_name}: {l.component}" for l in e.unpriced] if e else [],
                "rank": r.rank,
                "not_ranked": r.why if e else "",
                "equivalence": o.mapping,
                "problem": o.problem,
            }
        )
    return rows


def _meta(options: list[Option]) -> tuple[str, str, list[str]]:
    """(currency, the OLDEST source date any option's total rests on, assumptions)."""
    ests = [o.estimate for o in options if o.estimate]
    currency = "/".join(sorted({e.currency for e in ests})) or "n/a"
    as_of = min((e.oldest_as_of for e in ests if e.oldest_as_of), default="n/a")
    return currency, as_of, (ests[0].assumptions if ests else [])


def compare_table(stack: str, options: list[Option], console: Console) -> None:
    """Options as rows, fitting 100 columns with every total in full; what does not fit goes in the notes below."""
    # deferred: rich: only a drawn table or styled text needs it, not --json or a preview
    from rich.table import Table
    from rich.text import Text

    currency, as_of, assumptions = _meta(options)
    d = decide(options)
    console.print(Text(d.sentence(), "bold"))
    console.print(f"  why: {d.why}")
    if d.not_compared:
        console.print("  not compared (unknown on both sides alike, or no documented bound): " + ", ".join(d.not_compared))
    for b in d.bounded:
        console.print(f"  bounded: {b}")
    ranks = {r.label: r for r in d.rows}
    t = Table(title=f"{stack}: monthly cost per option, {currency}")
    t.add_column("#", justify="right", no_wrap=True)
    t.add_column("option", overflow="fold")
    _money_column(t, "GPU compute")
    _money_column(t, "overhead")
    _money_column(t, "monthly total (low–high)")
    t.add_column("vs current", justify="right", overflow="fold")
    t.add_column("oldest", no_wrap=True)
    rows = _rows(options)
    for r in rows:
        if r["total"] is None:
            t.add_row("", r["label"], "", "", "n/a (see below)", "", "")
            continue
        row = ranks.get(r["label"])
        p = row.versus_current if row else None
        versus = "current" if r["label"] == d.current else (f"{p.margin:+} {p.confidence}" if p is not None else "")
        if r["label"] == d.current and d.current_why:
            versus = "current, not compared"
        cats = r["categories"]
        others = [a for c, a in cats.items() if c != COMPUTE]
        overhead = Amount(
            sum((a.value for a in others), Decimal(0)),
            sum((a.low for a in others), Decimal(0)),
            sum((a.high for a in others), Decimal(0)),
            all(a.complete for a in others),
            sum(a.lines for a in others),
            sum(a.priced for a in others),
        )
        t.add_row(
            str(row.rank) if row else "–",
            r["label"],
            cats[COMPUTE].text(spread=False),
            overhead.text(spread=False),
            r["total"].text(),
            versus,
            r["oldest_as_of"] or "",
        )
    console.print(t)
    console.print(
        "# = rank by the central estimate after common lines cancel; vs current = this option minus the current one a "
        "month and how sure the order is (certain: ranges apart; likely: centrals outside each other's range; toss-up); "
        "≥ = lower bound (lines without a price); (low–high) = the sourced spread; oldest = the oldest price source date"
    )
    said: set[tuple[str, str]] = set()
    for r in rows:  # what is the same for every billing of a cloud is said once
        where = f"{r['cloud']} {r['region']}"
        # billing notes are the option's own: its label says "A -> B"; a term note (a subscription term the option
        # does not take from the stack, or one without a price) is said under the option
        shared = [f"instance type {r['instance_type'] or '-'}"] + [n for n in r["equivalence"] if not n.startswith("billing ")]
        terms = [n for n in r["equivalence"] if n.startswith("billing ") and " -> " not in n.split(":", 1)[0]]
        if (where, "; ".join(shared)) not in said:
            said.add((where, "; ".join(shared)))
            console.print(f"{where}: " + "; ".join(shared))
        if r["problem"]:
            console.print(Text(f"{r['label']}: {r['problem']}", "yellow"))
            continue
        notes = list(terms)
        if r["unpriced_lines"]:
            notes.append(f"{len(r['unpriced_lines'])} line(s) without a price: " + "; ".join(r["unpriced_lines"]))
        if notes:
            console.print(f"{r['label']}: " + "; ".join(notes))
    cats = {f"{o.cloud} {o.region}": o.estimate.catalog_as_of for o in options if o.estimate}
    console.print(
        "  catalog as of " + ", ".join(f"{w} {d}" for w, d in cats.items()) + f"; the oldest price source in any total: {as_of}"
    )
    for a in assumptions:
        console.print(f"  assumption: {a}")
    est = exports.estimated_prices(options)
    console.print(f"  {len(est)} prices are estimates, third-party or missing (see --format html/xlsx for how each was derived)")
    if any(o.billing == "spot" for o in options):
        console.print("  spot: nodes can be reclaimed; the spot price is the catalog row's (see its derivation and range)")


# --- diff ---------------------------------------------------------------------------------------


def _side(l: Line | None) -> str:
    if l is None:
        return ""
    quantity = _qty(l.monthly_quantity) if l.monthly_quantity is not None else "usage unknown"
    price = l.unit_price if l.unit_price is not None else "missing"
    cost = l.monthly_cost if l.monthly_cost is not None else "unpriced"
    return f"{l.component}: {quantity} x {price} = {cost}"


def _total_sentence(r: DiffResult) -> str:
    a, b, d = r.a.total, r.b.total, r.total
    head = f"total {a.text()} -> {b.text()} {r.b.currency}/month: "
    if d.kind == "saving":
        return head + f"saving {d.text()}"
    if d.kind == "increase":
        return head + f"increase {d.text()}"
    if d.kind == "none":
        return head + "no change"
    why = "; ".join(f"{_unpriced_side(c)} ({c.unpriced}): {c.span.text()}" for c in r.unpriced)
    return (
        head
        + f"{d.text()}; no saving or increase can be claimed: the lines priced on both sides change by {r.priced.text()}"
        + (f" — not priced: {why}" if why else "")
    )


def _unpriced_side(c) -> str:
    """A changed line without a price on a side, as a reader knows it: resource and what it bills."""
    l = c.b if c.b is not None and c.b.monthly_cost is None else c.a
    return f"{l.resource_name} {l.component}"


def diff_json(r: DiffResult) -> dict:
    def side(l: Line | None) -> dict | None:
        return None if l is None else {k: v for k, v in line_json(l).items() if k not in ("derivation", "price_source")}

    cats_a, cats_b = r.a.categories, r.b.categories
    return {
        "schema_version": SCHEMA_VERSION,
        "a": r.a.stack,
        "b": r.b.stack,
        "currency": r.b.currency,
        "a_total": r.a.total.as_json(),
        "b_total": r.b.total.as_json(),
        "delta": r.total.as_json(),
        "priced_delta": r.priced.as_json(),  # over the lines priced on both sides: the bounded part of an unknown delta
        "by_category": {
            c: {"a": cats_a[c].as_json(), "b": cats_b[c].as_json(), "delta": d.as_json(), "percent": percent(d, cats_a[c])}
            for c, d in r.by_category.items()
        },
        "scenarios": {
            k: {"a": str(r.a.scenarios[k].total.value), "b": str(r.b.scenarios[k].total.value), "delta": d.as_json()}
            for k, d in r.scenarios.items()
        },
        "unpriced_deltas": [{"key": c.key, "unpriced": c.unpriced, "delta": c.span.as_json()} for c in r.unpriced],
        "changes": [
            {"key": c.key, "status": c.status, "a": side(c.a), "b": side(c.b), "delta": c.span.as_json()} for c in r.changes
        ],
    }


def diff_table(r: DiffResult, console: Console) -> None:
    # deferred: rich: only a drawn table or styled text needs it, not --json or a preview
    from rich.table import Table
    from rich.text import Text

    a, b = r.a, r.b
    t = Table(title=f"cost diff {a.stack} -> {b.stack} ({b.currency}/month, B minus A)")
    t.add_column("line", overflow="fold")
    t.add_column("A", overflow="fold")
    t.add_column("B", overflow="fold")
    _money_column(t, "delta")
    for c in r.changes:
        if c.status != "same":
            t.add_row(f"{c.key} ({c.status})", _side(c.a), _side(c.b), c.span.text())
    console.print(t)
    cats = Table(title="per category", title_justify="left")
    cats.add_column("category")
    for col in ("A", "B", "delta"):
        _money_column(cats, col)
    cats.add_column("%", justify="right")
    ca, cb = a.categories, b.categories
    for cat, d in r.by_category.items():
        cats.add_row(cat, ca[cat].text(spread=False), cb[cat].text(spread=False), d.text(), percent(d, ca[cat]))
    console.print(cats)
    if r.scenarios:
        console.print(
            "  scenarios: "
            + "; ".join(
                f"{SCENARIO_NAMES.get(k, k)} {a.scenarios[k].total.text(False)} -> {b.scenarios[k].total.text(False)} ({d.text()})"
                for k, d in r.scenarios.items()
            )
        )
    console.print(Text(_total_sentence(r), "bold"))
    for c in r.unpriced:
        console.print(Text(f"  unpriced delta: {_unpriced_side(c)} ({c.key}): {c.unpriced}; {c.span.text()}", "yellow"))
    console.print(f"  {sum(1 for c in r.changes if c.status == 'same')} lines unchanged")


def diff_markdown(r: DiffResult) -> str:
    """A pull-request comment: per category with %, the scenarios, the unpriced deltas, the changed lines folded."""
    a, b = r.a, r.b
    cur = b.currency
    out = [f"### Cost diff: `{a.stack}` → `{b.stack}` ({cur}/month)", ""]
    out += ["| category | before | after | change | % |", "|---|--:|--:|--:|--:|"]
    ca, cb = a.categories, b.categories
    for cat, d in r.by_category.items():
        out.append(f"| {cat} | {ca[cat].text(False)} | {cb[cat].text(False)} | {d.text()} | {percent(d, ca[cat])} |")
    out.append(
        f"| **total** | **{a.total.text()}** | **{b.total.text()}** | **{r.total.text()}** | {percent(r.total, a.total)} |"
    )
    out += ["", _total_sentence(r).replace(" — ", "\n\n"), ""]
    if r.scenarios:
        out += ["| scenario | before | after | change |", "|---|--:|--:|--:|"]
        for k, d in r.scenarios.items():
            out.append(
                f"| {SCENARIO_NAMES.get(k, k)} | {a.scenarios[k].total.text(False)} | {b.scenarios[k].total.text(False)} "
                f"| {d.text()} |"
            )
        out.append("")
    if r.unpriced:
        out += ["**Unpriced deltas** (not counted as savings or increases):", ""]
        out += [f"- {_unpriced_side(c)} (`{c.key}`): {c.unpriced}; {c.span.text()}" for c in r.unpriced]
        out.append("")
    changed = [c for c in r.changes if c.status != "same"]
    out += [f"<details><summary>{len(changed)} changed line(s)</summary>", "", "| line | before | after | change |"]
    out.append("|---|---|---|--:|")
    for c in changed:
        out.append(f"| {c.key} ({c.status}) | {_side(c.a)} | {_side(c.b)} | {c.span.text()} |")
    out += ["", "</details>", "", f"<sub>gpufleet cost diff; prices as of {b.oldest_as_of or 'n/a'} at the oldest</sub>", ""]
    return "\n".join(out)


# --- commitment plan ----------------------------------------------------------------------------


def commit_table(p: CommitPlan, console: Console) -> None:
    # deferred: rich: only a drawn table or styled text needs it, not --json or a preview
    from rich.table import Table
    from rich.text import Text

    pr, cur = p.prices, p.prices.currency
    t = Table(title=f"{p.stack}: {p.instance_type}, which nodes to subscribe ({cur}, instance only)")
    t.add_column("node", justify="right")
    t.add_column("hours/month", justify="right")
    t.add_column("utilisation", justify="right")
    t.add_column("choice")
    _money_column(t, "monthly")
    _money_column(t, f"if {p.rest}")
    for n in p.nodes:
        t.add_row(str(n.index), str(n.hours), f"{n.utilisation:.1%}", n.choice, str(n.cost), str(n.rest_cost))
    console.print(t)
    prices = f"{p.rest} {pr.spot_hourly if p.rest == 'spot' else pr.payg_hourly}/h"
    subs = "; ".join(
        f"{k} {v} ({getattr(pr, 'monthly' if k == 'monthly' else 'yearly_per_month')}/month)" for k, v in p.break_even.items()
    )
    console.print(f"break-even utilisation against {prices}: {subs or 'none: no subscription price beats it'}")
    k = len(p.subscribed)
    console.print(
        Text(
            f"subscribe {k} node(s) {p.term or ''}, leave {len(p.nodes) - k} {p.rest}: {p.monthly_cost} {cur}/month "
            f"instead of {p.monthly_cost_without} ({p.monthly_cost - p.monthly_cost_without:+}); "
            f"upfront for a yearly term: {p.upfront} {cur}",
            "bold",
        )
    )
    if p.term_change:
        console.print(Text(p.term_change, "yellow"))
    if p.billing_block is not None:
        console.print("in the stack file, under gpufleet:fleet (the spec with these validates):")
        console.print(yaml.safe_dump(p.spec_changes or {"billing": p.billing_block}, sort_keys=False).rstrip())
    for why in p.cannot:
        console.print(Text(f"the spec cannot say this: {why}", "yellow"))
    for note in p.notes:
        console.print(f"  note: {note}")
    for b, src in p.prices.sources.items():
        console.print(f"  price {b}: {src}")
