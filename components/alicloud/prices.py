"""Alibaba Cloud's price fetcher for `gpufleet catalog refresh`: ECS DescribePrice (alibabacloud_ecs20140526).

The only code of this cloud that talks to a network; tests point it at a fake endpoint on 127.0.0.1.
"""

from __future__ import annotations

import json

from gpufleet.cost.catalog import PriceRow
from gpufleet.cost.refresh import creds, d, row
from gpufleet.stacks import catalog as stackcat

ENV = ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET")


def fetch(
    region: str, today: str, endpoint: str | None = None, protocol: str = "https", image_id: str | None = None
) -> tuple[list[PriceRow], list[str]]:
    """Every catalog instance type x billing of the region from DescribePrice (image_id is not asked for)."""
    from alibabacloud_ecs20140526 import models
    from alibabacloud_ecs20140526.client import Client
    from alibabacloud_tea_openapi.utils_models import Config

    ak, sk = creds(ENV, "alicloud")
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
                row(
                    "alicloud",
                    f"instance/{it.type}",
                    billing,
                    d(price.original_price) / div,
                    None if price.trade_price is None else d(price.trade_price) / div,
                    unit,
                    source,
                    today,
                    how,
                )
            )
    return rows, failed
