"""The files finance opens (finance/exports.py): XLSX formulas recomputed by an independent evaluator (pycel) and
compared with the JSON totals, CSV rows, the HTML chart's marks, and the same through the command."""

import csv
import io
import json
import subprocess
import sys
from decimal import Decimal
from html import escape

import pytest
from tools import require

from gpufleet.cost import decision, view
from gpufleet.finance import exports, report


def recompute(path, tmp_path):
    """{(sheet, cell): (formula, cached value, value recomputed by pycel from a copy without cached values)}."""
    from openpyxl import load_workbook
    from pycel import ExcelCompiler

    formulas = load_workbook(path)
    cached = load_workbook(path, data_only=True)
    bare = tmp_path / "no-cache.xlsx"
    formulas.save(bare)  # openpyxl writes formulas without cached values: pycel must compute every one
    stripped = load_workbook(bare, data_only=True)
    xl = ExcelCompiler(filename=str(bare))
    out = {}
    for ws in formulas:
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.startswith("="):
                    assert stripped[ws.title][c.coordinate].value is None  # nothing cached left to read back
                    out[(ws.title, c.coordinate)] = (
                        c.value,
                        cached[ws.title][c.coordinate].value,
                        xl.evaluate(f"'{ws.title}'!{c.coordinate}"),
                    )
    return out


def test_estimate_xlsx_totals_are_formulas_that_recompute_to_the_json_totals(prod_estimate, tmp_path):
    from openpyxl import load_workbook

    path = tmp_path / "e.xlsx"
    exports.estimate_xlsx(prod_estimate, path)
    cells = recompute(path, tmp_path)
    j = report.estimate_json(prod_estimate)
    ws = load_workbook(path)["Summary"]
    labels = {ws.cell(row=r, column=1).value: r for r in range(1, ws.max_row + 1)}
    total_label = next(k for k in labels if str(k).startswith("monthly total"))
    assert (total_label == "monthly total") == view.complete(prod_estimate)
    expect = {**{c: Decimal(v["amount"]) for c, v in j["by_category"].items()}, total_label: Decimal(j["monthly_total"])}
    # a category with an unpriced line is a lower bound in the sheet too (prod: load_balancer's LCU, other's bucket)
    assert [c for c, v in j["by_category"].items() if not v["complete"]] == ["load_balancer", "other"]
    for c, v in j["by_category"].items():
        assert ws[f"C{labels[c]}"].value == ("yes" if v["complete"] else "no (≥, lower bound)"), c
        formula, cached, computed = cells[("Summary", f"D{labels[c]}")]
        assert formula.startswith("=COUNTIFS(") and computed == cached == v["unpriced_lines"], c
    for name, value in expect.items():
        formula, cached, computed = cells[("Summary", f"B{labels[name]}")]
        assert formula.startswith(("=SUMIF(", "=SUM(")), formula
        assert round(Decimal(str(computed)), 2) == value == round(Decimal(str(cached)), 2), name
        assert ws[f"B{labels[name]}"].number_format == "#,##0.00"
    assert len(cells) >= len(expect) + 3
    for formula, cached, computed in cells.values():  # every formula, the quality shares too
        assert computed == pytest.approx(cached, abs=1e-9), formula
    share = cells[("Summary", f"B{labels['estimated share']}")]
    assert share[2] == pytest.approx(float(view.quality(prod_estimate).estimated_share), abs=1e-4)
    unpriced = cells[("Summary", f"B{labels['unpriced lines']}")]
    assert unpriced[2] == len(prod_estimate.unpriced)
    lines = load_workbook(path)["Lines"]
    assert lines["F2"].number_format == exports.QUANTITY and lines["I2"].number_format == "#,##0.00"


