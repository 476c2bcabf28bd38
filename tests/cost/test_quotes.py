"""The sourced price points (cost/data/quotes-*.yaml), the Tencent step-pricing facts and the vendor API fixtures
are well-formed: every price row carries a source, a date, a currency, a unit, a quality tag and a positive price."""

import datetime as dt
import json
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src" / "gpufleet" / "cost" / "data"
VENDOR = Path(__file__).parent / "fixtures" / "vendor"
QUOTE_FILES = sorted(DATA.glob("quotes-*.yaml"))
QUALITIES = {"quote", "doc", "estimate"}
PUBLISHERS = {"vendor", "third-party"}
DATED = {True, False, "approx"}
CURRENCIES = {"CNY", "USD"}
BILLINGS = {"payg", "monthly", "yearly", "spot", "any"}


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def as_date(value) -> dt.date:
    # YAML may hand back a date (unquoted) or a string (quoted); both must be an ISO calendar date.
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value))


def decimal(value) -> Decimal:
    assert isinstance(value, str), f"price {value!r} must be a quoted string (no float rounding)"
    try:
        return Decimal(value)
    except InvalidOperation:
        raise AssertionError(f"price {value!r} is not a decimal number") from None


def test_both_clouds_have_a_quote_file():
    assert [p.name for p in QUOTE_FILES] == ["quotes-alicloud.yaml", "quotes-tencentcloud.yaml"]


@pytest.mark.parametrize("path", QUOTE_FILES, ids=lambda p: p.name)
def test_every_price_row_is_sourced_dated_and_positive(path):
    doc = load(path)
    assert doc["cloud"] in path.name
    collected = as_date(doc["collected"])
    assert doc["rows"], "a quote file with no rows"
    for i, row in enumerate(doc["rows"]):
        where = f"{path.name}: rows[{i}] ({row.get('item')})"
        assert isinstance(row.get("source"), str) and row["source"].strip(), f"{where}: no source"
        assert as_date(row["as_of"]) <= collected, f"{where}: as_of after the collection date"
        assert row["currency"] in CURRENCIES, f"{where}: currency {row.get('currency')!r}"
        assert isinstance(row.get("unit"), str) and row["unit"].strip(), f"{where}: no unit"
        assert row["quality"] in QUALITIES, f"{where}: quality {row.get('quality')!r}"
        assert row["publisher"] in PUBLISHERS, f"{where}: publisher {row.get('publisher')!r}"
        assert row["source_dated"] in DATED, f"{where}: source_dated {row.get('source_dated')!r}"
        assert row["billing"] in BILLINGS, f"{where}: billing {row.get('billing')!r}"
        assert decimal(row["price"]) > 0, f"{where}: price must be positive"
        # A third-party figure is never presented as the vendor's own documentation.
        if row["publisher"] == "third-party":
            assert row["quality"] != "doc", f"{where}: third-party rows are quote or estimate"


@pytest.mark.parametrize("path", QUOTE_FILES, ids=lambda p: p.name)
def test_ratios_are_sourced_and_unpriced_items_say_why(path):
    doc = load(path)
    for i, ratio in enumerate(doc.get("ratios", [])):
        where = f"{path.name}: ratios[{i}]"
        assert decimal(ratio["value"]) > 0, where
        assert ratio["source"].strip() and ratio["quality"] in QUALITIES, where
        as_date(ratio["as_of"])
    for i, item in enumerate(doc.get("unpriced", [])):
        assert item["item"] and item["reason"].strip(), f"{path.name}: unpriced[{i}]"


def test_the_public_gn7i_quote_pair_is_present():
    # The anchor: DescribePrice for ecs.gn7i-c8g1.2xlarge, 2026-09-24, 9.74 CNY/h and 4,675.66 CNY/month.
    rows = load(DATA / "quotes-alicloud.yaml")["rows"]
    gn7i = {(r["billing"], r["price"]) for r in rows if r["item"] == "instance/ecs.gn7i-c8g1.2xlarge" and r["currency"] == "CNY"}
    assert {("payg", "9.74"), ("monthly", "4675.66")} <= gn7i


def test_tencent_step_pricing_facts():
    doc = load(DATA / "step-pricing-tencentcloud.yaml")
    assert "213/2176" in doc["source"]
    steps = doc["steps"]
    assert [(s["from_hours"], s["to_hours"]) for s in steps] == [(0, 96), (96, 360), (360, None)]
    assert [Decimal(s["factor"]) for s in steps] == [Decimal("1.00"), Decimal("0.50"), Decimal("0.34")]
    # The doc lists no qualifying family, so none may be claimed.
    assert doc["qualifying_families"] == [] and doc["gpu_families_qualify"] == "unknown"


VENDOR_JSON = sorted(VENDOR.glob("*.json"))


def test_vendor_fixtures_exist_for_both_clouds():
    names = [p.name for p in VENDOR_JSON]
    assert any(n.startswith("alicloud-describeprice") for n in names)
    assert any(n.startswith("alicloud-describespotpricehistory") for n in names)
    assert any(n.startswith("alicloud-describespotadvice") for n in names)
    assert {"tencentcloud-inquirypricerun-prepaid.json", "tencentcloud-inquirypricerun-postpaid-by-hour.json"} <= set(names)


@pytest.mark.parametrize("path", VENDOR_JSON, ids=lambda p: p.name)
def test_vendor_fixture_parses_and_names_its_source(path):
    body = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(body, dict) and body
    source = path.with_name(path.stem + ".source.txt").read_text(encoding="utf-8")
    assert "Source:" in source and "read 20" in source, f"{path.name}: source note needs the doc and the date read"


def test_price_points_table_has_a_line_per_public_point_and_the_gn7i_pair_matches():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "price_points_table.py")], capture_output=True, text=True, check=True
    ).stdout
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| item")]
    assert len(rows) == sum(len(load(p)["rows"]) for p in QUOTE_FILES)
    gn7i = [r for r in rows if r.startswith("| instance/ecs.gn7i-c8g1.2xlarge | monthly |")]
    assert gn7i and "cn-shanghai: 4675.6600 CNY/month + 100 GiB disk" in gn7i[0] and "| 1.000 |" in gn7i[0]
