"""Derive the per-region catalog rows from the public price points (cost/data/quotes-<cloud>.yaml) and the
sourced facts (cost/data/sources-<cloud>.yaml).

Each cloud's pricing module (components/<cloud>/pricing.py, `catalog_rows`) writes its disk, network, NAT, load
balancer and service rows first; then the GPU instance rows are derived here the same way for every cloud, the
nearest real quote before any ratio:
1. a CNY quote for the type, billing and region: the quote itself (quality of its publisher), less the disk it
   includes (priced on its own line) - low = high = price;
2. the same quote from another (or an unstated) region: `estimate`, the stated +/- `spreads.other_region`;
3. a ratio computed from real quote pairs of this cloud, and the documented ratios marked `use:` in the quotes
   file: payg = USD quote x (CNY/USD of the types quoted in both), monthly = payg x 730 x (monthly / 730 payg),
   yearly = monthly x (yearly / monthly), spot = payg x (spot / payg). The ratio is the mean of the points, the
   range low-high their spread (min-max), or with one point the stated +/- percentage of `spreads.<what>`;
   a type's own series' CNY/USD pair (gn7i, GN7) is preferred to the cloud's mean;
4. n x a size that is exactly 1/n of it in the same family (`rules.linear_scaling`): `estimate`;
5. nothing: price null, quality `missing`.
Every derived row names its derivation and the quotes it used (`quotes`); `as_of` is the oldest source date it
rests on. Tencent's pay-as-you-go step pricing (step-pricing-tencentcloud.yaml) is applied only to a family the
vendor names as qualifying; the payg row says so either way.
Instance types come from stacks/data/<cloud>.yaml through gpufleet.stacks.catalog.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

from msgspec import Struct
from msgspec.structs import replace

from gpufleet import inputs, registry
from gpufleet.clock import now
from gpufleet.cost import catalog as pricecat
from gpufleet.cost.catalog import HOURS_PER_MONTH, Catalog, PriceRow
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.files import write_folder
from gpufleet.stacks import catalog as stackcat

Q4 = Decimal("0.0001")
INSTANCE_BILLINGS = ("payg", "monthly", "yearly", "spot")


Q6 = Decimal("0.000001")


PACKAGE = Path(__file__).resolve().parents[1]  # gpufleet/: in a checkout, src/gpufleet/ beside pyproject.toml


def q(x: Decimal) -> Decimal:
    """4 decimals; 6 below 0.01 (per-GB-hour prices such as 0.00083 would lose 4 % at 4 decimals)."""
    four = x.quantize(Q4, rounding=ROUND_HALF_UP)
    if abs(x) >= Decimal("0.01"):
        return four
    six = x.quantize(Q6, rounding=ROUND_HALF_UP)
    return four if six == four else six


def _data(cloud: str, data: Path | None) -> Path:
    return data or registry.profile(cloud).price_data


def _shown(path: Path) -> str:
    return f"cost/data/{path.name}" if path.parent == pricecat.DATA else str(path)


def load_sources(cloud: str, data: Path | None = None) -> dict:
    path = _data(cloud, data) / f"sources-{cloud}.yaml"
    return inputs.load_mapping(path, _shown(path))


def family(cloud: str, itype: str) -> str:
    """ecs.gn7i-c32g1.16xlarge -> ecs.gn7i-c32g1; GN7.5XLARGE80 -> GN7."""
    return itype.rsplit(".", 1)[0]


def series(cloud: str, itype: str) -> str:
    """The GPU series a type belongs to (one GPU model, one price list): ecs.gn7i-c32g1.16xlarge -> ecs.gn7i; GN7.5XLARGE80 -> GN7."""
    return family(cloud, itype).split("-", 1)[0]


# --- the public price points ------------------------------------------------------------------------------


class Quote(Struct, frozen=True):
    """One published price (a row of cost/data/quotes-<cloud>.yaml)."""

    item: str
    billing: str
    price: Decimal
    currency: str
    unit: str
    region: str
    quality: str  # quote | doc | estimate (as the quotes file says)
    publisher: str  # vendor | third-party
    source: str
    as_of: str
    disk: tuple[str, int] | None = None  # a disk the quoted price includes: (catalog key, GiB)
    skip: str = ""  # why the point is not used for derivation (still listed in the price-points table)

    @property
    def catalog_quality(self) -> str:
        """A vendor's own figure is `official`; anything someone else published is `third-party`."""
        return "official" if self.publisher == "vendor" else "third-party"

    def covers(self, region: str) -> bool:
        return re.search(rf"(?<![\w-]){re.escape(region)}(?![\w-])", self.region) is not None

    def cite(self) -> str:
        """The point as quotes-<cloud>.yaml holds it (its source is there): item, billing, price, unit, date."""
        return f"{self.item} {self.billing} {self.price} {self.currency}/{self.unit} {self.as_of}"