def test_compare_xlsx_recomputes_per_option_and_keeps_its_chart(options, tmp_path):
    from openpyxl import load_workbook

    path = tmp_path / "q3.xlsx"
    exports.compare_xlsx("alicloud-cn-hangzhou-prod", options, path)
    cells = recompute(path, tmp_path)
    ws = load_workbook(path)["Summary"]
    header = [c.value for c in ws[4]]
    total_col = header.index("monthly total") + 1
    for row, o in ((5, options[0]), (6, options[1])):
        formula, cached, computed = cells[("Summary", ws.cell(row=row, column=total_col).coordinate)]
        assert formula.startswith("=SUM(")
        assert round(Decimal(str(computed)), 2) == o.estimate.monthly_total == round(Decimal(str(cached)), 2)
    for formula, cached, computed in cells.values():
        assert computed == pytest.approx(cached, abs=1e-9), formula
    assert ws.cell(row=7, column=header.index("problem") + 1).value == "preview failed"
    # issue 29: the workbook opens on the decision, the same sentence the table and JSON give
    book = load_workbook(path)
    assert book.sheetnames[0] == "Decision" and book.active.title == "Decision"
    assert book["Decision"]["B2"].value is None and book["Decision"]["A2"].value.startswith("cheapest: ")
    assert book["Decision"]["A2"].value == decision.decide(options).sentence()
    ranks = sorted(int(ws.cell(row=r, column=header.index("rank") + 1).value) for r in (5, 6))
    assert ranks == [1, 2] and ws["A3"].value == book["Decision"]["A2"].value  # the Summary sheet heads with it too
    assert len(ws._charts) == 1 and ws._charts[0].grouping == "stacked" and len(ws._charts[0].series) == 6
    est = list(load_workbook(path)["Estimated prices"].iter_rows(values_only=True))
    assert any(r[1] == "instance/ecs.gn7i-c8g1.2xlarge" and r[4] == "estimate" for r in est)


def test_a_formula_error_would_be_caught(prod_estimate, tmp_path):
    """The check is not circular: a wrong cached value (what a writer bug would leave) is told apart."""
    import xlsxwriter
    from pycel import ExcelCompiler

    path = tmp_path / "bad.xlsx"
    wb = xlsxwriter.Workbook(path)
    ws = wb.add_worksheet("Summary")
    ws.write_number(0, 0, 1.25)
    ws.write_number(1, 0, 2.5)
    ws.write_formula(2, 0, "=SUM(A1:A2)", None, 99)
    wb.close()
    cells = recompute(path, tmp_path)
    assert cells[("Summary", "A3")][1:] == (99, 3.75)
    assert ExcelCompiler(filename=str(path)).evaluate("Summary!A3") == 99  # what a reader of the cache alone would see


def test_estimate_csv_has_a_row_per_line_then_categories_and_the_total(prod_estimate):
    rows = list(csv.DictReader(io.StringIO(exports.estimate_csv(prod_estimate))))
    lines = [r for r in rows if r["row"] == "line"]
    assert len(lines) == len(prod_estimate.lines)
    assert {r["status"] for r in lines} == {"sourced", "estimated", "unpriced"}
    assert all(r["monthly_cost"] == "" for r in lines if r["status"] == "unpriced")
    (total,) = [r for r in rows if r["row"] == "total"]
    assert Decimal(total["total_amount"]) == sum(Decimal(r["monthly_cost"]) for r in lines if r["monthly_cost"])
    assert total["status"] == "incomplete" and "lower bound" in total["component"] and "rests on estimated" in total["note"]
    # issue 29: the money column sums to the total (it summed to 4x: lines, categories, total and range rows in one column)
    assert sum(Decimal(r["monthly_cost"]) for r in rows if r["monthly_cost"]) == prod_estimate.monthly_total
    assert all(r["total_amount"] == "" for r in lines) and all(r["monthly_cost"] == "" for r in rows if r["row"] != "line")
    assert [r["component"] for r in rows if r["row"] == "total range"] == ["monthly total, low"]  # no high: incomplete
    cats = {r["category"]: Decimal(r["total_amount"]) for r in rows if r["row"] == "category"}
    assert cats == prod_estimate.by_category
    incomplete = {r["category"] for r in rows if r["row"] == "category" and r["status"] == "incomplete"}
    assert incomplete == {l.category for l in prod_estimate.unpriced} == {"load_balancer", "other"}


