"""Files finance opens: CSV, XLSX and HTML of one estimate (`cost estimate`) or of a comparison (`cost compare`).

Every format shows, for each line and each total, what it rests on: `sourced` (official or vendor API price),
`estimated` (estimate or third-party price) or `unpriced` (no price or no quantity: not in the total, and the total
reads `≥ X`); a price older than a year is marked stale. XLSX totals are formulas over the line cells with the
computed value cached (a viewer that does not recalculate shows the same numbers); money has two decimals.
The terminal tables and JSON are finance/report.py's; what is read from an Estimate goes through cost/view.py.
"""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from html import escape
from pathlib import Path
from typing import BinaryIO

from msgspec import Struct

from gpufleet.cost import figures, view
from gpufleet.cost.decision import decide
from gpufleet.cost.estimate import Estimate, Line
from gpufleet.cost.resources import CATEGORIES, COMPUTE
from gpufleet.finance.compare import Option

TEMPLATES = Path(__file__).parent / "templates"
MONEY = "#,##0.00"
QUANTITY = "#,##0.####"
UNIT_PRICE = "#,##0.00####"
SHARE = "0.0%"
NO_HIGH_END = "none: lines without a price"  # a high end the JSON gives as null


def _s(x) -> str:
    return "" if x is None else str(x)


def label(o: Option) -> str:
    return f"{o.cloud} {o.region} {o.billing}"


# --- CSV ---------------------------------------------------------------------------------------

LINE_COLUMNS = (
    "row",
    "resource_type",
    "resource_name",
    "component",
    "category",
    "monthly_quantity",
    "unit",
    "unit_price",
    "monthly_cost",  # lines only: the column sums to the priced total
    "total_amount",  # category, total and range rows only (what `row` names), never added to monthly_cost
    "status",
    "stale",
    "price_quality",
    "price_key",
    "billing",
    "price_as_of",
    "price_source",
    "note",
)


def _line_row(l: Line) -> list:
    return [
        "line",
        l.resource_type,
        l.resource_name,
        l.component,
        l.category,
        _s(l.monthly_quantity),
        l.unit,
        _s(l.unit_price),
        _s(l.monthly_cost),
        "",
        view.status(l),
        "stale" if view.stale(l) else "",
        l.price_quality,
        l.price_key,
        l.billing,
        l.as_of,
        l.source,
        l.note,
    ]


def _total_rows(e: Estimate) -> list[list]:
    blank = [""] * len(LINE_COLUMNS)

    def row(kind: str, component: str, category: str, cost, status: str, note: str = "") -> list:
        r = list(blank)
        r[0], r[3], r[4], r[9], r[10], r[-1] = kind, component, category, cost, status, note
        return r

    complete = view.complete(e)
    q = view.quality(e)
    unpriced = view.category_unpriced(e)
    out = [
        row(
            "category",
            f"{c} total" if not unpriced[c] else f"{c} total (lower bound)",
            c,
            e.by_category[c],
            "incomplete" if unpriced[c] else "complete",
            f"{unpriced[c]} line(s) without a price are not in it" if unpriced[c] else "",
        )
        for c in CATEGORIES
    ]
    out.append(
        row(
            "total",
            "monthly total" if complete else "monthly total (lower bound: unpriced lines are not in it)",
            "",
            e.monthly_total,
            "complete" if complete else "incomplete",
            f"{q.sentence(e.currency)}; oldest price {view.oldest_as_of(e) or 'n/a'}",
        )
    )
    rng = view.total_range(e)
    if rng:
        out.append(row("total range", "monthly total, low", "", rng[0], "", "prices given as ranges"))
        if rng[1] is not None:
            out.append(row("total range", "monthly total, high", "", rng[1], "", "prices given as ranges"))
    return out