class RatioPoint(Struct, frozen=True):
    value: Decimal
    cite: str
    as_of: str


class QuoteFile(Struct, frozen=True):
    rows: list[Quote]
    ratios: list[dict]


QUOTE_TEXT = ("item", "billing", "currency", "unit", "quality", "publisher", "source", "as_of")
QUOTE_QUALITIES = ("quote", "doc", "estimate")
PUBLISHERS = ("vendor", "third-party")


def load_quotes(cloud: str, data: Path | None = None) -> QuoteFile:
    """The public price points of cost/data/quotes-<cloud>.yaml, each checked (quote_problems): a UserError naming
    every bad row's field and its fix, before anything is derived or written."""
    path = _data(cloud, data) / f"quotes-{cloud}.yaml"
    if not path.exists():
        return QuoteFile([], [])  # a cloud with no public price points: every instance row is `missing`
    shown = _shown(path)
    doc = inputs.load_mapping(path, shown)
    raw_rows = doc.get("rows") or []
    if not isinstance(raw_rows, list):
        raise UserError([Problem(shown, "rows", f"expected a list of price points, got {inputs.kind(raw_rows)}")])
    currencies = (load_sources(cloud, data)["currency"], "USD")  # the catalog's, and USD (converted by CNY/USD pairs)
    today = now().date()
    problems = [p for i, r in enumerate(raw_rows) for p in quote_problems(r, shown, f"rows.{i}", currencies, today)]
    if problems:
        raise UserError(problems)
    rows = []
    for r in raw_rows:
        disk = r.get("disk")
        rows.append(
            Quote(
                item=r["item"],
                billing=r["billing"],
                price=Decimal(str(r["price"])),
                currency=r["currency"],
                unit=r["unit"],
                region=str(r.get("region", "")),
                quality=r["quality"],
                publisher=r["publisher"],
                source=r["source"],
                as_of=str(r["as_of"]),
                disk=None if not disk else (disk["key"], int(disk["gib"])),
                skip=r.get("not_for_derivation", ""),
            )
        )
    return QuoteFile(rows, list(doc.get("ratios") or []))


def quote_problems(raw, shown: str, where: str, currencies: tuple[str, ...], today: date) -> list[Problem]:
    """Why one row of quotes-<cloud>.yaml cannot be used: not a mapping, a missing or non-text field, a price that is
    no number >= 0, a currency the build cannot convert, an unknown billing, quality or publisher, an `as_of` that is
    no date or is after today, a `disk` that is not {key, gib}."""
    if not isinstance(raw, dict):
        return [Problem(shown, where, f"expected a price point (a mapping), got {inputs.kind(raw)}")]
    if isinstance(raw.get("as_of"), date):  # an unquoted YAML date
        raw = {**raw, "as_of": str(raw["as_of"])}
    out = []
    for k in QUOTE_TEXT:
        v = raw.get(k)
        if v is None or v == "":
            out.append(Problem(shown, f"{where}.{k}", "missing: every price point names it (see the file's header)"))
        elif not isinstance(v, str):
            out.append(Problem(shown, f"{where}.{k}", f"expected text, got {inputs.kind(v)}"))
    price = raw.get("price")
    if price is None or not pricecat.is_price(price):
        out.append(Problem(shown, f"{where}.price", f"{price!r} is not a price: give the published figure as a number >= 0"))
    for k, known in (("billing", pricecat.BILLINGS), ("quality", QUOTE_QUALITIES), ("publisher", PUBLISHERS)):
        v = raw.get(k)
        if isinstance(v, str) and v and v not in known:
            out.append(Problem(shown, f"{where}.{k}", f"unknown {k} {v!r}" + did_you_mean(v, list(known))))
    cur = raw.get("currency")
    if isinstance(cur, str) and cur and cur not in currencies:
        out.append(
            Problem(
                shown,
                f"{where}.currency",
                f"{cur!r} cannot be converted: the build prices in {' or '.join(currencies)}; give the figure in one of them",
            )
        )
    when = raw.get("as_of")
    if isinstance(when, str) and when and (why := pricecat.source_date_problem(when, today)):
        out.append(Problem(shown, f"{where}.as_of", why))
    disk = raw.get("disk")
    if disk:
        ok = isinstance(disk, dict) and isinstance(disk.get("key"), str) and bool(disk["key"])
        ok = ok and isinstance(disk.get("gib"), int) and not isinstance(disk["gib"], bool) and disk["gib"] > 0
        if not ok:
            out.append(Problem(shown, f"{where}.disk", f"expected {{key: disk/..., gib: N > 0}}, got {disk!r}"))
    return out


