"""Alibaba Cloud's price fetcher for `gpufleet catalog refresh` (alibabacloud_ecs20140526):
- DescribePrice with PriceUnit Hour (pay-as-you-go), Month (1 month) and Year (1 year, stored per month);
- DescribeSpotPriceHistory for spot (the newest price of each zone; the row is the dearest zone, low the cheapest),
  and DescribeSpotAdvice's average spot discount when the history has no price for the type.
The only code of this cloud that talks to a network; tests point it at a fake endpoint on 127.0.0.1 that answers
with the API reference's documented sample responses (tests/cost/fixtures/vendor/). The parsers are pure.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from decimal import Decimal

from msgspec import Struct
from msgspec.structs import replace

from gpufleet.components.alicloud.profile import PROFILE
from gpufleet.cost.catalog import PriceRow
from gpufleet.cost.refresh import creds, d, row
from gpufleet.stacks import catalog as stackcat

ENV = PROFILE.price_credentials
ASKS = {  # billing -> (DescribePrice fields, catalog unit, divisor to the catalog unit)
    "payg": ({"price_unit": "Hour", "period": 1}, "hour", 1),
    "monthly": ({"price_unit": "Month", "period": 1}, "month", 1),
    "yearly": ({"price_unit": "Year", "period": 1}, "month", 12),
}


class Quoted(Struct, frozen=True):
    price: Decimal
    trade: Decimal | None
    currency: str
    how: str


def parse_describe_price(body: dict) -> Quoted:
    """DescribePrice's answer: the instance type's own price when DetailInfos breaks it out (Resource instanceType),
    else the order's total (which includes the default system disk; said in `how`)."""
    price = body["PriceInfo"]["Price"]
    details = ((price.get("DetailInfos") or {}).get("DetailInfo")) or []
    own = next((x for x in details if x.get("Resource") == "instanceType"), None)
    src, how = (
        (own, "DetailInfo instanceType OriginalPrice")
        if own
        else (price, "OriginalPrice of the order (includes the default system disk)")
    )
    trade = src.get("TradePrice")
    rules = "; ".join(
        str(r.get("Description", "")) for r in ((price.get("Rules") or body["PriceInfo"].get("Rules") or {}).get("Rule") or [])
    )
    return Quoted(
        d(src["OriginalPrice"]),
        None if trade is None else d(trade),
        price.get("Currency") or "CNY",
        how + (f"; rules: {rules}" if rules else ""),
    )


class Spot(Struct, frozen=True):
    price: Decimal  # the dearest zone's newest price (a node may land in any zone)
    low: Decimal  # the cheapest zone's
    as_of: str  # the date of the newest price read
    how: str


def parse_spot_history(body: dict, itype: str) -> Spot | None:
    """DescribeSpotPriceHistory's answer: the newest SpotPrice of each zone for the type; None when there is none."""
    newest: dict[str, dict] = {}
    for p in (body.get("SpotPrices") or {}).get("SpotPriceType") or []:
        if p.get("InstanceType") not in (None, itype):
            continue
        z = p.get("ZoneId", "")
        if z not in newest or p["Timestamp"] > newest[z]["Timestamp"]:
            newest[z] = p
    if not newest:
        return None
    prices = {z: d(p["SpotPrice"]) for z, p in newest.items()}
    top = max(prices.values())
    origin = [d(p["OriginPrice"]) for p in newest.values() if p.get("OriginPrice")]
    share = f"; {(top / max(origin) * 100).quantize(Decimal('0.1'))} % of the pay-as-you-go OriginPrice" if origin else ""
    when = max(p["Timestamp"] for p in newest.values())[:10]
    zones = ", ".join(f"{z} {v}" for z, v in sorted(prices.items()))
    return Spot(
        top, min(prices.values()), when, f"DescribeSpotPriceHistory newest SpotPrice per zone ({zones}); the dearest zone{share}"
    )


def parse_spot_advice(body: dict, itype: str) -> list[Decimal]:
    """DescribeSpotAdvice's answer: the AverageSpotDiscount (percent of pay-as-you-go, integer or text) of every zone
    listing the type. The documented sample puts ZoneId and the resources in separate list items: both are read."""
    out = []
    for zone in (body.get("AvailableSpotZones") or {}).get("AvailableSpotZone") or []:
        for r in ((zone.get("AvailableSpotResources") or {}).get("AvailableSpotResource")) or []:
            if r.get("InstanceType") == itype and r.get("AverageSpotDiscount") not in (None, ""):
                out.append(d(r["AverageSpotDiscount"]))
    return out