def estimate_csv(e: Estimate) -> str:
    """One row per line, then a row per category and the total (`row` says which); money as exact decimals. A line's
    money is in `monthly_cost`, a category's or total's in `total_amount`: each column adds up to what it says."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["stack", "cloud", "region", "instance_type", "stack_billing", "currency", *LINE_COLUMNS])
    head = [e.stack, e.cloud, e.region, e.instance_type, e.billing, e.currency]
    for l in e.lines:
        w.writerow(head + _line_row(l))
    for r in _total_rows(e):
        w.writerow(head + r)
    return buf.getvalue()


def compare_csv(stack: str, options: list[Option]) -> str:
    """One row per option: categories, total (with `complete`), quality shares, how the option was re-declared."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "stack",
            "cloud",
            "region",
            "instance_type",
            "billing",
            "currency",
            "catalog_as_of",
            "oldest_price_as_of",
            *CATEGORIES,
            "monthly_total",
            "complete",
            "monthly_low",
            "monthly_high",
            "overhead_share",
            "estimated_share",
            "unpriced_lines",
            "estimated_lines",
            "stale_lines",
            "equivalence",
            "problem",
            "assumptions",
            "decision_rank",
            "versus_current",
        ]
    )
    versus = versus_texts(options)
    for o in options:
        e = o.estimate
        if e is None:
            w.writerow(
                [stack, o.cloud, o.region, o.instance_type or "", o.billing, "", "", ""]
                + [""] * (len(CATEGORIES) + 9)
                + ["; ".join(o.mapping), o.problem or "not priced", "", "", ""]
            )
            continue
        q, rng = view.quality(e), view.total_range(e)
        w.writerow(
            [
                stack,
                o.cloud,
                o.region,
                o.instance_type or "",
                o.billing,
                e.currency,
                e.catalog_as_of,
                view.oldest_as_of(e),
                *[e.by_category[c] for c in CATEGORIES],
                e.monthly_total,
                str(view.complete(e)).lower(),
                rng[0] if rng else "",
                rng[1] if rng else "",
                "" if e.overhead_share is None else e.overhead_share,  # compute unpriced
                q.estimated_share,
                q.unpriced_lines,
                len(e.estimated),
                q.stale_lines,
                "; ".join(o.mapping),
                o.problem,
                "; ".join(e.assumptions),
                *versus.get(label(o), ("", "")),
            ]
        )
    return buf.getvalue()


# --- XLSX --------------------------------------------------------------------------------------


class _Formats(Struct):
    bold: object
    title: object
    money: object
    money_bold: object
    quantity: object
    unit_price: object
    share: object
    wrap: object


def _formats(wb) -> _Formats:
    return _Formats(
        bold=wb.add_format({"bold": True}),
        title=wb.add_format({"bold": True, "font_size": 14}),
        money=wb.add_format({"num_format": MONEY}),
        money_bold=wb.add_format({"num_format": MONEY, "bold": True}),
        quantity=wb.add_format({"num_format": QUANTITY}),
        unit_price=wb.add_format({"num_format": UNIT_PRICE}),
        share=wb.add_format({"num_format": SHARE}),
        wrap=wb.add_format({"text_wrap": True}),
    )


def _col(c: int) -> str:
    # deferred: the export's own library: only that --format loads it
    from xlsxwriter.utility import xl_col_to_name

    return xl_col_to_name(c)


# A line's own columns as the XLSX sheets head them, in the order the Lines sheet and each option's sheet give them
LINE_HEADERS = ("component", "category", "monthly quantity", "unit", "unit price", "monthly cost")
LINE_SHEET_COLUMNS = (
    "option",
    "resource type",
    "resource",
    *LINE_HEADERS,
    "status",
    "stale",
    "quality",
    "price key",
    "billing",
    "as of",
    "source",
    "note",
)
_COST = LINE_SHEET_COLUMNS.index("monthly cost")
_OPTION, _CATEGORY, _STATUS = (LINE_SHEET_COLUMNS.index(c) for c in ("option", "category", "status"))