def fraction(text) -> Decimal:
    """'0.85' or '1/3' as a Decimal (1/3 to 10 places)."""
    f = Fraction(str(text))
    return (Decimal(f.numerator) / Decimal(f.denominator)).quantize(Decimal("1E-10"))


# --- a price with its spread ------------------------------------------------------------------------------


class Est(Struct, frozen=True):
    """A price on its way into a row: the price, its sourced spread, quality, source, date, how, quotes used."""

    price: Decimal
    low: Decimal
    high: Decimal
    quality: str
    source: str
    as_of: str
    how: str
    quotes: tuple[str, ...] = ()

    def scaled(self, factor: Decimal, low: Decimal, high: Decimal, how: str, quotes=(), as_of: str | None = None) -> Est:
        dates = [d for d in (self.as_of, as_of) if d]
        return Est(
            self.price * factor,
            self.low * low,
            self.high * high,
            "estimate",
            self.source,
            min(dates),
            how,
            tuple(dict.fromkeys((*self.quotes, *quotes))),
        )


class Ratio(Struct, frozen=True):
    value: Decimal
    low: Decimal
    high: Decimal
    how: str
    quotes: tuple[str, ...]
    as_of: str


def ratio_of(points: list[RatioPoint], spread: dict, what: str, prefer: list[RatioPoint] | None = None) -> Ratio | None:
    """The ratio used and its range: the mean of the points (of `prefer` when given), low-high their min-max;
    with one point the stated +/- percentage of `spread` (its reason in the text); None without points."""
    if not points:
        return None
    values = [p.value for p in points]
    central_pts = prefer or points
    central = sum((p.value for p in central_pts), Decimal(0)) / len(central_pts)
    cites = tuple(dict.fromkeys(p.cite for p in points))
    as_of = min(p.as_of for p in points)
    shown = ", ".join(f"{q(v)}" for v in values)
    if len(points) == 1:
        pct = Decimal(spread["pct"]) / 100
        return Ratio(
            central,
            central * (1 - pct),
            central * (1 + pct),
            f"{what} {q(central)} (one point; range +/-{spread['pct']} % stated: {spread['reason']})",
            cites,
            as_of,
        )
    which = "its series'" if prefer else "mean of the"
    return Ratio(
        central,
        min(values),
        max(values),
        f"{what} {q(central)} ({which} points; range {q(min(values))}-{q(max(values))} from the points {shown})",
        cites,
        as_of,
    )


# --- the derivation context ---------------------------------------------------------------------------------


