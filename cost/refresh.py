"""`gpufleet catalog refresh`: ask the vendor's pricing API for the GPU instance prices of one region.

Alibaba: ECS DescribePrice (alibabacloud_ecs20140526). Tencent: CVM InquiryPriceRunInstances
(tencentcloud-sdk-python-cvm). Uses the user's credentials from the environment, writes rows with
quality `vendor API`, the fetch date, the list price (`price`) and the account's price (`trade_price`)
into cost/data/<cloud>-<region>.yaml, replacing the derived rows for the same item and billing.
The only module that talks to a network; tests point it at a fake endpoint on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path

from gpufleet.cost import catalog as pricecat
from gpufleet.cost.catalog import PriceRow
from gpufleet.stacks import catalog as stackcat

from gpufleet.errors import Problem, UserError, did_you_mean

ALI_ENV = ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET")
TC_ENV = ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY")


@dataclass
class RefreshResult:
    path: Path
    written: list[PriceRow] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _creds(names: tuple[str, str], cloud: str) -> tuple[str, str]:
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        raise UserError(
            [Problem("environment", n, f"not set: {cloud} catalog refresh needs your API credentials") for n in missing]
        )
    return os.environ[names[0]], os.environ[names[1]]


def _check(cloud: str, region: str) -> None:
    if cloud not in stackcat.CLOUDS:
        raise UserError([Problem("--cloud", "", f"unknown cloud {cloud!r}" + did_you_mean(cloud, stackcat.CLOUDS))])
    regions = stackcat.regions(cloud)
    if region not in regions:
        raise UserError([Problem("--region", "", f"unknown {cloud} region {region!r}" + did_you_mean(region, regions))])


def _d(x) -> Decimal:
    return Decimal(str(x))


def _row(cloud, key, billing, price, trade, unit, source, today, how) -> PriceRow:
    return PriceRow(
        key,
        billing,
        _d(price).quantize(Decimal("0.0001")),
        "CNY",
        unit,
        "vendor API",
        source,
        today,
        how,
        None if trade is None else _d(trade).quantize(Decimal("0.0001")),
    )


# --- Alibaba -----------------------------------------------------------------------------------


def alicloud_rows(
    region: str, today: str, endpoint: str | None = None, protocol: str = "https"
) -> tuple[list[PriceRow], list[str]]:
    from alibabacloud_ecs20140526 import models
    from alibabacloud_ecs20140526.client import Client
    from alibabacloud_tea_openapi.utils_models import Config

    ak, sk = _creds(ALI_ENV, "alicloud")
    endpoint = endpoint or f"ecs.{region}.aliyuncs.com"
    client = Client(Config(access_key_id=ak, access_key_secret=sk, endpoint=endpoint, protocol=protocol, region_id=region))
    source = f"Alibaba ECS DescribePrice ({endpoint})"
    rows, failed = [], []
    asks = {  # billing -> (request fields, unit, divisor to the catalog unit)
        "payg": ({"price_unit": "Hour", "period": 1}, "hour", 1),
        "monthly": ({"price_unit": "Month", "period": 1}, "month", 1),
        "yearly": ({"price_unit": "Year", "period": 1}, "month", 12),
        "spot": ({"price_unit": "Hour", "period": 1, "spot_strategy": "SpotAsPriceGo"}, "hour", 1),
    }
    for it in stackcat.instance_types("alicloud"):
        for billing, (extra, unit, div) in asks.items():
            req = models.DescribePriceRequest(
                region_id=region,
                resource_type="instance",
                instance_type=it.type,
                instance_network_type="vpc",
                io_optimized="optimized",
                **extra,
            )
            try:
                price = client.describe_price(req).body.price_info.price
            except Exception as exc:  # the API answers per type; one unsold type must not stop the refresh
                failed.append(
                    f"{it.type} {billing}: {getattr(exc, 'code', '') or type(exc).__name__}: {getattr(exc, 'message', exc)}"
                )
                continue
            if price.currency and price.currency != "CNY":
                failed.append(f"{it.type} {billing}: currency {price.currency}, catalog is CNY")
                continue
            how = f"DescribePrice {json.dumps(extra, sort_keys=True)}; OriginalPrice{' / 12' if div != 1 else ''}"
            rows.append(
                _row(
                    "alicloud",
                    f"instance/{it.type}",
                    billing,
                    _d(price.original_price) / div,
                    None if price.trade_price is None else _d(price.trade_price) / div,
                    unit,
                    source,
                    today,
                    how,
                )
            )
    return rows, failed


# --- Tencent -----------------------------------------------------------------------------------


def tencent_rows(
    region: str, today: str, image_id: str, endpoint: str | None = None, protocol: str = "https"
) -> tuple[list[PriceRow], list[str]]:
    from tencentcloud.common import credential
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
    from tencentcloud.common.profile.client_profile import ClientProfile
    from tencentcloud.common.profile.http_profile import HttpProfile
    from tencentcloud.cvm.v20170312 import cvm_client, models

    sid, skey = _creds(TC_ENV, "tencentcloud")
    endpoint = endpoint or "cvm.tencentcloudapi.com"
    client = cvm_client.CvmClient(
        credential.Credential(sid, skey), region, ClientProfile(httpProfile=HttpProfile(endpoint=endpoint, protocol=protocol))
    )
    source = f"Tencent CVM InquiryPriceRunInstances ({endpoint})"
    zones = stackcat.regions("tencentcloud")[region]
    rows, failed = [], []
    asks = {
        "payg": ({"InstanceChargeType": "POSTPAID_BY_HOUR"}, "hour", 1),
        "monthly": ({"InstanceChargeType": "PREPAID", "InstanceChargePrepaid": {"Period": 1}}, "month", 1),
        "yearly": ({"InstanceChargeType": "PREPAID", "InstanceChargePrepaid": {"Period": 12}}, "month", 12),
        "spot": ({"InstanceChargeType": "SPOTPAID", "InstanceMarketOptions": {"MarketType": "spot"}}, "hour", 1),
    }
    for it in stackcat.instance_types("tencentcloud"):
        zone = next((z for z, kinds in zones.items() if it.gpu in kinds), None)
        if zone is None:
            failed.append(f"{it.type}: no zone of {region} sells {it.gpu} in the stacks catalog")
            continue
        for billing, (extra, unit, div) in asks.items():
            req = models.InquiryPriceRunInstancesRequest()
            req.from_json_string(json.dumps({"Placement": {"Zone": zone}, "ImageId": image_id, "InstanceType": it.type, **extra}))
            try:
                p = client.InquiryPriceRunInstances(req).Price.InstancePrice
            except TencentCloudSDKException as exc:
                failed.append(f"{it.type} {billing}: {exc.get_code()}: {exc.get_message()}")
                continue
            if unit == "hour":
                price, trade = p.UnitPrice, p.UnitPriceDiscount
                how = f"InquiryPriceRunInstances {extra['InstanceChargeType']} in {zone}; UnitPrice per {p.ChargeUnit or 'HOUR'} (first step, 0-96 h)"
            else:
                price, trade = _d(p.OriginalPrice) / div, (None if p.DiscountPrice is None else _d(p.DiscountPrice) / div)
                how = f"InquiryPriceRunInstances PREPAID {div if div != 1 else 1} month(s) in {zone}; OriginalPrice{' / 12' if div != 1 else ''}"
            if price is None:
                failed.append(f"{it.type} {billing}: no price in the answer")
                continue
            rows.append(_row("tencentcloud", f"instance/{it.type}", billing, price, trade, unit, source, today, how))
    return rows, failed


def refresh(
    cloud: str,
    region: str,
    endpoint: str | None = None,
    protocol: str = "https",
    image_id: str | None = None,
    today: str | None = None,
    data: Path | None = None,
) -> RefreshResult:
    _check(cloud, region)
    today = today or date.today().isoformat()
    if cloud == "alicloud":
        rows, failed = alicloud_rows(region, today, endpoint, protocol)
    else:
        if image_id is None:
            from gpufleet.images.lock import load

            recipes = load().get("images", {})
            image_id = next(
                (
                    r["regions"]["tencentcloud"][region]["image_id"]
                    for r in recipes.values()
                    if region in r.get("regions", {}).get("tencentcloud", {})
                ),
                None,
            )
            if image_id is None:
                raise UserError([Problem("--image-id", "", f"needed: no image for tencentcloud {region} in images/lock.json")])
        rows, failed = tencent_rows(region, today, image_id, endpoint, protocol)
    cat = pricecat.load(cloud, region, data)
    for r in rows:
        cat.rows[(r.key, r.billing)] = r
    if rows:
        cat.as_of = max(cat.as_of, today)
    path = pricecat.write(cat, data)
    return RefreshResult(path, rows, failed)