def _write_lines(wb, f: _Formats, blocks: list[tuple[str, Estimate]]) -> tuple[str, int, int]:
    """The Lines sheet (every line of every block); (sheet name, first data row, last data row), 1-based."""
    ws = wb.add_worksheet("Lines")
    ws.write_row(0, 0, LINE_SHEET_COLUMNS, f.bold)
    r = 1
    for name, e in blocks:
        for l in e.lines:
            ws.write_string(r, 0, name)
            ws.write_string(r, 1, l.resource_type)
            ws.write_string(r, 2, l.resource_name)
            ws.write_string(r, 3, l.component)
            ws.write_string(r, 4, l.category)
            if l.monthly_quantity is None:
                ws.write_string(r, 5, "usage unknown")
            else:
                ws.write_number(r, 5, float(l.monthly_quantity), f.quantity)
            ws.write_string(r, 6, l.unit)
            if l.unit_price is None:
                ws.write_string(r, 7, "missing")
            else:
                ws.write_number(r, 7, float(l.unit_price), f.unit_price)
            if l.monthly_cost is not None:
                ws.write_number(r, _COST, float(l.monthly_cost), f.money)
            ws.write_string(r, 9, view.status(l))
            ws.write_string(r, 10, "stale" if view.stale(l) else "")
            for c, v in zip(range(11, 17), (l.price_quality, l.price_key, l.billing, l.as_of, l.source, l.note)):
                ws.write_string(r, c, str(v or ""))
            r += 1
    ws.set_column(0, 0, 28)
    ws.set_column(1, 3, 30)
    ws.set_column(5, 8, 14)
    ws.freeze_panes(1, 0)
    ws.autofilter(0, 0, max(r - 1, 1), len(LINE_SHEET_COLUMNS) - 1)
    return "Lines", 2, max(r, 2)


def _ranges(first: int, last: int) -> dict[str, str]:
    return {
        k: f"Lines!${_col(c)}${first}:${_col(c)}${last}"
        for k, c in (("option", _OPTION), ("category", _CATEGORY), ("status", _STATUS), ("cost", _COST))
    }


def _f(x: Decimal) -> float:
    return float(x)


def _ratio(part: Decimal, whole: Decimal) -> float:
    """The cached value of `=IF(whole=0,0,part/whole)`: what a spreadsheet computes, not a rounded share."""
    return 0.0 if whole == 0 else float(part) / float(whole)


# Formulas are written with write_formula only: a text cell starting with '=' (a discount's match or note, a usage file's
# name) was turned into a formula by xlsxwriter's default strings_to_formulas (`=HYPERLINK(...)` from a --discounts file).
_BOOK_OPTIONS = {"in_memory": True, "strings_to_formulas": False}


def estimate_xlsx(e: Estimate, path: Path | BinaryIO) -> None:
    """Summary (category totals, total and quality shares as formulas over the Lines sheet), Lines, Assumptions."""
    # deferred: the export's own library: only that --format loads it
    import xlsxwriter

    wb = xlsxwriter.Workbook(path, _BOOK_OPTIONS)
    f = _formats(wb)
    ws = wb.add_worksheet("Summary")
    _, first, last = _write_lines(wb, f, [(e.stack, e)])
    rg = _ranges(first, last)
    ws.write(0, 0, f"gpufleet cost estimate: {e.stack}", f.title)
    meta = [
        ("cloud / region", f"{e.cloud} {e.region}"),
        ("instance type", e.instance_type),
        ("billing", e.billing),
        ("currency", e.currency),
        ("catalog as of", e.catalog_as_of),
        ("oldest price", view.oldest_as_of(e) or "n/a"),
        (
            "complete",
            "yes" if view.complete(e) else f"no: {len(view.unpriced(e))} line(s) without a price (total is {figures.SIGN})",
        ),
    ]
    for i, (k, v) in enumerate(meta, start=2):
        ws.write_string(i - 1, 0, k, f.bold)
        ws.write_string(i - 1, 1, str(v))
    row = len(meta) + 2
    ws.write_row(row, 0, ["category", f"monthly ({e.currency})", "complete", "unpriced lines"], f.bold)
    cat_first = row + 2  # 1-based row of the first category
    unpriced = view.category_unpriced(e)
    for i, c in enumerate(CATEGORIES):
        ws.write_string(row + 1 + i, 0, c)
        ws.write_formula(row + 1 + i, 1, f'=SUMIF({rg["category"]},"{c}",{rg["cost"]})', f.money, _f(e.by_category[c]))
        ws.write_string(row + 1 + i, 2, f"no ({figures.SIGN}, lower bound)" if unpriced[c] else "yes")
        ws.write_formula(row + 1 + i, 3, f'=COUNTIFS({rg["category"]},"{c}",{rg["status"]},"unpriced")', None, unpriced[c])
    cat_last = cat_first + len(CATEGORIES) - 1
    total_row = row + 1 + len(CATEGORIES)
    ws.write_string(total_row, 0, "monthly total" if view.complete(e) else f"monthly total ({figures.SIGN}, lower bound)", f.bold)
    ws.write_formula(total_row, 1, f"=SUM(B{cat_first}:B{cat_last})", f.money_bold, _f(e.monthly_total))
    q = view.quality(e)
    shares = [
        ("on sourced prices", f'=SUMIF({rg["status"]},"sourced",{rg["cost"]})', f.money, _f(q.sourced)),
        ("on estimated prices", f'=SUMIF({rg["status"]},"estimated",{rg["cost"]})', f.money, _f(q.estimated)),
        (
            "estimated share",
            f"=IF(B{total_row + 1}=0,0,B{total_row + 3}/B{total_row + 1})",
            f.share,
            _ratio(q.estimated, e.monthly_total),
        ),
        ("unpriced lines", f'=COUNTIF({rg["status"]},"unpriced")', None, q.unpriced_lines),
    ]
    for i, (name, formula, fmt, cached) in enumerate(shares, start=1):
        ws.write_string(total_row + i, 0, name)
        ws.write_formula(total_row + i, 1, formula, fmt, cached)
    ws.set_column(0, 0, 34)
    ws.set_column(1, 1, 40)
    ws.set_column(2, 3, 20)
    _assumptions_sheet(wb, f, e.assumptions, e.discounts)
    wb.close()