class DeriveContext:
    """What a cloud's `catalog_rows(ctx)` writes rows into (`add`, `add_fact`), with the region's sourced facts."""

    def __init__(self, src: dict, region: str, today: str, quotes: QuoteFile | None = None, steps: dict | None = None):
        self.src = src
        self.region = region
        self.today = today
        self.currency = src["currency"]
        self.quotes = quotes or QuoteFile([], [])
        self.steps = steps
        self.rows: dict[tuple[str, str], PriceRow] = {}

    def source(self, name: str) -> dict:
        return self.src["sources"][name]

    def spread(self, name: str) -> dict:
        return self.src["spreads"][name]

    def add(self, key, billing, price, unit, quality, source, as_of, derivation="", low=None, high=None, quotes=()):
        price = None if price is None else q(Decimal(price))
        if price is None:
            quality = "missing"
            low = high = None
        low = None if low is None else q(Decimal(low))
        high = None if high is None else q(Decimal(high))
        self.rows[(key, billing)] = PriceRow(
            key,
            billing,
            price,
            self.currency,
            unit,
            quality,
            source,
            str(as_of),
            derivation,
            low=None if low == price else low,
            high=None if high == price else high,
            quotes=tuple(quotes),
        )

    def add_est(self, key: str, billing: str, unit: str, e: Est | None, missing_why: str) -> None:
        if e is None:
            self.add(key, billing, None, unit, "missing", "", self.today, missing_why)
            return
        self.add(key, billing, e.price, unit, e.quality, e.source, e.as_of, e.how, e.low, e.high, e.quotes)

    def add_fact(self, key, billing, fact: dict, unit, field="price", listed=None, extra="", spread: str = "other_region"):
        """A sourced number; `listed`: regions the source names (others get the example region's number as an
        estimate with the stated spread `spreads.<spread>`)."""
        s = self.source(fact["source"]) if "source" in fact else {"url": "", "as_of": self.today, "quality": "missing"}
        if fact.get("missing"):
            self.add(
                key,
                billing,
                None,
                unit,
                "missing",
                s["url"],
                s.get("as_of", self.today),
                f"no sourced price in cost/data/sources-{self.src['cloud']}.yaml"
                + (f"; {fact['note']}" if fact.get("note") else ""),
            )
            return
        quality = s["quality"]
        notes = [n for n in (fact.get("note"), extra) if n]
        example = self.src.get("example_region")
        listed = fact.get("regions_listed", listed)
        price = Decimal(fact[field])
        low = high = price
        if fact.get("estimate_note"):
            quality = "estimate"
            notes.append(fact["estimate_note"])
        elif example and self.region != example and not (listed and self.region in listed):
            quality = "estimate"
            sp = self.spread(spread)
            pct = Decimal(sp["pct"]) / 100
            low, high = price * (1 - pct), price * (1 + pct)
            notes.append(f"{example} example price applied to {self.region} (regional price not found; +/-{sp['pct']} %)")
        self.add(key, billing, price, unit, quality, s["url"], s.get("as_of", self.today), "; ".join(notes), low, high)

    # --- rows straight from the public price points (services: KMS, SSM, object storage, snapshots, ...) ----------

    def service_fx(self) -> Ratio | None:
        """CNY per USD for services: the pairs of one non-instance item quoted in both currencies (same billing and
        unit) in the quotes file; their mean, the range their spread."""
        by: dict[tuple[str, str, str], dict[str, Quote]] = {}
        for x in self.quotes.rows:
            if not x.item.startswith("instance/") and not x.skip:
                by.setdefault((x.item, x.billing, x.unit), {}).setdefault(x.currency, x)
        points = [
            RatioPoint(
                c[self.currency].price / c["USD"].price,
                f"pair {c[self.currency].cite()} / {c['USD'].cite()}",
                min(c[self.currency].as_of, c["USD"].as_of),
            )
            for _, c in sorted(by.items())
            if self.currency in c and "USD" in c
        ]
        return ratio_of(points, self.spread("service_usd_to_cny"), "CNY/USD of services")

    def add_quote(
        self,
        key: str,
        billing: str,
        unit: str,
        item: str,
        qbilling: str,
        why_missing: str,
        note: str = "",
        scale: Decimal = Decimal(1),
    ):
        """A row from the quotes file: a CNY point (its region covering this one, or `mainland`), else a CNY point of
        another region (+/- stated), else a USD point x the services' CNY/USD; else `missing` with the reason.
        `scale` turns the quote's unit into the row's (1/24 for a per-day quote on a per-hour row)."""
        found = [x for x in self.quotes.rows if x.item == item and x.billing == qbilling and not x.skip]
        cny = [x for x in found if x.currency == self.currency]
        usd = [x for x in found if x.currency == "USD"]
        fx = self.service_fx()
        if not cny and not (usd and fx is not None):
            self.add(key, billing, None, unit, "missing", "", self.today, why_missing)
            return
        x = None
        if cny:
            here = [
                r
                for r in cny
                if r.covers(self.region) or re.search(r"mainland|all", r.region) and "international" not in r.region
            ]
            x = max(here or cny, key=lambda r: (r.publisher == "vendor", r.as_of))
        else:
            x = max(usd, key=lambda r: r.as_of)
        per = "" if scale == 1 else f", x {q(scale)} per {unit}"
        what = f"{x.quality} {x.price} {x.currency}/{x.unit} ({x.region}){per}"
        price = x.price * scale
        if cny and here:
            self.add(
                key,
                billing,
                price,
                unit,
                x.catalog_quality,
                x.source,
                x.as_of,
                "; ".join(n for n in (what, note) if n),
                quotes=(x.cite(),),
            )
        elif cny:
            sp = self.spread("other_region")
            pct = Decimal(sp["pct"]) / 100
            how = f"{what}, applied to {self.region} (+/-{sp['pct']} % stated: {sp['reason']})"
            self.add(
                key,
                billing,
                price,
                unit,
                "estimate",
                x.source,
                x.as_of,
                "; ".join(n for n in (how, note) if n),
                price * (1 - pct),
                price * (1 + pct),
                (x.cite(),),
            )
        else:
            assert fx is not None
            how = f"{what} x {fx.how}"
            self.add(
                key,
                billing,
                price * fx.value,
                unit,
                "estimate",
                x.source,
                min(x.as_of, fx.as_of),
                "; ".join(n for n in (how, note) if n),
                price * fx.low,
                price * fx.high,
                (x.cite(), *fx.quotes),
            )


