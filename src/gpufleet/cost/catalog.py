"""The price catalog: one row per (cloud, region, item, billing).

Two files make a region's catalog:
- the shipped one, cost/data/<cloud>-<region>.yaml inside the package, written by `gpufleet catalog build` (derived
  from the sourced facts in cost/data/sources-<cloud>.yaml and the public price points in
  cost/data/quotes-<cloud>.yaml, see derive.py) in a gpufleet checkout; an installed gpufleet's are the release's;
- the project's, cost/catalog/<cloud>-<region>.yaml beside stacks/ (user state, like cost/usage/), written by
  `gpufleet catalog refresh` (the vendor's pricing API with the user's credentials, quality `vendor API`). Its rows
  win over the shipped rows of the same item and billing; deleting it prices with the shipped catalog alone.
A row whose price is not known has `price: null` and quality `missing`: the estimate shows it as a unit price line,
never as 0.

Quality (QUALITIES), best first:
- `vendor API`: returned to us by the vendor's price API (`catalog refresh`), for this exact item, billing, region;
- `official`: printed by the vendor (price page, documentation, a documented API example) for this item and billing;
- `third-party`: published by someone else (a DescribePrice quote in a public file, a reseller, a tutorial);
- `estimate`: derived by a rule from other rows (a ratio, a size multiple, another region, an exchange rate);
  the row's `derivation` says how and `quotes` names the public points it used;
- `missing`: no price; shown as a unit price, never as 0.

`as_of` is always the date of the price's SOURCE (the quote, the doc, the API call), never the build date; a
derived row carries the oldest date of what it was derived from. `low`/`high` are the sourced spread: equal to
the price for a real quote of that exact item and billing (then omitted in the file), the spread of the quotes or
ratios a derived price rests on, or a stated +/- percentage (the reason in the derivation) when fewer than two
points exist. A row older than STALE_DAYS is `stale(row, today)`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from datetime import date, timedelta
from decimal import Decimal
from functools import cache
from pathlib import Path

import yaml
from msgspec import Struct, field
from msgspec.structs import asdict

from gpufleet import clock, inputs, registry
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.files import write_atomic
from gpufleet.stacks.project import project_root

DATA = Path(__file__).parent / "data"
PROJECT_PRICES = Path("cost") / "catalog"  # the project's own rows (`catalog refresh`), over the shipped ones
QUALITIES = ("vendor API", "official", "third-party", "estimate", "missing")  # best first
BILLINGS = ("payg", "monthly", "yearly", "spot", "any")
HOURS_PER_MONTH = Decimal(730)
STALE_DAYS = 365  # a price whose source is older than this is marked stale
# The term a `yearly` row prices: one month of a 1-year subscription (the quotes' and rules' 1-year factors in
# cost/data/quotes-<cloud>.yaml, `catalog refresh`'s DescribePrice PriceUnit=Year Period=1 and InquiryPriceRunInstances
# PREPAID 12). No row prices a 2- or 3-year term: such a term is not priced (term_not_priced), never as a 1-year one.
YEARLY_TERM_MONTHS = 12


class PriceRow(Struct, frozen=True):
    key: str  # e.g. instance/ecs.gn7i-c8g1.2xlarge, disk/cloud_essd/PL1, nat/cu
    billing: str  # payg | monthly | yearly | spot | any
    price: Decimal | None
    currency: str
    unit: str  # hour, month, GiB-hour, GiB-month, GB, CU-hour, LCU-hour, Mbps-hour, Mbps-month, day, Mbps-day
    quality: str
    source: str
    as_of: str
    derivation: str = ""
    trade_price: Decimal | None = None  # the account's price when a vendor API returned one
    low: Decimal | None = None  # the sourced spread; None = the price itself (a quote of this exact item/billing)
    high: Decimal | None = None
    quotes: tuple[str, ...] = ()  # the public price points (cost/data/quotes-<cloud>.yaml) a derived row used

    @property
    def lowest(self) -> Decimal | None:
        """The low end of the sourced spread (the price when no spread is stated); None when unpriced."""
        return self.price if self.low is None else self.low

    @property
    def highest(self) -> Decimal | None:
        return self.price if self.high is None else self.high

    def to_yaml(self) -> dict:
        d = asdict(self)
        d["price"] = None if self.price is None else str(self.price)
        for k in ("trade_price", "low", "high"):
            v = getattr(self, k)
            if v is None or (k != "trade_price" and v == self.price):
                del d[k]  # low/high equal to the price are not written
            else:
                d[k] = str(v)
        if self.quotes:
            d["quotes"] = list(self.quotes)
        else:
            del d["quotes"]
        if not d["derivation"]:
            del d["derivation"]
        return d

    @staticmethod
    def from_yaml(d: dict) -> PriceRow:
        price = d.get("price")
        trade = d.get("trade_price")
        low, high = d.get("low"), d.get("high")
        return PriceRow(
            key=d["key"],
            billing=d["billing"],
            price=None if price is None else Decimal(str(price)),
            currency=d["currency"],
            unit=d["unit"],
            quality=d["quality"],
            source=d["source"],
            as_of=str(d["as_of"]),
            derivation=d.get("derivation", ""),
            trade_price=None if trade is None else Decimal(str(trade)),
            low=None if low is None else Decimal(str(low)),
            high=None if high is None else Decimal(str(high)),
            quotes=tuple(str(x) for x in d.get("quotes") or ()),
        )


def term_not_priced(billing: str, months: int) -> str:
    """Why no catalog row prices a subscription of `months` months under `billing` ("" when its row does, or no term is
    declared): a `yearly` row is a 1-year term's price a month, which a 24- or 36-month term's is not (the vendors sell
    longer terms cheaper a month; no sourced price of one was found: docs/cost.md)."""
    if billing != "yearly" or not months or months == YEARLY_TERM_MONTHS:
        return ""
    return (
        f"a {months}-month term: no sourced price (the catalog's yearly rows price a {YEARLY_TERM_MONTHS}-month term); "
        f"not priced as a {YEARLY_TERM_MONTHS}-month term"
    )


def source_date(row: PriceRow) -> date | None:
    """The date of the row's source, None when the row has no price or no ISO date."""
    if row.price is None:
        return None
    try:
        return date.fromisoformat(row.as_of)
    except ValueError:
        return None