def compare_xlsx(stack: str, options: list[Option], path: Path | BinaryIO) -> None:
    """Summary (one row per option: categories as SUMIFS over Lines, total as SUM, stacked chart), Lines,
    Estimated prices, Assumptions."""
    # deferred: the export's own library: only that --format loads it
    import xlsxwriter

    wb = xlsxwriter.Workbook(path, _BOOK_OPTIONS)
    f = _formats(wb)
    decision = decide(options)
    _decision_sheet(wb, f, decision)
    ws = wb.add_worksheet("Summary")
    priced = [(label(o), o.estimate) for o in options if o.estimate]
    _, first, last = _write_lines(wb, f, priced)
    rg = _ranges(first, last)
    currency = "/".join(sorted({e.currency for _, e in priced})) or "n/a"
    oldest = min((view.oldest_as_of(e) for _, e in priced if view.oldest_as_of(e)), default="n/a")
    versus = versus_texts(options)
    ws.write(0, 0, f"gpufleet cost compare: {stack}", f.title)
    ws.write_row(1, 0, ["currency", currency, "oldest price", oldest], f.bold)
    ws.write_string(2, 0, decision.sentence(), f.bold)
    header = [
        "option",
        "instance type",
        *CATEGORIES,
        "monthly total",
        "complete",
        "overhead share",
        "estimated share",
        "unpriced lines",
        "problem",
        "rank",
        "vs current",
    ]
    ws.write_row(3, 0, header, f.bold)
    n = len(CATEGORIES)
    tot_c = 2 + n
    r = 4
    for o in options:
        e = o.estimate
        ws.write_string(r, 0, label(o))
        ws.write_string(r, 1, o.instance_type or "")
        if e is None:
            ws.write_string(r, len(header) - 3, o.problem or "not priced")
            r += 1
            continue
        a = f"$A{r + 1}"
        unpriced = view.category_unpriced(e)
        for i, c in enumerate(CATEGORIES):
            ws.write_formula(
                r, 2 + i, f'=SUMIFS({rg["cost"]},{rg["option"]},{a},{rg["category"]},"{c}")', f.money, _f(e.by_category[c])
            )
            if unpriced[c]:
                ws.write_comment(r, 2 + i, f"lower bound ({figures.SIGN}): {unpriced[c]} line(s) without a price are not in it")
        ws.write_formula(r, tot_c, f"=SUM({_col(2)}{r + 1}:{_col(1 + n)}{r + 1})", f.money_bold, _f(e.monthly_total))
        ws.write_string(r, tot_c + 1, "yes" if view.complete(e) else f"no (total is {figures.SIGN})")
        t = f"{_col(tot_c)}{r + 1}"
        ws.write_formula(
            r,
            tot_c + 2,
            f"=IF({t}=0,0,({t}-{_col(2)}{r + 1})/{t})",
            f.share,
            _ratio(e.monthly_total - e.by_category[COMPUTE], e.monthly_total),
        )
        ws.write_formula(
            r,
            tot_c + 3,
            f'=IF({t}=0,0,SUMIFS({rg["cost"]},{rg["option"]},{a},{rg["status"]},"estimated")/{t})',
            f.share,
            _ratio(view.quality(e).estimated, e.monthly_total),
        )
        ws.write_formula(r, tot_c + 4, f'=COUNTIFS({rg["option"]},{a},{rg["status"]},"unpriced")', None, len(view.unpriced(e)))
        ws.write_string(r, len(header) - 3, o.problem or "")
        rank, vs = versus.get(label(o), ("", ""))
        ws.write_string(r, len(header) - 2, rank)
        ws.write_string(r, len(header) - 1, vs)
        r += 1
    ws.set_column(0, 0, 34)
    ws.set_column(1, 1, 24)
    ws.set_column(2, tot_c + 4, 14)
    if priced:
        chart = wb.add_chart({"type": "column", "subtype": "stacked"})
        for i in range(len(CATEGORIES)):
            chart.add_series(
                {
                    "name": ["Summary", 3, 2 + i],
                    "categories": ["Summary", 4, 0, r - 1, 0],
                    "values": ["Summary", 4, 2 + i, r - 1, 2 + i],
                }
            )
        chart.set_title({"name": f"Monthly cost by category ({currency})"})
        chart.set_y_axis({"name": currency, "num_format": "#,##0"})
        chart.set_size({"width": 980, "height": 420})
        ws.insert_chart(r + 2, 0, chart)
    for i, o in enumerate([o for o in options if o.estimate is not None], start=1):
        assert o.estimate is not None
        _option_sheet(wb, f, option_sheet_name(i, o), label(o), o.estimate)
    est = wb.add_worksheet("Estimated prices")
    est.write_row(0, 0, ["cloud / region", "price", "billing", "unit price", "quality", "as of", "how derived"], f.bold)
    for i, p in enumerate(estimated_prices(options), start=1):
        est.write_row(i, 0, [p["where"], p["key"], p["billing"], p["price"], p["quality"], p["as_of"], p["derivation"]])
    first_est = next((e for _, e in priced), None)
    _assumptions_sheet(
        wb,
        f,
        first_est.assumptions if first_est else [],
        [],
        [(label(o), "; ".join(o.mapping) or "the stack as declared", o.problem) for o in options],
    )
    wb.close()