# --- GPU instances ------------------------------------------------------------------------------------------


def _per_catalog_unit(qt: Quote) -> Decimal:
    """The quoted price in the catalog's unit for its billing: per hour (payg, spot) or per month (subscriptions)."""
    if qt.unit == "year":
        return qt.price / 12
    return qt.price


def _ex_disk(ctx: DeriveContext, qt: Quote) -> tuple[Decimal, str] | None:
    """The quote less the disk it includes (the node's disk is its own cost line); None when that disk is unpriced."""
    price = _per_catalog_unit(qt)
    if qt.disk is None:
        return price, ""
    key, gib = qt.disk
    row = ctx.rows.get((key, "payg" if qt.billing in ("payg", "spot") else "monthly"))
    if row is None or row.price is None:
        return None
    return price - row.price * gib, f" less its {gib} GiB {key} at {row.price}/{row.unit} ({row.as_of})"


class _Points:
    """The cloud's CNY instance quotes, the ratio points computed from them, and the documented ratios."""

    def __init__(self, ctx: DeriveContext):
        self.ctx = ctx
        usable = [x for x in ctx.quotes.rows if x.item.startswith("instance/") and not x.skip]
        self.cny: dict[tuple[str, str], list[tuple[Quote, Decimal, str]]] = {}
        for x in usable:
            if x.currency != ctx.currency:
                continue
            ex = _ex_disk(ctx, x)
            if ex is not None:
                self.cny.setdefault((x.item, x.billing), []).append((x, ex[0], ex[1]))
        self.usd: dict[str, Quote] = {}
        for x in usable:
            if x.currency == "USD" and x.billing == "payg":
                if x.item not in self.usd or x.as_of > self.usd[x.item].as_of:
                    self.usd[x.item] = x  # the newest USD point of the type

    def best(self, item: str, billing: str) -> tuple[tuple[Quote, Decimal, str], bool] | None:
        """The CNY quote for the item and billing: one covering the region (newest) first, else the newest elsewhere."""
        found = self.cny.get((item, billing)) or []
        here = [f for f in found if f[0].covers(self.ctx.region)]
        pool = here or found
        if not pool:
            return None
        return max(pool, key=lambda f: f[0].as_of), bool(here)

    def pairs(self, billing: str, of: str, per: Decimal) -> list[RatioPoint]:
        """Ratio points billing/(per x of) from types quoted in CNY both ways, plus the documented `use:` ratios."""
        out = []
        for (item, b), found in sorted(self.cny.items()):
            if b != billing or (item, of) not in self.cny:
                continue
            top = max(found, key=lambda f: f[0].as_of)
            base = max(self.cny[(item, of)], key=lambda f: f[0].as_of)
            out.append(
                RatioPoint(
                    top[1] / (per * base[1]),
                    f"pair {top[0].cite()} / {base[0].cite()}",
                    min(top[0].as_of, base[0].as_of),
                )
            )
        for r in self.ctx.quotes.ratios:
            use = r.get("use") or {}
            if use.get("billing") == billing and use.get("of") == of:
                out.append(
                    RatioPoint(fraction(use["factor"]), f"ratio {r['item']} = {use['factor']} {r['as_of']}", str(r["as_of"]))
                )
        return out

    def fx_points(self) -> list[tuple[str, RatioPoint]]:
        """CNY/USD of GPU types quoted in both currencies (pay-as-you-go, the CNY quote less its disk)."""
        out = []
        for item, usd in sorted(self.usd.items()):
            found = self.cny.get((item, "payg"))
            if not found:
                continue
            top = max(found, key=lambda f: f[0].as_of)
            out.append(
                (
                    series(self.ctx.src["cloud"], item.split("/", 1)[1]),
                    RatioPoint(top[1] / usd.price, f"pair {top[0].cite()} / {usd.cite()}", min(top[0].as_of, usd.as_of)),
                )
            )
        return out


