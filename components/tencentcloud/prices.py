"""Tencent Cloud's price fetcher for `gpufleet catalog refresh`: CVM InquiryPriceRunInstances (tencentcloud-sdk-python-cvm).

The only code of this cloud that talks to a network; tests point it at a fake endpoint on 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any

from gpufleet.cost.catalog import PriceRow
from gpufleet.cost.refresh import creds, d, row
from gpufleet.stacks import catalog as stackcat

from gpufleet.errors import Problem, UserError

ENV = ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY")


def _image_id(region: str) -> str:
    """InquiryPriceRunInstances needs an image of the region: the first one images/lock.json records."""
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
    return image_id


def fetch(
    region: str, today: str, endpoint: str | None = None, protocol: str = "https", image_id: str | None = None
) -> tuple[list[PriceRow], list[str]]:
    """Every catalog instance type x billing of the region from InquiryPriceRunInstances in a zone selling its GPU."""
    image_id = image_id or _image_id(region)
    from tencentcloud.common import credential
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
    from tencentcloud.common.profile.client_profile import ClientProfile
    from tencentcloud.common.profile.http_profile import HttpProfile
    from tencentcloud.cvm.v20170312 import cvm_client, models

    sid, skey = creds(ENV, "tencentcloud")
    endpoint = endpoint or "cvm.tencentcloudapi.com"
    client = cvm_client.CvmClient(
        credential.Credential(sid, skey), region, ClientProfile(httpProfile=HttpProfile(endpoint=endpoint, protocol=protocol))
    )
    source = f"Tencent CVM InquiryPriceRunInstances ({endpoint})"
    zones = stackcat.regions("tencentcloud")[region]
    rows, failed = [], []
    asks: dict[str, tuple[dict[str, Any], str, int]] = {  # billing -> (request fields, price unit, months)
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
                price, trade = d(p.OriginalPrice) / div, (None if p.DiscountPrice is None else d(p.DiscountPrice) / div)
                how = f"InquiryPriceRunInstances PREPAID {div if div != 1 else 1} month(s) in {zone}; OriginalPrice{' / 12' if div != 1 else ''}"
            if price is None:
                failed.append(f"{it.type} {billing}: no price in the answer")
                continue
            rows.append(row("tencentcloud", f"instance/{it.type}", billing, price, trade, unit, source, today, how))
    return rows, failed