def option_sheet_name(i: int, o: Option) -> str:
    """A sheet name within Excel's 31 characters: `3 tencentcloud yearly`."""
    return f"{i} {o.cloud} {o.billing}"[:31]


def _option_sheet(wb, f: _Formats, name: str, title: str, e: Estimate) -> None:
    """One option, auditable on its own: every line with its quantity and unit price and its monthly cost as a
    formula (=ROUND(quantity x unit price, 2)), the same for the low and high ends of the price's spread, category
    subtotals (SUMIF) and the total (SUM) with its range, the scenarios and the break-even utilisation as formulas."""
    ws = wb.add_worksheet(name)
    ws.write(0, 0, title, f.title)
    ws.write_string(1, 0, f"currency {e.currency}; catalog as of {e.catalog_as_of}; formulas over the cells below")
    head = [
        "resource",
        *LINE_HEADERS,
        "unit price low",
        "unit price high",
        "low",
        "high",
        "status",
        "source date",
    ]
    ws.write_row(3, 0, head, f.bold)
    first = 5  # 1-based row of the first line
    r = 4
    for l in e.lines:
        ws.write_string(r, 0, l.resource_name)
        ws.write_string(r, 1, l.component)
        ws.write_string(r, 2, l.category)
        if l.monthly_quantity is not None:
            ws.write_number(r, 3, float(l.monthly_quantity), f.quantity)
        else:
            ws.write_string(r, 3, "usage unknown")
        ws.write_string(r, 4, l.unit)
        row = r + 1
        if l.unit_price is not None:
            ws.write_number(r, 5, float(l.unit_price), f.unit_price)
        if l.monthly_cost is not None and l.monthly_quantity is not None and l.unit_price is not None:
            ws.write_formula(r, 6, f"=ROUND(D{row}*F{row},2)", f.money, _f(l.monthly_cost))
            lo, hi = l.price_low or l.unit_price, l.price_high or l.unit_price
            ws.write_number(r, 7, float(lo), f.unit_price)
            ws.write_number(r, 8, float(hi), f.unit_price)
            ws.write_formula(r, 9, f"=ROUND(D{row}*H{row},2)", f.money, _f(l.low or l.monthly_cost))
            ws.write_formula(r, 10, f"=ROUND(D{row}*I{row},2)", f.money, _f(l.high or l.monthly_cost))
        elif l.monthly_cost is not None:  # a cost with no quantity x price form (0 used): the value itself
            for col in (6, 9, 10):
                ws.write_number(r, col, float(l.monthly_cost), f.money)
        ws.write_string(r, 11, view.status(l))
        ws.write_string(r, 12, l.as_of)
        r += 1
    last = max(r, first)
    r += 1
    ws.write_row(r, 0, ["category", "", "", "", "", "", "monthly", "", "", "low", "high", "unpriced lines"], f.bold)
    sub_first = r + 2
    unpriced = view.category_unpriced(e)
    cats = e.categories
    for c in CATEGORIES:
        r += 1
        ws.write_string(r, 0, c)
        for col, letter, cached in ((6, "G", cats[c].value), (9, "J", cats[c].low), (10, "K", cats[c].high)):
            if col == 10 and not cats[c].complete:
                ws.write_string(r, col, NO_HIGH_END)
                continue
            ws.write_formula(r, col, f'=SUMIF($C${first}:$C${last},"{c}",{letter}${first}:{letter}${last})', f.money, _f(cached))
        ws.write_formula(r, 11, f'=COUNTIFS($C${first}:$C${last},"{c}",$L${first}:$L${last},"unpriced")', None, unpriced[c])
    sub_last = r + 1
    r += 1
    total = e.total
    ws.write_string(r, 0, "monthly total" if total.complete else f"monthly total ({figures.SIGN}, lower bound)", f.bold)
    for col, letter, cached in ((6, "G", total.value), (9, "J", total.low), (10, "K", total.high)):
        if col == 10 and not total.complete:
            ws.write_string(r, col, NO_HIGH_END)  # as the JSON's null: the unpriced lines have no upper bound
            continue
        ws.write_formula(r, col, f"=SUM({letter}{sub_first}:{letter}{sub_last})", f.money_bold, _f(cached))
    r += 2
    if e.scenarios:
        ws.write_row(r, 0, ["scenario", "nodes", "how", "", "", "", "monthly"], f.bold)
        for k, sc in e.scenarios.items():
            r += 1
            ws.write_string(r, 0, k)
            ws.write_number(r, 1, float(sc.nodes))
            ws.write_string(r, 2, sc.how)
            ws.write_number(r, 6, _f(sc.total.value), f.money)
        r += 2
    be = e.break_even
    if be:
        ws.write_row(r, 0, ["break-even", "payg hourly", "", "", "", "", "subscription a month", "utilisation"], f.bold)
        for term in ("monthly", "yearly"):
            if f"{term}_price" not in be:
                continue
            r += 1
            ws.write_string(r, 0, term)
            ws.write_number(r, 1, float(be["payg_hourly"]), f.unit_price)
            ws.write_number(r, 6, float(be[f"{term}_price"]), f.money)
            ws.write_formula(
                r, 7, f"=G{r + 1}/(B{r + 1}*730)", f.share, float(be[f"{term}_price"]) / (float(be["payg_hourly"]) * 730)
            )
    ws.set_column(0, 1, 34)
    ws.set_column(2, 12, 14)
    ws.freeze_panes(4, 0)