def _quoted(ctx: DeriveContext, pts: _Points, item: str, billing: str) -> Est | None:
    hit = pts.best(item, billing)
    if hit is None:
        return None
    (qt, price, less), here = hit
    if here:
        return Est(
            price,
            price,
            price,
            qt.catalog_quality,
            qt.source,
            qt.as_of,
            f"{qt.quality} {qt.price} {qt.currency}{less}",
            (qt.cite(),),
        )
    sp = ctx.spread("other_region")
    pct = Decimal(sp["pct"]) / 100
    return Est(
        price,
        price * (1 - pct),
        price * (1 + pct),
        "estimate",
        qt.source,
        qt.as_of,
        f"{qt.quality} {qt.price} {qt.currency} for {qt.region}{less}, applied to {ctx.region} (+/-{sp['pct']} % stated: {sp['reason']})",
        (qt.cite(),),
    )


def _scaled_from(types, table: dict[str, Est], t: str, cloud: str) -> Est | None:
    """n x the price of a size that is exactly 1/n of t (GPUs, vCPU and memory) in the same family."""
    me = next(x for x in types if x.type == t)
    for b in types:
        if b.type == t or b.type not in table or family(cloud, b.type) != family(cloud, t) or b.gpus == 0:
            continue
        if me.gpus % b.gpus == 0:
            n = me.gpus // b.gpus
            if n > 1 and me.vcpu == n * b.vcpu and me.memory_gib == n * b.memory_gib:
                e = table[b.type]
                return e.scaled(
                    Decimal(n), Decimal(n), Decimal(n), f"{n} x {b.type} ({e.how}); family prices scale linearly with size"
                )
    return None


def _step_note(ctx: DeriveContext, t: str) -> str:
    """What Tencent's pay-as-you-go step pricing does to this type (nothing unless its family is named as qualifying)."""
    steps = ctx.steps
    if not steps:
        return ""
    fam = family(ctx.src["cloud"], t)
    if fam in (steps.get("qualifying_families") or []):
        return f"; {fam} qualifies for step pricing ({steps['source']}): see the payg-steps row"
    return (
        f"; step pricing ({steps['source']}): not applied, the vendor names no qualifying family"
        f" (qualifying: {steps.get('qualifying_families') or 'none published'}), so the step-1 price holds at every hour"
    )


def step_month_factor(steps: dict, hours: Decimal = HOURS_PER_MONTH) -> Decimal:
    """Average price factor of a qualifying instance running `hours` without a break (steps at 96 h and 360 h)."""
    total = Decimal(0)
    for s in steps["steps"]:
        lo = Decimal(s["from_hours"])
        hi = hours if s["to_hours"] is None else min(hours, Decimal(s["to_hours"]))
        if hi > lo:
            total += (hi - lo) * Decimal(s["factor"])
    return total / hours


