"""Reports finance opens: XLSX read back with its chart, HTML drawn in headless Chromium, CSV, table."""

import copy
import csv
import io
import subprocess
from decimal import Decimal

import pytest
from gpufleet.cost import estimate, report, usage
from gpufleet.cost.compare import Option
from rich.console import Console
from tools import require


@pytest.fixture
def options(ali_inventory, prod_fleet):
    out = []
    for billing in ("payg", "spot"):
        inv = copy.deepcopy(ali_inventory)
        if billing == "spot":
            next(r for r in inv if r["type"].endswith("ScalingConfiguration"))["inputs"]["spotStrategy"] = "SpotAsPriceGo"
        e = estimate.price_inventory(
            prod_fleet.stack, prod_fleet.spec, "ecs.gn7i-c8g1.2xlarge", inv, usage.load(prod_fleet.stack)
        )
        out.append(Option("alicloud", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", billing, [], e))
    out.append(Option("tencentcloud", "ap-shanghai", None, "payg", ["region cn-hangzhou -> ap-shanghai"], None, "preview failed"))
    return out


def test_xlsx_has_a_stacked_chart_and_the_notes(options, tmp_path):
    from openpyxl import load_workbook

    path = tmp_path / "q3.xlsx"
    report.compare_xlsx("alicloud-cn-hangzhou-prod", options, path)
    wb = load_workbook(path)
    ws = wb["Summary"]
    charts = ws._charts
    assert len(charts) == 1
    chart = charts[0]
    assert chart.grouping == "stacked" and chart.type == "col"
    assert len(chart.series) == 6  # one per category
    assert ws["B2"].value == "CNY"
    header = [c.value for c in ws[4]]
    assert header[2] == "gpu_compute" and "monthly total" in header
    payg_total = ws.cell(row=5, column=header.index("monthly total") + 1).value
    assert Decimal(str(payg_total)) == options[0].estimate.monthly_total
    notes = [r[1] for r in wb["Assumptions"].iter_rows(values_only=True)]
    assert any("lb_egress_gb" in str(n) for n in notes)
    est = list(wb["Estimated prices"].iter_rows(values_only=True))
    assert any(r[1] == "instance/ecs.gn7i-c8g1.2xlarge" and r[4] == "estimate" for r in est)


def test_csv_rows_and_metadata(options):
    rows = list(csv.DictReader(io.StringIO(report.compare_csv("s", options))))
    assert [r["billing"] for r in rows] == ["payg", "spot", "payg"]
    assert rows[0]["currency"] == "CNY" and rows[0]["catalog_as_of"]
    assert rows[2]["monthly_total"] == "" and rows[2]["problem"] == "preview failed"
    assert float(rows[1]["gpu_compute"]) < float(rows[0]["gpu_compute"])


def test_table_shows_currency_and_assumptions(options):
    buf = io.StringIO()
    report.compare_table("s", options, Console(file=buf, width=250))
    text = buf.getvalue()
    assert "CNY" in text and "catalog as of" in text and "assumption" in text and "estimates" in text and "reclaimed" in text


def test_estimate_json_shape(prod_estimate):
    j = report.estimate_json(prod_estimate)
    assert set(j["by_category"]) == {"gpu_compute", "disk", "bandwidth", "nat", "load_balancer", "other"}
    line = j["lines"][0]
    for k in (
        "resource_type",
        "resource_name",
        "component",
        "unit",
        "monthly_quantity",
        "unit_price",
        "monthly_cost",
        "category",
        "price_quality",
    ):
        assert k in line
    assert j["monthly_total"] == str(prod_estimate.monthly_total)
    assert j["schema_version"] == 2 and {"complete", "unpriced", "range", "oldest_as_of", "scenarios"} <= set(j)


@pytest.mark.chromium
def test_html_chart_is_drawn_in_chromium(options, tmp_path):
    html = report.compare_html("alicloud-cn-hangzhou-prod", options)
    assert "<script src" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    page = tmp_path / "report.html"
    page.write_text(html)
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
    assert 'data-drawn="2"' in dom  # two options with a total
    assert dom.count('class="bar"') >= 2 * 4  # stacked segments: each option has >= 4 non-zero categories
    assert "Prices that are estimates" in dom and "CNY" in dom
    shot = tmp_path / "shot.png"
    subprocess.run(cmd[:-2] + [f"--screenshot={shot}", "--window-size=1000,800", page.as_uri()], capture_output=True, timeout=90)
    assert shot.exists() and shot.stat().st_size > 10_000