def stale(row: PriceRow, today: date) -> bool:
    """Whether the row's price rests on a source older than STALE_DAYS on `today` (pass gpufleet.clock.now().date())."""
    when = source_date(row)
    return when is not None and today - when > timedelta(days=STALE_DAYS)


class Catalog(Struct):
    cloud: str
    region: str
    currency: str
    as_of: str  # the newest as-of date of any row, or the build date
    built: str
    rows: dict[tuple[str, str], PriceRow] = field(default_factory=dict)

    def get(self, key: str, billing: str = "any") -> PriceRow | None:
        return self.rows.get((key, billing)) or self.rows.get((key, "any"))

    def keys(self) -> list[str]:
        return sorted({k for k, _ in self.rows})

    def oldest_as_of(self, wanted: Iterable[tuple[str, str]]) -> str | None:
        """The oldest source date among the priced rows for these (key, billing) pairs (as `get` finds them);
        None when none of them has a dated price."""
        dates = [source_date(r) for r in (self.get(k, b) for k, b in wanted) if r is not None]
        known = [x for x in dates if x is not None]
        return min(known).isoformat() if known else None

    def stale_rows(self, wanted: Iterable[tuple[str, str]], today: date) -> list[PriceRow]:
        """The rows for these (key, billing) pairs whose source is older than STALE_DAYS."""
        rows = {(r.key, r.billing): r for r in (self.get(k, b) for k, b in wanted) if r is not None}
        return [r for r in rows.values() if stale(r, today)]


def data_dir(cloud: str, data: Path | None = None) -> Path:
    """Where the cloud's price catalogs are: `data` when given (tests), else the folder its profile names."""
    if data is not None:
        return data

    return registry.profile(cloud).price_data


def catalog_path(cloud: str, region: str, data: Path | None = None) -> Path:
    return data_dir(cloud, data) / f"{cloud}-{region}.yaml"


def regions(cloud: str, data: Path | None = None) -> list[str]:
    return sorted(p.stem[len(cloud) + 1 :] for p in data_dir(cloud, data).glob(f"{cloud}-*.yaml"))


def project_prices() -> Path | None:
    """cost/catalog/ of the project; None outside a project (only the shipped prices exist there)."""
    try:
        return project_root() / PROJECT_PRICES
    except UserError:
        return None