def _instance_rows(ctx: DeriveContext, cloud: str) -> None:
    types = stackcat.instance_types(cloud)
    pts = _Points(ctx)
    linear = ctx.src["rules"].get("linear_scaling")

    fx_all = pts.fx_points()

    def fx_for(t: str) -> Ratio | None:
        own = [p for f, p in fx_all if f == series(cloud, t)]
        return ratio_of([p for _, p in fx_all], ctx.spread("usd_to_cny"), "CNY/USD", prefer=own or None)

    r_month = ratio_of(pts.pairs("monthly", "payg", HOURS_PER_MONTH), ctx.spread("monthly"), "monthly/(730 x payg)")
    r_year = ratio_of(pts.pairs("yearly", "monthly", Decimal(1)), ctx.spread("yearly"), "yearly/monthly")
    r_spot = ratio_of(pts.pairs("spot", "payg", Decimal(1)), ctx.spread("spot"), "spot/payg")

    def by(e: Est | None, r: Ratio | None, per: Decimal, what: str) -> Est | None:
        if e is None or r is None:
            return None
        e = replace(e, price=q(e.price), low=q(e.low), high=q(e.high))  # from the row as written: redone by hand
        return e.scaled(
            r.value * per,
            r.low * per,
            r.high * per,
            f"{what} {q(e.price)} {'x 730 x ' if per > 1 else '/ 730 x ' if per < 1 else 'x '}{r.how}; base: {e.how}",
            r.quotes,
            r.as_of,
        )

    payg: dict[str, Est] = {}
    monthly: dict[str, Est] = {}
    for it in types:
        item = f"instance/{it.type}"
        e = _quoted(ctx, pts, item, "payg")
        if e is None and item in pts.usd:
            usd, r = pts.usd[item], fx_for(it.type)
            if r is not None:
                base = Est(usd.price, usd.price, usd.price, "estimate", usd.source, usd.as_of, "", (usd.cite(),))
                e = base.scaled(r.value, r.low, r.high, f"USD {usd.price}/h ({usd.region}) x {r.how}", r.quotes, r.as_of)
        if e is not None:
            payg[it.type] = e
        m = _quoted(ctx, pts, item, "monthly")
        if m is not None:
            monthly[it.type] = m
    if linear:
        for it in types:
            for table in (payg, monthly):
                if it.type not in table:
                    hit = _scaled_from(types, table, it.type, cloud)
                    if hit is not None:
                        table[it.type] = hit
    for it in types:
        if it.type not in payg and it.type in monthly and r_month is not None:
            inv = Ratio(1 / r_month.value, 1 / r_month.high, 1 / r_month.low, f"1 / {r_month.how}", r_month.quotes, r_month.as_of)
            payg[it.type] = by(monthly[it.type], inv, 1 / HOURS_PER_MONTH, "monthly")  # type: ignore[assignment]
        if it.type not in monthly and it.type in payg:
            got = by(payg[it.type], r_month, HOURS_PER_MONTH, "payg")
            if got is not None:
                monthly[it.type] = got

    none = f"no public price found for this type, nor for a size it is a multiple of (cost/data/quotes-{cloud}.yaml)"
    for it in types:
        key, item = f"instance/{it.type}", f"instance/{it.type}"
        p = payg.get(it.type)
        if p is None:
            for b in INSTANCE_BILLINGS:
                ctx.add(key, b, None, "hour" if b in ("payg", "spot") else "month", "missing", "", ctx.today, none)
            continue
        ctx.add_est(key, "payg", "hour", replace(p, how=p.how + _step_note(ctx, it.type)), none)
        m = monthly.get(it.type)
        ctx.add_est(key, "monthly", "month", m, none)
        y = _quoted(ctx, pts, item, "yearly") or by(m, r_year, Decimal(1), "monthly")
        ctx.add_est(key, "yearly", "month", y, none + "; no yearly ratio")
        s = _quoted(ctx, pts, item, "spot") or by(p, r_spot, Decimal(1), "payg")
        if s is not None:
            s = replace(s, how=s.how + "; interruptible")
        ctx.add_est(key, "spot", "hour", s, none + "; no spot ratio")
        if ctx.steps and family(cloud, it.type) in (ctx.steps.get("qualifying_families") or []):
            f = step_month_factor(ctx.steps)
            ctx.add_est(
                f"instance-steps/{it.type}",
                "payg",
                "hour",
                p.scaled(f, f, f, f"payg {q(p.price)} x {q(f)} (average step factor over 730 h running, {ctx.steps['source']})"),
                none,
            )


def load_steps(cloud: str, data: Path | None = None) -> dict | None:
    """The cloud's step-pricing facts (cost/data/step-pricing-<cloud>.yaml), None when it has none."""

    path = _data(cloud, data) / f"step-pricing-{cloud}.yaml"
    return inputs.load_mapping(path, _shown(path)) if path.exists() else None


def derive(cloud: str, region: str, today: str, data: Path | None = None) -> Catalog:
    src = load_sources(cloud, data)
    ctx = DeriveContext(src, region, today, load_quotes(cloud, data), load_steps(cloud, data))
    registry.module(cloud, "pricing").catalog_rows(ctx)  # disks first: quotes that include a disk are priced without it
    _instance_rows(ctx, cloud)
    dates = [r.as_of for r in ctx.rows.values() if r.price is not None and re.fullmatch(r"\d{4}-\d{2}-\d{2}", r.as_of)]
    return Catalog(cloud=cloud, region=region, currency=src["currency"], as_of=max(dates), built=today, rows=ctx.rows)


