"""The price catalog: one row per (cloud, region, item, billing), loaded from cost/data/<cloud>-<region>.yaml.

Rows are written by `gpufleet catalog build` (derived from the sourced facts in
cost/data/sources-<cloud>.yaml, see derive.py) and by `gpufleet catalog refresh` (vendor pricing API,
quality `vendor API`). A row whose price is not known has `price: null` and quality `missing`: the
estimate shows it as a unit price line, never as 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path

import yaml

from gpufleet import inputs
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.files import write_atomic

DATA = Path(__file__).parent / "data"
QUALITIES = ("official", "vendor API", "third-party", "estimate", "missing")
BILLINGS = ("payg", "monthly", "yearly", "spot", "any")
HOURS_PER_MONTH = Decimal(730)


@dataclass(frozen=True)
class PriceRow:
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

    def to_yaml(self) -> dict:
        d = asdict(self)
        d["price"] = None if self.price is None else str(self.price)
        d["trade_price"] = None if self.trade_price is None else str(self.trade_price)
        if d["trade_price"] is None:
            del d["trade_price"]
        if not d["derivation"]:
            del d["derivation"]
        return d

    @staticmethod
    def from_yaml(d: dict) -> PriceRow:
        price = d.get("price")
        trade = d.get("trade_price")
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
        )


@dataclass
class Catalog:
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


def data_dir(cloud: str, data: Path | None = None) -> Path:
    """Where the cloud's price catalogs are: `data` when given (tests), else the folder its profile names."""
    if data is not None:
        return data
    from gpufleet.components import registry

    return registry.profile(cloud).price_data


def catalog_path(cloud: str, region: str, data: Path | None = None) -> Path:
    return data_dir(cloud, data) / f"{cloud}-{region}.yaml"


def regions(cloud: str, data: Path | None = None) -> list[str]:
    return sorted(p.stem[len(cloud) + 1 :] for p in data_dir(cloud, data).glob(f"{cloud}-*.yaml"))


def load(cloud: str, region: str, data: Path | None = None) -> Catalog:
    return _load(cloud, region, str(data_dir(cloud, data)))


@cache
def _load(cloud: str, region: str, data: str) -> Catalog:
    path = catalog_path(cloud, region, Path(data))
    if not path.exists():
        known = regions(cloud, Path(data))
        raise UserError(
            [
                Problem(
                    str(path),
                    "",
                    f"no price catalog for {cloud} {region}" + did_you_mean(region, known or ["(none)"]),
                )
            ]
        )
    shown = f"cost/data/{path.name}"
    fix = "rebuild it with `gpufleet catalog build` or restore it from git"
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
    for i, raw in enumerate(rows):
        row_problems = row_shape_problems(raw, shown, f"rows.{i}")
        if row_problems:
            problems += row_problems
            continue
        row = PriceRow.from_yaml(raw)
        cat.rows[(row.key, row.billing)] = row
    if problems:
        raise UserError(problems)
    return cat


HEADER = ("cloud", "region", "currency", "as_of", "built")
ROW_TEXT = ("key", "billing", "currency", "unit", "quality", "source", "as_of")


def _decimal_problem(value, shown: str, field: str) -> list[Problem]:
    if value is None:
        return []
    try:
        ok = not isinstance(value, (bool, dict, list)) and Decimal(str(value)).is_finite() and Decimal(str(value)) >= 0
    except ArithmeticError:
        ok = False
    return [] if ok else [Problem(shown, field, f"{value!r} is not a price (a number >= 0, or null when unknown)")]


def row_shape_problems(raw, shown: str, where: str) -> list[Problem]:
    """Why one catalog row cannot be read: not a mapping, a missing or non-text field, a price that is no number."""
    if not isinstance(raw, dict):
        return [Problem(shown, where, f"expected a price row (a mapping), got {inputs.kind(raw)}")]
    out = [Problem(shown, f"{where}.{k}", "missing") for k in ROW_TEXT if raw.get(k) is None]
    out += [
        Problem(shown, f"{where}.{k}", f"expected text, got {inputs.kind(raw[k])}")
        for k in (*ROW_TEXT, "derivation")
        if isinstance(raw.get(k), (dict, list))
    ]
    if isinstance(raw.get("billing"), str) and raw["billing"] not in BILLINGS:
        out.append(
            Problem(shown, f"{where}.billing", f"unknown billing {raw['billing']!r}" + did_you_mean(raw["billing"], BILLINGS))
        )
    return (
        out
        + _decimal_problem(raw.get("price"), shown, f"{where}.price")
        + _decimal_problem(raw.get("trade_price"), shown, f"{where}.trade_price")
    )


def write(cat: Catalog, data: Path | None = None) -> Path:
    path = catalog_path(cat.cloud, cat.region, data)
    rows = sorted(cat.rows.values(), key=lambda r: (r.key, BILLINGS.index(r.billing)))
    header = (
        f"# Price catalog for {cat.cloud} {cat.region}. Written by `gpufleet catalog build` (derived rows, see\n"
        f"# cost/derive.py and cost/data/sources-{cat.cloud}.yaml) and `gpufleet catalog refresh` (vendor API rows).\n"
        "# quality: official | vendor API | third-party | estimate | missing (price unknown: shown as a unit price).\n"
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
    write_atomic(path, header + body, flag=f"cost/data/{path.name}")  # a killed build leaves the old catalog whole
    _load.cache_clear()
    return path