def load(cloud: str, region: str, data: Path | None = None, project: Path | None = None) -> Catalog:
    """The region's catalog: the shipped rows (from `data`, else the package's), with the rows of the project's file
    (in `project`, else the project's cost/catalog/) over them."""
    cat = shipped(cloud, region, data)
    mine = own(cloud, region, project)
    if mine is None:
        return cat
    differs = [k for k in ("cloud", "region", "currency") if getattr(mine, k) != getattr(cat, k)]
    if differs:
        k = differs[0]
        raise UserError(
            [
                Problem(
                    f"{PROJECT_PRICES}/{cloud}-{region}.yaml",
                    k,
                    f"says {getattr(mine, k)!r}, the shipped catalog {getattr(cat, k)!r}: a region's own prices must be "
                    f"for the same {k}; delete the file and run `gpufleet catalog refresh` again",
                )
            ]
        )
    today = clock.now().date()
    problems = own_row_problems(mine, cat, f"{PROJECT_PRICES}/{cloud}-{region}.yaml", today)
    for k in ("as_of", "built"):  # dates, as _read checked
        if (day := _day(getattr(mine, k))) is not None and day > today:
            problems.append(
                Problem(
                    f"{PROJECT_PRICES}/{cloud}-{region}.yaml",
                    k,
                    f"{getattr(mine, k)!r} is after today ({today}): write the date as YYYY-MM-DD, or delete the file "
                    "and run `gpufleet catalog refresh` again",
                )
            )
    if problems:
        raise UserError(problems)
    return Catalog(cat.cloud, cat.region, cat.currency, max(cat.as_of, mine.as_of), cat.built, {**cat.rows, **mine.rows})


def own_row_problems(mine: Catalog, cat: Catalog, shown: str, today: date) -> list[Problem]:
    """What is wrong with the project's rows against the shipped catalog `cat`, as its header is checked in `load`
    (each row as `own_row_checks` says)."""
    out = []
    for i, row in enumerate(mine.rows.values()):  # the file's order: _read refused a repeated key and billing
        out += own_row_checks(row, cat, shown, f"rows.{i}", today)
    return out


def own_row_checks(row: PriceRow, cat: Catalog, shown: str, where: str, today: date) -> list[Problem]:
    """What is wrong with one of the project's rows against the shipped catalog `cat`: a row priced in another unit
    than the shipped row of its item and billing (a price per hour labelled `month` relabelled the node's hours as
    months), and an `as_of` (the date of the price's source) that is no date or is after today. `catalog refresh`
    checks each fetched row with this (and row_shape_problems) before it writes it."""
    out = []
    ref = cat.get(row.key, row.billing)
    if ref is not None and row.unit != ref.unit:
        out.append(
            Problem(
                shown,
                f"{where}.unit",
                f"says {row.unit!r}, but {row.key} ({row.billing}) is priced per {ref.unit!r} (the shipped catalog's "
                f"row): give the price per {ref.unit}",
            )
        )
    if why := source_date_problem(row.as_of, today):
        out.append(Problem(shown, f"{where}.as_of", why))
    return out


def source_date_problem(text: str, today: date) -> str:
    """Why a price's `as_of` is no date of its source (not YYYY-MM-DD, or after today); "" when it is one."""
    when = _day(text)
    if when is not None and when <= today:
        return ""
    why = "is not a date" if when is None else f"is after today ({today})"
    return f"{text!r} {why}: write the date of the price's source as YYYY-MM-DD"


def is_price(value) -> bool:
    """A price as the catalogs hold it: a finite number >= 0 (not a bool, a mapping or a list)."""
    try:
        return not isinstance(value, (bool, dict, list)) and Decimal(str(value)).is_finite() and Decimal(str(value)) >= 0
    except ArithmeticError:
        return False


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else None
    except ValueError:
        return None


def own(cloud: str, region: str, project: Path | None = None) -> Catalog | None:
    """The project's catalog file for the region as written (`project`: its folder, else the project's
    cost/catalog/); None when there is none."""
    folder = project or project_prices()
    path = None if folder is None else folder / f"{cloud}-{region}.yaml"
    if path is None or not os.path.isfile(path):
        return None
    return _read(str(path), f"{PROJECT_PRICES}/{path.name}")


def shipped(cloud: str, region: str, data: Path | None = None) -> Catalog:
    """The catalog the package ships for the region (`data`: another folder of catalogs, for tests)."""
    path = catalog_path(cloud, region, data)
    if not path.exists():
        known = regions(cloud, data)
        raise UserError(
            [
                Problem(
                    str(path),
                    "",
                    f"no price catalog for {cloud} {region}" + did_you_mean(region, known or ["(none)"]),
                )
            ]
        )
    return _read(str(path), f"cost/data/{path.name}")