def _decision_sheet(wb, f: _Formats, d) -> None:
    """The answer first: a Decision sheet (the workbook opens on it) with the cheapest option, its margin over the
    current one and its range, the confidence and why, what was not compared and what was bounded."""
    ws = wb.add_worksheet("Decision")
    ws.activate()
    ws.set_first_sheet()
    ws.write(0, 0, "Decision", f.title)
    ws.write_string(1, 0, d.sentence(), f.bold)
    rows = [
        ("cheapest", d.cheapest or "n/a"),
        ("current (the stack as declared)", d.current or "not among the options"),
        (f"saving a month against the current ({d.currency})", d.margin),
        ("saving, low end", d.margin_low),
        ("saving, high end", d.margin_high),
        ("confidence", d.confidence),
        ("why", d.why),
        ("next cheapest", d.runner_up or ""),
        (f"next cheapest costs more by ({d.currency})", d.runner_up_margin),
        ("confidence the cheapest is below the next", d.runner_up_confidence),
        ("not compared", ", ".join(d.not_compared) or "nothing"),
        ("bounded", "; ".join(d.bounded) or "nothing"),
        ("rules", d.as_json()["rules"]),
    ]
    for i, (k, v) in enumerate(rows, start=3):
        ws.write_string(i, 0, k, f.bold)
        if isinstance(v, Decimal):
            ws.write_number(i, 1, float(v), f.money)
        elif v is None:
            ws.write_string(i, 1, "")
        else:
            ws.write_string(i, 1, str(v), f.wrap)
    ws.set_column(0, 0, 44)
    ws.set_column(1, 1, 110)