def test_compare_csv_rows_and_metadata(options):
    rows = list(csv.DictReader(io.StringIO(exports.compare_csv("s", options))))
    assert [r["billing"] for r in rows] == ["payg", "spot", "payg"]
    assert rows[0]["currency"] == "CNY" and rows[0]["catalog_as_of"] and rows[0]["oldest_price_as_of"]
    # unpriced in prod: the CLB's capacity units (usage lb_lcu_hours unknown) and the model bucket's storage
    # (usage model_bucket_gb unknown: neither cost/usage/alicloud-cn-hangzhou-prod.yaml nor the defaults give it)
    assert (
        rows[0]["complete"] == "false"
        and rows[0]["unpriced_lines"] == "2"
        and Decimal(rows[0]["estimated_share"]) > Decimal("0.5")
    )
    assert rows[2]["monthly_total"] == "" and rows[2]["problem"] == "preview failed"
    assert rows[2]["equivalence"] == "region cn-hangzhou -> ap-shanghai"
    assert float(rows[1]["gpu_compute"]) < float(rows[0]["gpu_compute"])


def test_html_puts_the_quality_share_first_and_marks_estimated_and_unpriced_segments(prod_estimate, options):
    html = exports.estimate_html(prod_estimate)
    assert html.index('id="quality"') < html.index('id="chart"') < html.index('id="lines"')
    q = view.quality(prod_estimate)
    assert f"{q.estimated_share:.0%} of the priced total rests on estimated prices" in html
    assert 'class="bar estimated"' in html and 'class="bar sourced"' in html
    assert 'class="unpriced"' in html and f"+{len(prod_estimate.unpriced)} ?" in html
    assert f"≥ {prod_estimate.monthly_total}" in html  # the total is a lower bound
    assert f"<td>≥ {prod_estimate.by_category['other']}</td>" in html  # and so is a category with an unpriced line
    compare = exports.compare_html("alicloud-cn-hangzhou-prod", options)
    assert 'data-drawn="2"' in compare and compare.count('class="unpriced"') == 2 and "preview failed" in compare
    assert "<script" not in compare and "http://" not in compare.replace("http://www.w3.org/2000/svg", "")


def test_chart_segments_add_up_to_the_priced_total(prod_estimate):
    b = exports.bar("x", prod_estimate)
    assert sum(v for _, _, v in b.segments) == prod_estimate.monthly_total
    estimated = sum(v for _, s, v in b.segments if s == "estimated")
    assert estimated == view.quality(prod_estimate).estimated


@pytest.mark.chromium
def test_html_chart_is_drawn_in_chromium(options, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(exports.compare_html("alicloud-cn-hangzhou-prod", options))
    cmd = [
        require("chromium"),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-quic",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=2000",
        "--dump-dom",
        page.as_uri(),
    ]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=90).stdout
    assert 'data-drawn="2"' in dom
    assert dom.count('class="bar ') >= 2 * 4  # stacked segments: each option has >= 4 non-zero categories
    assert "Prices that are estimates" in dom and "CNY" in dom and "estimated share" in dom
    # issue 29: the page heads with the decision (before the chart), the same sentence as the table's
    answer = decision.decide(options).sentence()
    assert '<section id="decision">' in dom and dom.index('id="decision"') < dom.index('id="chart"')
    assert escape(answer) in dom or answer in dom
    shot = tmp_path / "shot.png"
    subprocess.run(cmd[:-2] + [f"--screenshot={shot}", "--window-size=1000,800", page.as_uri()], capture_output=True, timeout=90)
    assert shot.exists() and shot.stat().st_size > 10_000


# --- the command -------------------------------------------------------------------------------