@cache
def _read(name: str, shown: str) -> Catalog:
    path = Path(name)
    if shown.startswith("cost/data/"):
        fix = "rebuild it with `gpufleet catalog build` or restore it from git"
    else:
        fix = "delete it (the shipped prices then count) or run `gpufleet catalog refresh` again"
    doc = inputs.load_yaml(path, shown)
    if doc is None:
        raise UserError([Problem(shown, "", f"is empty; {fix}")])
    doc = inputs.mapping(doc, shown, "", "a price catalog (cloud, region, currency, as_of, built, rows)")
    problems = [Problem(shown, k, f"missing; {fix}") for k in HEADER if k not in doc]
    problems += [
        Problem(shown, k, f"expected text, got {inputs.kind(doc[k])}")
        for k in HEADER
        if k in doc and isinstance(doc[k], (dict, list))
    ]
    problems += [
        Problem(shown, k, f"unknown field {k!r}" + did_you_mean(str(k), (*HEADER, "rows")))
        for k in doc
        if k not in (*HEADER, "rows")
    ]
    problems += [
        Problem(shown, k, f"{doc[k]!r} is not a date: write it as YYYY-MM-DD; {fix}")
        for k in ("as_of", "built")
        if k in doc and not isinstance(doc[k], (dict, list)) and _day(str(doc[k])) is None
    ]
    rows = doc.get("rows")
    if "rows" not in doc:
        problems.append(Problem(shown, "rows", f"missing; {fix}"))
    elif not isinstance(rows, list):
        problems.append(Problem(shown, "rows", f"expected a list of price rows, got {inputs.kind(rows)}"))
    if problems:
        raise UserError(problems)
    assert isinstance(rows, list)  # checked above: a problem otherwise
    cat_cloud, cat_region, currency, as_of, built = (str(doc[k]) for k in HEADER)  # as the file says
    cat = Catalog(cat_cloud, cat_region, currency, as_of, built)
    first: dict[tuple[str, str], int] = {}
    for i, raw in enumerate(rows):
        row_problems = row_shape_problems(raw, shown, f"rows.{i}")
        if row_problems:
            problems += row_problems
            continue
        row = PriceRow.from_yaml(raw)
        if row.currency != currency:  # a USD row in a CNY file was priced as CNY, unconverted
            problems.append(
                Problem(
                    shown,
                    f"rows.{i}.currency",
                    f"says {row.currency!r}, the file's currency is {currency!r}: a catalog's prices are in its "
                    f"currency; give the price in {currency}",
                )
            )
        if (j := first.setdefault((row.key, row.billing), i)) != i:  # the last one won, without a word
            problems.append(
                Problem(shown, f"rows.{i}", f"repeats the key and billing of rows.{j} ({row.key}, {row.billing}); keep one")
            )
        cat.rows[(row.key, row.billing)] = row
    if problems:
        raise UserError(problems)
    return cat


HEADER = ("cloud", "region", "currency", "as_of", "built")
ROW_TEXT = ("key", "billing", "currency", "unit", "quality", "source", "as_of")


def _decimal_problem(value, shown: str, field: str) -> list[Problem]:
    if value is None or is_price(value):
        return []
    return [Problem(shown, field, f"{value!r} is not a price (a number >= 0, or null when unknown)")]


ROW_FIELDS = (*ROW_TEXT, "price", "derivation", "trade_price", "low", "high", "quotes")