def _assumptions_sheet(wb, f: _Formats, assumptions: list[str], discounts: list[str], declared=()) -> None:
    ws = wb.add_worksheet("Assumptions")
    r = 0
    for a in assumptions:
        ws.write_row(r, 0, ["usage assumption", a])
        r += 1
    for d in discounts:
        ws.write_row(r, 0, ["discount", d])
        r += 1
    for name, how, problem in declared:
        ws.write_row(r, 0, ["re-declared as", name, how, problem])
        r += 1
    ws.write_row(r, 0, ["statuses", "sourced: official or vendor API price; estimated: estimate or third-party price; "])
    ws.write_row(r + 1, 1, ["unpriced: no price or no quantity, not in the totals (a total with one is a lower bound)"])
    ws.set_column(0, 0, 20)
    ws.set_column(1, 1, 90)


def estimated_prices(options: list[Option]) -> list[dict]:
    """Each estimated, third-party or missing price the options use, once."""
    seen, out = set(), []
    for o in options:
        for l in o.estimate.lines if o.estimate else []:
            if l.price_quality in view.ESTIMATED_QUALITIES and l.price_key:
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
                            "as_of": l.as_of,
                            "derivation": l.derivation or l.note,
                        }
                    )
    return out


# --- HTML --------------------------------------------------------------------------------------

COLORS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#b07aa1")


class Bar(Struct, frozen=True):
    """One total in the chart: its segments (category, status, value) and the lines it could not price."""

    label: str
    segments: tuple[tuple[str, str, Decimal], ...]
    unpriced: int
    total_text: str


def bar(name: str, e: Estimate) -> Bar:
    parts: dict[tuple[str, str], Decimal] = {}
    for l in e.lines:
        if l.monthly_cost is not None and l.monthly_cost > 0:
            key = (l.category, view.status(l))
            parts[key] = parts.get(key, Decimal(0)) + l.monthly_cost
    order = [(c, s) for c in CATEGORIES for s in ("sourced", "estimated")]
    segs = tuple((c, s, parts[(c, s)]) for c, s in order if (c, s) in parts)
    return Bar(name, segs, len(view.unpriced(e)), view.total_text(e))


