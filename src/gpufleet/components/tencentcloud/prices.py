"""Tencent Cloud's price fetcher for `gpufleet catalog refresh`: CVM InquiryPriceRunInstances (tencentcloud-sdk-python-cvm)
for POSTPAID_BY_HOUR (payg), PREPAID 1 month (monthly), PREPAID 12 months (yearly, stored per month) and SPOTPAID (spot).

The answer is read as JSON (`call_json`), so fields the installed SDK's models do not know (OriginalInstanceTypePrice)
are kept. The only code of this cloud that talks to a network; tests point it at a fake endpoint on 127.0.0.1 that
answers with the API reference's documented examples (tests/cost/fixtures/vendor/). The parser is pure.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from msgspec import Struct

from gpufleet.components.tencentcloud.profile import PROFILE
from gpufleet.cost.catalog import HOURS_PER_MONTH, PriceRow
from gpufleet.cost.refresh import creds, d, row
from gpufleet.errors import Problem, UserError
from gpufleet.stacks import catalog as stackcat
from gpufleet.stacks.lock import absent, load, lock_path

ENV = PROFILE.price_credentials
ASKS: dict[str, tuple[dict[str, Any], str, int]] = {  # billing -> (request fields, catalog unit, months in the term)
    "payg": ({"InstanceChargeType": "POSTPAID_BY_HOUR"}, "hour", 0),
    "monthly": ({"InstanceChargeType": "PREPAID", "InstanceChargePrepaid": {"Period": 1}}, "month", 1),
    "yearly": ({"InstanceChargeType": "PREPAID", "InstanceChargePrepaid": {"Period": 12}}, "month", 12),
    "spot": ({"InstanceChargeType": "SPOTPAID", "InstanceMarketOptions": {"MarketType": "spot"}}, "hour", 0),
}
STEP_HOURS = (96, 360)  # step 2 from 96 h, step 3 from 360 h (cost/data/step-pricing-tencentcloud.yaml)


class Inquired(Struct, frozen=True):
    price: Decimal  # per hour (hourly charge types) or per month (prepaid, divided by the term)
    trade: Decimal | None
    how: str
    month_step_factor: Decimal | None = None  # pay-as-you-go only, when the type has step prices


def parse_inquiry(body: dict, months: int) -> Inquired | None:
    """InquiryPriceRunInstances' InstancePrice: the instance type's own list price (OriginalInstanceTypePrice) when
    given, else the total (UnitPrice per hour / OriginalPrice of the term), which includes the request's system disk.
    Hourly answers with UnitPriceSecondStep below UnitPrice qualify for step pricing: the month-average factor of a
    node running all 730 h is returned. None when the answer has no price."""
    ip = ((body.get("Response") or body).get("Price") or {}).get("InstancePrice") or {}
    own = ip.get("OriginalInstanceTypePrice")
    if months == 0:
        total, trade = ip.get("UnitPrice"), ip.get("UnitPriceDiscount")
        per = f"per {ip.get('ChargeUnit') or 'HOUR'}"
    else:
        total, trade = ip.get("OriginalPrice"), ip.get("DiscountPrice")
        per = f"for {months} month(s){f', / {months}' if months > 1 else ''}"
    if own is None and total is None:
        return None
    if own is not None:
        price, how = d(own), f"OriginalInstanceTypePrice {per} (the instance type alone)"
    else:
        price, how = d(total), f"{'UnitPrice' if months == 0 else 'OriginalPrice'} {per} (includes the request's system disk)"
    div = Decimal(max(months, 1))
    factor = None
    if months == 0 and ip.get("UnitPrice") and ip.get("UnitPriceSecondStep") is not None:
        u1, u2, u3 = d(ip["UnitPrice"]), d(ip["UnitPriceSecondStep"]), d(ip.get("UnitPriceThirdStep", ip["UnitPriceSecondStep"]))
        if u2 < u1:
            first, second = STEP_HOURS
            factor = (first * u1 + (second - first) * u2 + (HOURS_PER_MONTH - second) * u3) / (HOURS_PER_MONTH * u1)
            how += f"; step prices {u1} / {u2} / {u3} (96 h, 360 h)"
        else:
            how += "; no step pricing for this type (all steps equal)"
    return Inquired(price / div, None if trade is None else d(trade) / div, how, factor)


def _image_id(region: str) -> str:
    """InquiryPriceRunInstances needs an image of the region: the first built one images/lock.json records (a placeholder
    id is no image the API knows)."""

    if why := absent():
        raise UserError([Problem("--image-id", "", f"needed: no image for tencentcloud {region}: {lock_path()} {why}")])
    recipes = load().get("images", {})
    image_id = next(
        (
            r["regions"]["tencentcloud"][region]["image_id"]
            for r in recipes.values()
            if region in r.get("regions", {}).get("tencentcloud", {})
            and not r["regions"]["tencentcloud"][region].get("placeholder", False)
        ),
        None,
    )
    if image_id is None:
        raise UserError(
            [
                Problem(
                    "--image-id",
                    "",
                    f"needed: images/lock.json holds no built image for tencentcloud {region} (placeholders are no "
                    "image the API knows): give --image-id with an image of that region (e.g. a public one, "
                    "DescribeImages)",
                )
            ]
        )
    return image_id


def fetch(
    region: str, today: str, endpoint: str | None = None, protocol: str = "https", image_id: str | None = None
) -> tuple[list[PriceRow], list[str]]:
    """Every catalog instance type x billing of the region, asked in a zone selling its GPU."""
    image_id = image_id or _image_id(region)
    # deferred: the vendor's API SDK: only `catalog refresh` calls it
    from tencentcloud.common import credential
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
    from tencentcloud.common.profile.client_profile import ClientProfile
    from tencentcloud.common.profile.http_profile import HttpProfile
    from tencentcloud.cvm.v20170312 import cvm_client

    sid, skey = creds(ENV, "tencentcloud")
    endpoint = endpoint or PROFILE.price_endpoint.format(region=region)
    client = cvm_client.CvmClient(
        credential.Credential(sid, skey), region, ClientProfile(httpProfile=HttpProfile(endpoint=endpoint, protocol=protocol))
    )
    source = f"Tencent CVM InquiryPriceRunInstances ({endpoint})"
    zones = stackcat.regions("tencentcloud")[region]
    rows, failed = [], []
    for it in stackcat.instance_types("tencentcloud"):
        zone = next((z for z, kinds in zones.items() if it.gpu in kinds), None)
        if zone is None:
            failed.append(f"{it.type}: no zone of {region} sells {it.gpu} in the stacks catalog")
            continue
        key = f"instance/{it.type}"
        for billing, (extra, unit, months) in ASKS.items():
            params = {"Placement": {"Zone": zone}, "ImageId": image_id, "InstanceType": it.type, **extra}
            try:
                got = parse_inquiry(client.call_json("InquiryPriceRunInstances", params), months)
            except TencentCloudSDKException as exc:
                failed.append(f"{it.type} {billing}: {exc.get_code()}: {exc.get_message()}")
                continue
            if got is None:
                failed.append(f"{it.type} {billing}: no price in the answer")
                continue
            how = f"InquiryPriceRunInstances {extra['InstanceChargeType']} in {zone}; {got.how}"
            rows.append(row("tencentcloud", key, billing, got.price, got.trade, unit, source, today, how))
            if got.month_step_factor is not None:
                r = row(
                    "tencentcloud",
                    f"instance-steps/{it.type}",
                    "payg",
                    got.price * got.month_step_factor,
                    None,
                    unit,
                    source,
                    today,
                    f"payg {got.price} x {got.month_step_factor.quantize(Decimal('0.0001'))}: the month-average of the API's step prices for a node running all 730 h",
                )
                rows.append(r)
    return rows, failed