def row_shape_problems(raw, shown: str, where: str) -> list[Problem]:
    """Why one catalog row cannot be read: not a mapping, an unknown (misspelt) field, a missing, empty or non-text
    field, no `price` key (null when unknown), a price that is no number, a quality that contradicts the price
    (`missing` with a price, a priced quality without one), a price without a source."""
    if not isinstance(raw, dict):
        return [Problem(shown, where, f"expected a price row (a mapping), got {inputs.kind(raw)}")]
    out = [
        Problem(shown, f"{where}.{k}", f"unknown field {k!r}" + did_you_mean(str(k), ROW_FIELDS))
        for k in raw
        if k not in ROW_FIELDS
    ]
    out += [Problem(shown, f"{where}.{k}", "missing") for k in ROW_TEXT if raw.get(k) is None and k != "source"]
    if "price" not in raw:
        out.append(Problem(shown, f"{where}.price", "missing: give the price, or null (with quality missing) when unknown"))
    if raw.get("source") is None and raw.get("price") is None:
        out.append(Problem(shown, f"{where}.source", "missing"))
    text = {k: raw[k] for k in (*ROW_TEXT, "derivation") if raw.get(k) is not None}
    if isinstance(text.get("as_of"), date):
        text["as_of"] = str(text["as_of"])  # an unquoted YAML date
    out += [
        Problem(shown, f"{where}.{k}", f"expected text, got {inputs.kind(v)}") for k, v in text.items() if not isinstance(v, str)
    ]
    out += [
        Problem(shown, f"{where}.{k}", "is empty: give it")
        for k in ("key", "billing", "currency", "unit", "quality", "as_of")
        if text.get(k) == ""
    ]
    if raw.get("price") is not None and not str(raw.get("source") or "").strip():
        out.append(Problem(shown, f"{where}.source", "is empty: a price names where it comes from (a URL, a contract, an API)"))
    if raw.get("quotes") is not None and not isinstance(raw["quotes"], list):
        out.append(Problem(shown, f"{where}.quotes", f"expected a list of citations, got {inputs.kind(raw['quotes'])}"))
    if isinstance(raw.get("quality"), str) and raw["quality"] not in QUALITIES:
        out.append(
            Problem(shown, f"{where}.quality", f"unknown quality {raw['quality']!r}" + did_you_mean(raw["quality"], QUALITIES))
        )
    elif raw.get("quality") == "missing" and raw.get("price") is not None:
        out.append(Problem(shown, f"{where}.quality", "is 'missing' but the row has a price: give its quality, or price: null"))
    elif isinstance(raw.get("quality"), str) and raw["quality"] != "missing" and "price" in raw and raw["price"] is None:
        out.append(
            Problem(
                shown, f"{where}.price", f"is null but the quality is {raw['quality']!r}: give the price, or quality: missing"
            )
        )
    if isinstance(raw.get("billing"), str) and raw["billing"] and raw["billing"] not in BILLINGS:
        out.append(
            Problem(shown, f"{where}.billing", f"unknown billing {raw['billing']!r}" + did_you_mean(raw["billing"], BILLINGS))
        )
    return (
        out
        + _decimal_problem(raw.get("price"), shown, f"{where}.price")
        + _decimal_problem(raw.get("trade_price"), shown, f"{where}.trade_price")
        + _decimal_problem(raw.get("low"), shown, f"{where}.low")
        + _decimal_problem(raw.get("high"), shown, f"{where}.high")
        + _spread_problem(raw, shown, where)
    )


def _spread_problem(raw: dict, shown: str, where: str) -> list[Problem]:
    """low <= price <= high when they are numbers."""
    try:
        p, lo, hi = (None if raw.get(k) is None else Decimal(str(raw[k])) for k in ("price", "low", "high"))
    except ArithmeticError:
        return []  # reported by _decimal_problem
    if p is None and (lo is not None or hi is not None):
        return [Problem(shown, where, "low/high given without a price; drop them or give the price")]
    if p is not None and ((lo is not None and lo > p) or (hi is not None and hi < p)):
        return [Problem(shown, where, f"the spread {lo}-{hi} must hold the price {p} (low <= price <= high)")]
    return []


SHIPPED_HEADER = (
    "# Price catalog for {cloud} {region}, shipped with gpufleet. Written by `gpufleet catalog build` (derived rows,\n"
    "# see cost/derive.py and cost/data/sources-{cloud}.yaml). Rows in a project's cost/catalog/ win over these.\n"
)
PROJECT_HEADER = (
    "# This project's prices for {cloud} {region}, written by `gpufleet catalog refresh` (the vendor's pricing API\n"
    "# with your credentials). Its rows win over the shipped catalog's rows of the same item and billing; delete the\n"
    "# file to price with the shipped catalog alone.\n"
)


def write(cat: Catalog, path: Path, shown: str, header: str) -> Path:
    """Write the catalog to `path` (SHIPPED_HEADER or PROJECT_HEADER on top), whole or not at all."""
    write_atomic(path, render(cat, header), shown=shown)  # a killed write leaves the old catalog whole
    _read.cache_clear()
    return path


def render(cat: Catalog, header: str) -> str:
    """The catalog file's text (SHIPPED_HEADER or PROJECT_HEADER on top)."""
    rows = sorted(cat.rows.values(), key=lambda r: (r.key, BILLINGS.index(r.billing)))
    head = header.format(cloud=cat.cloud, region=cat.region) + (
        f"# quality: {' | '.join(QUALITIES)} (price unknown: shown as a unit price).\n"
        "# as_of: the date of the price's source. low/high: the sourced spread (omitted when equal to the price).\n"
    )
    body = yaml.safe_dump(
        {
            "cloud": cat.cloud,
            "region": cat.region,
            "currency": cat.currency,
            "as_of": cat.as_of,
            "built": cat.built,
            "rows": [r.to_yaml() for r in rows],
        },
        sort_keys=False,
        allow_unicode=True,
        width=200,
    )
    return head + body
