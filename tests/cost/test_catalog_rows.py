"""PriceRow's spread (low/high), its YAML form, and the staleness mark (today injected, never the machine's clock)."""

from datetime import date
from decimal import Decimal

import pytest
import yaml

from gpufleet.cost import catalog
from gpufleet.cost.catalog import Catalog, PriceRow
from gpufleet.errors import UserError


def row(price="10", as_of="2026-01-01", low=None, high=None, key="instance/x", billing="payg") -> PriceRow:
    return PriceRow(
        key,
        billing,
        None if price is None else Decimal(price),
        "CNY",
        "hour",
        "missing" if price is None else "estimate",
        "src",
        as_of,
        "how",
        low=None if low is None else Decimal(low),
        high=None if high is None else Decimal(high),
    )


def test_spread_round_trips_and_is_omitted_when_equal_to_the_price():
    r = row(low="8", high="12")
    d = r.to_yaml()
    assert (d["low"], d["high"]) == ("8", "12")
    assert PriceRow.from_yaml(d) == r
    exact = row(low="10", high="10").to_yaml()
    assert "low" not in exact and "high" not in exact
    back = PriceRow.from_yaml(exact)
    assert (back.lowest, back.highest) == (Decimal(10), Decimal(10))


def test_a_row_without_spread_reads_as_its_price_and_an_unpriced_row_as_none():
    assert (row().lowest, row().highest) == (Decimal(10), Decimal(10))
    assert (row(price=None).lowest, row(price=None).highest) == (None, None)


@pytest.mark.parametrize(
    "as_of,today,expected",
    [
        ("2025-12-03", date(2026, 12, 3), False),  # exactly 365 days: not yet
        ("2025-12-02", date(2026, 12, 3), True),
        ("2020-12-01", date(2021, 1, 1), False),
        ("2020-12-01", date(2026, 12, 3), True),
    ],
)
def test_stale_uses_the_injected_day(as_of, today, expected):
    assert catalog.stale(row(as_of=as_of), today) is expected


def test_unpriced_rows_are_never_stale():
    assert not catalog.stale(row(price=None, as_of="2001-01-01"), date(2026, 12, 3))


def test_oldest_as_of_of_the_rows_a_total_uses():
    cat = Catalog("alicloud", "cn-hangzhou", "CNY", "2026-09-24", "2026-12-03")
    for r in (
        row(key="a", as_of="2026-09-24"),
        row(key="b", billing="any", as_of="2020-12-01"),
        row(key="c", price=None, as_of="1999-01-01"),
    ):
        cat.rows[(r.key, r.billing)] = r
    assert cat.oldest_as_of([("a", "payg")]) == "2026-09-24"
    assert cat.oldest_as_of([("a", "payg"), ("b", "payg")]) == "2020-12-01"  # b found through billing `any`
    assert cat.oldest_as_of([("c", "payg"), ("nope", "payg")]) is None
    assert [r.key for r in cat.stale_rows([("a", "payg"), ("b", "monthly")], date(2026, 12, 3))] == ["b"]


def _catalog_file(tmp_path, rows):
    doc = {"cloud": "alicloud", "region": "cn-hangzhou", "currency": "CNY", "as_of": "2026-01-01", "built": "2026-01-01"}
    (tmp_path / "alicloud-cn-hangzhou.yaml").write_text(yaml.safe_dump({**doc, "rows": rows}))


def test_a_spread_that_does_not_hold_the_price_is_a_user_error(tmp_path):
    good = row().to_yaml()
    _catalog_file(tmp_path, [{**good, "low": "11"}, {**good, "key": "y", "price": None, "high": "3"}])
    with pytest.raises(UserError) as e:
        catalog.load("alicloud", "cn-hangzhou", tmp_path)
    text = str(e.value)
    assert "rows.0: the spread 11-None must hold the price 10" in text
    assert "rows.1: low/high given without a price" in text