def build_date(text: str | None, flag: str = "--date") -> str:
    """The build date a catalog is stamped with: `text` as YYYY-MM-DD, a real day and not after today (the run's clock,
    gpufleet.clock), or today when None; a UserError otherwise."""

    today = now().date()
    if text is None:
        return today.isoformat()
    try:
        day = date.fromisoformat(text) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else None
    except ValueError:
        day = None
    if day is None:
        raise UserError([Problem(flag, "", f"{text!r} is not a date: give the build day as YYYY-MM-DD, e.g. {today}")])
    if day > today:
        raise UserError([Problem(flag, "", f"{text} is after today ({today}): the build date is the day it is built")])
    return text


def build(clouds: str | Sequence[str], today: str, data: Path | None = None) -> list[Path]:
    """Write every region's shipped catalog whose prices changed, of one cloud or several; the files written (a
    catalog whose prices are the same is left as it is, build date included). All or nothing: every catalog is
    derived, checked and rendered first, then written together (files.write_folder: each to a temporary file, renamed
    into place only once all are written), so a failure (a full disk) leaves every catalog as it was, never some
    rebuilt and others old for cost compare to set side by side. `data`: another folder of sources and catalogs
    (tests); without it, the package's, which only a gpufleet checkout may rewrite (shipped_writable)."""
    if data is None:
        shipped_writable()
    texts: dict[Path, str] = {}
    for cloud in [clouds] if isinstance(clouds, str) else clouds:
        texts.update(changed_catalogs(cloud, today, data))
    if texts:
        folder = Path(os.path.commonpath([p.parent for p in texts]))  # the clouds' data folders are one (cost/data/)
        write_folder(folder, {str(p.relative_to(folder)): text for p, text in texts.items()}, flag="catalog build")
        pricecat._read.cache_clear()
    return list(texts)


def changed_catalogs(cloud: str, today: str, data: Path | None = None) -> dict[Path, str]:
    """The text of every region's catalog of `cloud` whose prices changed (path -> text), nothing written. A row the
    catalog's reader would refuse is refused here (UserError): it would stop every cost command."""
    load_quotes(cloud, data)  # its problems, before any region is derived
    cats = []
    for region in load_sources(cloud, data)["regions"]:
        cat = derive(cloud, region, today, data)
        path = pricecat.catalog_path(cloud, region, data)
        problems = [
            p
            for i, r in enumerate(cat.rows.values())
            for p in pricecat.row_shape_problems(r.to_yaml(), _shown(path), f"rows.{i}")
        ]
        if problems:
            raise UserError(problems)
        cats.append((cat, path))
    return {
        path: pricecat.render(cat, pricecat.SHIPPED_HEADER)
        for cat, path in cats
        # only the build date (and the date stamped on missing rows) would change: the file is left as it is
        if not (path.exists() and _same_prices(pricecat.shipped(cat.cloud, cat.region, data), cat))
    }


def shipped_writable() -> None:
    """Refuse to rewrite the catalogs of an installed gpufleet: they are the release's, derived from the sources
    shipped beside them (a checkout has src/gpufleet/ under a folder holding pyproject.toml)."""
    if PACKAGE.parent.name == "src" and (PACKAGE.parent.parent / "pyproject.toml").is_file():
        return
    raise UserError(
        [
            Problem(
                "catalog build",
                "",
                f"rewrites the price catalogs shipped in a gpufleet checkout (src/gpufleet/cost/data/); this gpufleet is "
                f"installed at {PACKAGE}, whose catalogs are its release's. To price with your account's prices run "
                "`gpufleet catalog refresh` (it writes cost/catalog/ in your project); to change the shipped ones, "
                "build in a clone of gpufleet",
            )
        ]
    )


def _same_prices(old: pricecat.Catalog, new: pricecat.Catalog) -> bool:
    """Whether two catalogs say the same prices: every row alike but for the as-of date of rows without a price
    (they carry the build day), and the same catalog as-of date. The build date itself does not count."""

    def rows(cat: pricecat.Catalog) -> dict:
        return {k: replace(r, as_of="") if r.price is None else r for k, r in cat.rows.items()}

    return (old.currency, old.as_of, rows(old)) == (new.currency, new.as_of, rows(new))
