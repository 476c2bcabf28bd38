"""`gpufleet catalog refresh`: ask the vendor's pricing API for the GPU instance prices of one region, for every
billing model (pay-as-you-go, 1 month, 1 year, spot).

Each cloud's fetcher is its prices module (components/<cloud>/prices.py, `fetch`; a cloud without one has no pricing
API, which the registry's default says), its endpoint, credentials and image need from its profile: Alibaba DescribePrice (PriceUnit
Hour / Month / Year) and DescribeSpotPriceHistory (DescribeSpotAdvice when there is no history); Tencent
InquiryPriceRunInstances (POSTPAID_BY_HOUR, PREPAID 1 and 12 months, SPOTPAID). It uses the user's credentials from
the environment; this writes rows with quality `vendor API`, the date of the price (the fetch date, or the spot
price's own timestamp), the list price (`price`) and the account's price (`trade_price`) into the project's
cost/catalog/<cloud>-<region>.yaml (user state; its rows win over the shipped catalog's rows of the same item and
billing, see catalog.py).
The only module that talks to a network; tests point it at a fake endpoint on 127.0.0.1 answering with the vendors'
documented sample responses.
"""

from __future__ import annotations

import os
from datetime import date
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

from msgspec import Struct, field

from gpufleet import clock, registry
from gpufleet.cost import catalog as pricecat
from gpufleet.cost.catalog import PriceRow
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.files import output_problems
from gpufleet.inputs import host_problem
from gpufleet.secret import has_credentials, redact_url
from gpufleet.stacks import catalog as stackcat


class RefreshResult(Struct):
    path: Path
    written: list[PriceRow] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def creds(names: tuple[str, ...], cloud: str) -> tuple[str, str]:
    """The user's API key id and secret from the environment variables `names` (the profile's price_credentials)."""
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        raise UserError(
            [Problem("environment", n, f"not set: {cloud} catalog refresh needs your API credentials") for n in missing]
        )
    return os.environ[names[0]], os.environ[names[1]]


def _check(cloud: str, region: str, endpoint: str | None = None, image_id: str | None = None) -> None:
    if why := registry.unknown(cloud):
        raise UserError([Problem("--cloud", "", why)])
    problems = []
    regions = stackcat.regions(cloud)
    if region not in regions:
        problems.append(Problem("--region", "", f"unknown {cloud} region {region!r}" + did_you_mean(region, regions)))
    profile = registry.profile(cloud)
    example = f", e.g. {profile.price_endpoint.format(region=region)}" if profile.price_endpoint else ""
    if endpoint is not None and has_credentials(endpoint):  # never shown: the message goes to a terminal or CI log
        names = " and ".join(profile.price_credentials) or "the environment"
        problems.append(
            Problem("--endpoint", "", f"has credentials in it: give HOST[:PORT] alone{example}; the key is read from {names}")
        )
    elif endpoint is not None and (why := _endpoint_problem(endpoint)):
        # an endpoint no client can reach failed every instance type one by one, then exit 1 ("no price was written")
        problems.append(Problem("--endpoint", "", f"{redact_url(endpoint)!r} {why}: give HOST[:PORT]{example}"))
    if image_id is not None and not profile.prices_take_image:  # a cloud whose prices take no image ignored it
        takers = [p.said for c in registry.names() if (p := registry.profile(c)).prices_take_image]
        only = f"{registry.spoken(takers, 'and')} only: " if takers else ""
        problems.append(Problem("--image-id", "", f"{only}{cloud} prices its instance types without an image; drop it"))
    if problems:
        raise UserError(problems)


def _endpoint_problem(endpoint: str) -> str | None:
    """Why `endpoint` is not HOST[:PORT] (a host name or IP address, a port 1-65535), as `is ...`; None when it is."""

    if not endpoint or any(ch in endpoint for ch in "/?#@") or any(ch.isspace() or not ch.isprintable() for ch in endpoint):
        return "is not HOST[:PORT] (no scheme, path, space or control character)"
    try:
        parts = urlsplit("//" + endpoint)
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError:
        return "has a port that is not 1-65535"
    if parts.port == 0:
        return "has a port that is not 1-65535"
    return host_problem(parts.hostname or "")


def d(x) -> Decimal:
    return Decimal(str(x))


def row(cloud, key, billing, price, trade, unit, source, today, how) -> PriceRow:
    return PriceRow(
        key,
        billing,
        d(price).quantize(Decimal("0.0001")),
        "CNY",
        unit,
        "vendor API",
        source,
        today,
        how,
        None if trade is None else d(trade).quantize(Decimal("0.0001")),
    )


def refused(r: PriceRow, shipped: pricecat.Catalog, today: date) -> str:
    """Why the catalog's reader (catalog._read, own_row_checks) would refuse the fetched row `r`, as one line naming
    the field the vendor answered; "" when it reads."""
    problems = pricecat.row_shape_problems(r.to_yaml(), "", "row")
    problems += pricecat.own_row_checks(r, shipped, "", "row", today)
    if not problems:
        return ""
    said = "; ".join(f"{p.path.removeprefix('row').removeprefix('.')} {p.message}".strip() for p in problems)
    return f"the vendor's answer cannot be priced ({said}); not written, the file keeps what it had: ask again later"


def refresh(
    cloud: str,
    region: str,
    endpoint: str | None = None,
    protocol: str = "https",
    image_id: str | None = None,
    today: str | None = None,
    data: Path | None = None,
    project: Path | None = None,
) -> RefreshResult:
    """Fetch the region's prices and write them into the project's catalog file (`project`: another folder, for
    tests; `data`: another folder of shipped catalogs), keeping the rows it holds for other items."""
    _check(cloud, region, endpoint, image_id)
    fetch = registry.module(cloud, "prices").fetch  # a cloud without a pricing API is refused here
    folder = project or pricecat.project_prices()
    if folder is None:
        raise UserError(
            [
                Problem(
                    "catalog refresh",
                    "",
                    f"writes your account's prices into {pricecat.PROJECT_PRICES}/ of a gpufleet project: run it in "
                    "the project folder (the one holding Pulumi.yaml and stacks/) or set GPUFLEET_PROJECT",
                )
            ]
        )
    path = folder / f"{cloud}-{region}.yaml"
    shown = f"{pricecat.PROJECT_PRICES}/{path.name}"
    problems = output_problems(path, make_folders=True, shown=shown)
    if problems:  # a folder it cannot write fails before the vendor is asked
        raise UserError(problems)
    currency = pricecat.load(cloud, region, data, folder).currency  # checks the file the rows join, before asking
    mine = pricecat.own(cloud, region, folder)
    today = today or clock.now().date().isoformat()
    fetched, failed = fetch(region, today, endpoint, protocol, image_id)
    rows, shipped, day = [], pricecat.shipped(cloud, region, data), date.fromisoformat(today)
    for r in fetched:  # a row the cost commands would refuse is not written: the file on disk always loads
        if why := refused(r, shipped, day):
            failed.append(f"{r.key.split('/', 1)[-1]} {r.billing}: {why}")
        else:
            rows.append(r)
    if rows:
        kept = dict(mine.rows) if mine else {}  # the file's rows for other items and billings stay
        kept.update({(r.key, r.billing): r for r in rows})
        as_of = max([today] + [r.as_of for r in kept.values()])
        path.parent.mkdir(parents=True, exist_ok=True)
        pricecat.write(pricecat.Catalog(cloud, region, currency, as_of, today, kept), path, shown, pricecat.PROJECT_HEADER)
    return RefreshResult(path, rows, failed)
