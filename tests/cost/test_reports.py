"""Reports in the terminal and JSON (the files finance opens, CSV / XLSX / HTML: test_exports.py)."""

import io

from rich.console import Console

from gpufleet.finance import report


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