def cli(*args, env=None):
    import os

    return subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def test_estimate_in_every_format(tmp_path):
    stack = "alicloud-cn-hangzhou-prod"
    j = cli("cost", "estimate", "-s", stack, "--json")
    assert j.returncode == 0, j.stderr
    total = json.loads(j.stdout)["monthly_total"]
    assert json.loads(cli("cost", "estimate", "-s", stack, "--format", "json").stdout)["monthly_total"] == total
    for fmt in ("csv", "html", "xlsx", "table"):
        out = tmp_path / f"e.{fmt}"
        r = cli("cost", "estimate", "-s", stack, "--format", fmt, "-o", str(out))
        assert r.returncode == 0 and f"wrote {out}" in r.stderr, r.stderr
        assert out.stat().st_size > 500
    assert total in (tmp_path / "e.csv").read_text() and total in (tmp_path / "e.html").read_text()
    r = cli("cost", "estimate", "-s", stack, "--format", "xlsx")
    assert r.returncode == 2 and "-o FILE.xlsx" in r.stderr and "Traceback" not in r.stderr
    r = cli("cost", "estimate", "-s", stack, "--format", "csv", "--json")
    assert r.returncode == 2 and "--json" in r.stderr
    r = cli("cost", "estimate", "-s", stack, "--format", "xls")
    assert r.returncode == 2 and "did you mean 'xlsx'" in r.stderr


def test_compare_csv_through_the_command():
    r = cli(
        "cost",
        "compare",
        "-s",
        "alicloud-cn-hangzhou-prod",
        "--clouds",
        "alicloud",
        "--billing",
        "payg,yearly",
        "--format",
        "csv",
    )
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [x["billing"] for x in rows] == ["payg", "yearly"] and all(x["monthly_total"] for x in rows)


def test_compare_xlsx_has_an_auditable_sheet_per_option(options, tmp_path):
    """issue 29: one sheet per option: line costs, low and high as ROUND(quantity x price) formulas, category
    subtotals and the total as SUMIF / SUM, the break-even as a formula; recomputed by pycel to the JSON's figures."""
    from openpyxl import load_workbook

    path = tmp_path / "q.xlsx"
    exports.compare_xlsx("alicloud-cn-hangzhou-prod", options, path)
    cells = recompute(path, tmp_path)
    book = load_workbook(path)
    for i, o in enumerate([o for o in options if o.estimate], start=1):
        ws = book[exports.option_sheet_name(i, o)]
        assert ws["A1"].value == exports.label(o)
        labels = {ws.cell(row=r, column=1).value: r for r in range(1, ws.max_row + 1)}
        total_row = labels["monthly total (≥, lower bound)"]
        formula, cached, computed = cells[(ws.title, f"G{total_row}")]
        assert formula.startswith("=SUM(") and round(Decimal(str(computed)), 2) == o.estimate.monthly_total
        assert round(Decimal(str(cells[(ws.title, f"J{total_row}")][2])), 2) == o.estimate.total.low
        for c in ("gpu_compute", "disk", "load_balancer"):
            assert round(Decimal(str(cells[(ws.title, f"G{labels[c]}")][2])), 2) == o.estimate.by_category[c]
        line_formulas = [f for (sheet, _), (f, _, _) in cells.items() if sheet == ws.title and f.startswith("=ROUND(D")]
        assert len(line_formulas) >= 3 * sum(1 for l in o.estimate.lines if l.monthly_quantity and l.unit_price) - 3
        be = cells[(ws.title, f"H{labels['yearly']}")]
        assert be[0].startswith("=G") and be[2] == pytest.approx(
            float(o.estimate.break_even["yearly_break_even_utilisation"]), abs=1e-4
        )
    for formula, cached, computed in cells.values():
        assert computed == pytest.approx(cached, abs=1e-6), formula


def test_text_from_an_input_file_is_never_a_formula(tmp_path):
    """A discount match `=1+1*` became the formula 1+1* in the Assumptions sheet (xlsxwriter's strings_to_formulas)."""
    from openpyxl import load_workbook

    from gpufleet.cli import main

    d = tmp_path / "d.yaml"
    d.write_text('discounts:\n  - {match: "=1+1*", billing: payg, factor: 0.8, note: "=HYPERLINK(1)"}\n')
    path = tmp_path / "e.xlsx"
    main(["cost", "estimate", "-s", "alicloud-cn-hangzhou-prod", "--discounts", str(d), "--format", "xlsx", "-o", str(path)])
    cells = [c for ws in load_workbook(path) for row in ws.iter_rows() for c in row if "1+1" in str(c.value)]
    assert cells and all(c.data_type == "s" and c.value.startswith("=1+1* (payg) x0.8") for c in cells)