def _failure(exc: Exception) -> str:
    return f"{getattr(exc, 'code', '') or type(exc).__name__}: {getattr(exc, 'message', exc)}"


def fetch(
    region: str, today: str, endpoint: str | None = None, protocol: str = "https", image_id: str | None = None
) -> tuple[list[PriceRow], list[str]]:
    """Every catalog instance type x billing of the region (image_id is not asked for)."""
    # deferred: the vendor's API SDK: only `catalog refresh` calls it
    from alibabacloud_ecs20140526 import models
    from alibabacloud_ecs20140526.client import Client
    from alibabacloud_tea_openapi.utils_models import Config

    ak, sk = creds(ENV, "alicloud")
    endpoint = endpoint or PROFILE.price_endpoint.format(region=region)
    client = Client(Config(access_key_id=ak, access_key_secret=sk, endpoint=endpoint, protocol=protocol, region_id=region))
    rows: list[PriceRow] = []
    failed: list[str] = []
    since = (date.fromisoformat(today) - timedelta(days=1)).isoformat() + "T00:00:00Z"
    for it in stackcat.instance_types("alicloud"):
        key = f"instance/{it.type}"
        payg: Decimal | None = None
        for billing, (extra, unit, div) in ASKS.items():
            req = models.DescribePriceRequest(
                region_id=region,
                resource_type="instance",
                instance_type=it.type,
                instance_network_type="vpc",
                io_optimized="optimized",
                **extra,
            )
            try:
                got = parse_describe_price(client.describe_price(req).body.to_map())
            except Exception as exc:  # the API answers per type; one unsold type must not stop the refresh
                failed.append(f"{it.type} {billing}: {_failure(exc)}")
                continue
            if got.currency != "CNY":
                failed.append(f"{it.type} {billing}: currency {got.currency}, catalog is CNY")
                continue
            how = f"DescribePrice {json.dumps(extra, sort_keys=True)}; {got.how}{' / 12' if div != 1 else ''}"
            source = f"Alibaba ECS DescribePrice ({endpoint})"
            trade = None if got.trade is None else got.trade / div
            rows.append(row("alicloud", key, billing, got.price / div, trade, unit, source, today, how))
            if billing == "payg":
                payg = got.price
        rows += _spot(client, models, region, it.type, key, payg, since, today, endpoint, failed)
    return rows, failed


def _spot(client, models, region, itype, key, payg, since, today, endpoint, failed) -> list[PriceRow]:
    req = models.DescribeSpotPriceHistoryRequest(
        region_id=region, instance_type=itype, network_type="vpc", io_optimized="optimized", start_time=since
    )
    try:
        spot = parse_spot_history(client.describe_spot_price_history(req).body.to_map(), itype)
    except Exception as exc:
        failed.append(f"{itype} spot: {_failure(exc)}")
        return []
    if spot is not None:
        r = row(
            "alicloud",
            key,
            "spot",
            spot.price,
            None,
            "hour",
            f"Alibaba ECS DescribeSpotPriceHistory ({endpoint})",
            spot.as_of,
            spot.how,
        )
        return [replace(r, low=None if spot.low == r.price else spot.low.quantize(Decimal("0.0001")))]
    if payg is None:
        failed.append(f"{itype} spot: no spot price history and no pay-as-you-go price to apply a discount to")
        return []
    try:
        advice = models.DescribeSpotAdviceRequest(region_id=region, instance_types=[itype])
        shares = parse_spot_advice(client.describe_spot_advice(advice).body.to_map(), itype)
    except Exception as exc:
        failed.append(f"{itype} spot: {_failure(exc)}")
        return []
    if not shares:
        failed.append(f"{itype} spot: no spot price history or advice for the type")
        return []
    top, low = max(shares), min(shares)
    how = f"DescribeSpotAdvice AverageSpotDiscount {', '.join(str(s) for s in shares)} % of the DescribePrice pay-as-you-go {payg} (the highest zone)"
    r = row("alicloud", key, "spot", payg * top / 100, None, "hour", f"Alibaba ECS DescribeSpotAdvice ({endpoint})", today, how)
    lo = (payg * low / 100).quantize(Decimal("0.0001"))
    return [replace(r, low=None if lo == r.price else lo)]