def chart_svg(bars: list[Bar], currency: str, width: int = 960) -> str:
    """Horizontal stacked bars: a colour per category; estimated segments hatched; unpriced lines a dashed box `+N ?`."""
    left, right, row_h, top = 230, 170, 34, 10
    height = top + row_h * len(bars) + 40
    biggest = max((sum(v for _, _, v in b.segments) for b in bars), default=Decimal(0)) or Decimal(1)
    scale = (width - left - right) / float(biggest)
    out = [
        f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'data-drawn="{len(bars)}" aria-label="monthly cost per category; hatched = estimated price; dashed = unpriced">',
        "<defs>",
    ]
    for j, color in enumerate(COLORS):
        out.append(
            f'<pattern id="hatch-{j}" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">'
            f'<rect width="6" height="6" fill="{color}" opacity="0.35"/><rect width="3" height="6" fill="{color}"/></pattern>'
        )
    out.append("</defs>")
    for i, b in enumerate(bars):
        y = top + i * row_h
        out.append(f'<text x="{left - 8}" y="{y + 19}" text-anchor="end" font-size="12">{escape(b.label)}</text>')
        x = float(left)
        for cat, status, value in b.segments:
            j = CATEGORIES.index(cat) % len(COLORS)
            w = float(value) * scale
            fill = f"url(#hatch-{j})" if status == "estimated" else COLORS[j]
            out.append(
                f'<rect class="bar {status}" data-category="{cat}" x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="22" '
                f'fill="{fill}" stroke="#fff" stroke-width="0.5"><title>{escape(b.label)} {cat} ({status}): '
                f"{value} {escape(currency)}</title></rect>"
            )
            x += w
        if b.unpriced:
            out.append(
                f'<rect class="unpriced" x="{x + 2:.1f}" y="{y + 4}" width="40" height="22" fill="none" stroke="#c00" '
                f'stroke-dasharray="4 3"><title>{b.unpriced} line(s) without a price: not in the total</title></rect>'
                f'<text x="{x + 22:.1f}" y="{y + 19}" text-anchor="middle" font-size="11" fill="#c00">+{b.unpriced} ?</text>'
            )
            x += 44
        out.append(
            f'<text x="{x + 6:.1f}" y="{y + 19}" font-size="12" font-weight="bold">{escape(b.total_text)} '
            f"{escape(currency)}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _env():
    # deferred: jinja2 (with markupsafe): only the HTML export renders with it
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    return Environment(
        loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined, autoescape=select_autoescape(["html", "j2"])
    )


def _quality_row(name: str, e: Estimate) -> dict:
    q = view.quality(e)
    rng = view.total_range(e)
    return {
        "label": name,
        "total": view.total_text(e),
        "range": figures.span(*rng) if rng else "",
        "sourced": q.sourced,
        "estimated": q.estimated,
        "estimated_share": f"{q.estimated_share:.0%}",
        "unpriced": q.unpriced_lines,
        "stale": q.stale_lines,
        "oldest": view.oldest_as_of(e) or "n/a",
        "complete": view.complete(e),
    }


def _legend() -> list[dict]:
    return [
        {"category": c, "color": COLORS[j % len(COLORS)], "hatch": f"hatch-{j % len(COLORS)}"} for j, c in enumerate(CATEGORIES)
    ]


def estimate_html(e: Estimate) -> str:
    # deferred: markupsafe: only the HTML export needs it
    from markupsafe import Markup

    return (
        _env()
        .get_template("estimate.html.j2")
        .render(
            e=e,
            currency=e.currency,
            quality=[_quality_row(e.stack, e)],
            sentence=view.quality(e).sentence(e.currency),
            chart=Markup(chart_svg([bar(e.stack, e)], e.currency)),
            legend=_legend(),
            lines=[{"l": l, "status": view.status(l), "stale": view.stale(l)} for l in e.lines],
            categories=CATEGORIES,
            by_category=view.category_texts(e),
        )
    )


def versus_texts(options: list[Option]) -> dict[str, tuple[str, str]]:
    """Per option label: (decision rank, "margin confidence" against the current option), as every report shows them."""

    d = decide(options)
    out = {}
    for r in d.rows:
        p = r.versus_current
        vs = "current" if r.label == d.current else (f"{p.margin:+} {p.confidence}" if p is not None else "")
        out[r.label] = (str(r.rank), vs)
    if d.current and d.current_why:  # the current option is not ranked (its GPU compute has no price)
        out[d.current] = ("", "current, not compared")
    return out


def compare_html(stack: str, options: list[Option]) -> str:
    # deferred: markupsafe: only the HTML export needs it
    from markupsafe import Markup

    decision = decide(options).as_json()
    versus = versus_texts(options)
    priced = [(label(o), o.estimate) for o in options if o.estimate]
    currency = "/".join(sorted({e.currency for _, e in priced})) or "n/a"
    return (
        _env()
        .get_template("compare.html.j2")
        .render(
            stack=stack,
            currency=currency,
            decision=decision,
            quality=[_quality_row(name, e) for name, e in priced],
            chart=Markup(chart_svg([bar(name, e) for name, e in priced], currency)),
            legend=_legend(),
            categories=CATEGORIES,
            options=[
                {
                    "label": label(o),
                    "rank": versus.get(label(o), ("", ""))[0],
                    "versus": versus.get(label(o), ("", ""))[1],
                    "instance_type": o.instance_type or "-",
                    "by_category": view.category_texts(o.estimate) if o.estimate else None,
                    "total": view.total_text(o.estimate) if o.estimate else "n/a",
                    "overhead": figures.share(o.estimate.overhead_share) if o.estimate else "",
                    "equivalence": o.mapping,
                    "problem": o.problem,
                }
                for o in options
            ],
            assumptions=priced[0][1].assumptions if priced else [],
            estimated=estimated_prices(options),
        )
    )


def as_json_text(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
