"""Derive the per-region catalog rows from the sourced facts (cost/data/sources-<cloud>.yaml).

The instance rows are derived here the same way for every cloud; each cloud's pricing module
(components/<cloud>/pricing.py, `catalog_rows`) adds its disk, network, NAT and load balancer rows.
Each rule is written out in the row's `derivation` text so a reader can redo it by hand:
- a sourced number for the item and region: its own quality (official / third-party);
- a sourced number for another region of the same cloud (the docs' Hangzhou example): `estimate`;
- USD list price x the vendor-implied exchange rate (Alibaba GPUs): `estimate`;
- n x the price of a size that is exactly 1/n of it in the same family: `estimate`;
- subscription <-> pay-as-you-go by the documented 3-4x ratio (low end 3): `estimate`;
- yearly = monthly x the documented 1-year factor: `estimate` (or the source's quality if official for that item);
- spot = pay-as-you-go x 0.40 (vendor floor is 10%): `estimate`;
- nothing found: price null, quality `missing`.
Instance types come from stacks/data/<cloud>.yaml through gpufleet.stacks.catalog.
"""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from gpufleet.components import registry
from gpufleet.cost import catalog as pricecat
from gpufleet.cost.catalog import HOURS_PER_MONTH, Catalog, PriceRow
from gpufleet.stacks import catalog as stackcat

Q4 = Decimal("0.0001")


def q(x: Decimal) -> Decimal:
    return x.quantize(Q4, rounding=ROUND_HALF_UP)


def load_sources(cloud: str, data: Path | None = None) -> dict:
    from gpufleet import inputs

    path = (data or registry.profile(cloud).price_data) / f"sources-{cloud}.yaml"
    return inputs.load_mapping(path, f"cost/data/{path.name}" if path.parent == pricecat.DATA else str(path))


def family(cloud: str, itype: str) -> str:
    """ecs.gn7i-c32g1.16xlarge -> ecs.gn7i-c32g1; GN7.5XLARGE80 -> GN7."""
    return itype.rsplit(".", 1)[0]


class DeriveContext:
    """What a cloud's `catalog_rows(ctx)` writes rows into (`add`, `add_fact`), with the region's sourced facts."""

    def __init__(self, src: dict, region: str, today: str):
        self.src = src
        self.region = region
        self.today = today
        self.currency = src["currency"]
        self.rows: dict[tuple[str, str], PriceRow] = {}

    def source(self, name: str) -> dict:
        return self.src["sources"][name]

    def add(self, key, billing, price, unit, quality, source, as_of, derivation=""):
        price = None if price is None else q(Decimal(price))
        if price is None:
            quality = "missing"
        self.rows[(key, billing)] = PriceRow(key, billing, price, self.currency, unit, quality, source, str(as_of), derivation)

    def add_fact(self, key, billing, fact: dict, unit, field="price", listed=None, extra=""):
        """A sourced number; `listed`: regions the source names (others get the example region's number as estimate)."""
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
        if fact.get("estimate_note"):
            quality = "estimate"
            notes.append(fact["estimate_note"])
        elif example and self.region != example and not (listed and self.region in listed):
            quality = "estimate"
            notes.append(f"{example} example price applied to {self.region} (regional price not found)")
        self.add(key, billing, Decimal(fact[field]), unit, quality, s["url"], s.get("as_of", self.today), "; ".join(notes))


def _instance_rows(ctx: DeriveContext, cloud: str) -> None:
    src, rules = ctx.src, ctx.src["rules"]
    ratio = Decimal(rules["payg_to_subscription_ratio"])
    yearly = Decimal(rules["yearly_factor"])
    spot_share = Decimal(rules["spot_share_of_payg"])
    types = stackcat.instance_types(cloud)
    base_payg: dict[str, tuple[Decimal, str, str, str, str]] = {}  # type -> (price, quality, source, as_of, how)
    base_monthly: dict[str, tuple[Decimal, str, str, str, str]] = {}
    if "instance_payg_usd" in src:
        block = src["instance_payg_usd"]
        s = ctx.source(block["source"])
        fx = Decimal(src["fx"]["usd_to_cny"])
        for t, v in block["prices"].items():
            usd = Decimal(v["usd"])
            base_payg[t] = (
                usd * fx,
                "estimate",
                s["url"],
                v["as_of"],
                f"USD {usd}/h (Spare Cores, min over regions, not per region) x {fx} CNY/USD ({src['fx']['derivation']})",
            )

    def quoted(s: dict, what: str) -> tuple[str, str]:
        if s.get("region") and s["region"] != ctx.region:
            return "estimate", f"third-party {what} quote for {s['region']} applied to {ctx.region}"
        return s["quality"], f"third-party {what} quote" + ("" if s.get("region") else " (region not stated)")

    for t, v in (src.get("instance_payg_cny") or {}).items():
        s = ctx.source(v["source"])
        qual, how = quoted(s, "CNY/h")
        base_payg[t] = (Decimal(v["cny"]), qual, s["url"], s["as_of"], how)
    for t, v in (src.get("instance_monthly_cny") or {}).items():
        s = ctx.source(v["source"])
        qual, how = quoted(s, "CNY/month")
        base_monthly[t] = (Decimal(v["cny"]), qual, s["url"], s["as_of"], how)

    def scaled(table, t):
        """(n, base type) when t is exactly n x a priced size of the same family."""
        me = next(x for x in types if x.type == t)
        for b in types:
            if b.type == t or b.type not in table or family(cloud, b.type) != family(cloud, t) or b.gpus == 0:
                continue
            if me.gpus % b.gpus == 0:
                n = me.gpus // b.gpus
                if n > 1 and me.vcpu == n * b.vcpu and me.memory_gib == n * b.memory_gib:
                    return n, b.type
        return None

    src_ratio = rules["payg_to_subscription_source"]
    src_ratio = ctx.src["sources"].get(src_ratio, {}).get("url", src_ratio)
    for it in types:
        t = it.type
        key = f"instance/{t}"
        payg = base_payg.get(t)
        monthly = base_monthly.get(t)
        for table, name in ((base_payg, "payg"), (base_monthly, "monthly")):
            cur = payg if name == "payg" else monthly
            if cur is None and rules.get("linear_scaling"):
                hit = scaled(table, t)
                if hit:
                    n, b = hit
                    p, _, url, as_of, how = table[b]
                    val = (p * n, "estimate", url, as_of, f"{n} x {b} ({how}); family prices scale linearly with size")
                    if name == "payg":
                        payg = val
                    else:
                        monthly = val
        if payg is None and monthly is not None:
            m, _, url, as_of, how = monthly
            payg = (
                m / HOURS_PER_MONTH * ratio,
                "estimate",
                url,
                as_of,
                f"monthly {q(m)} / 730 h x {ratio} (payg = 3-4x subscription, low end; {src_ratio}); monthly: {how}",
            )
        if monthly is None and payg is not None:
            p, _, url, as_of, how = payg
            monthly = (
                q(p) * HOURS_PER_MONTH / ratio,
                "estimate",
                url,
                as_of,
                f"payg {q(p)}/h x 730 / {ratio} (payg = 3-4x subscription, low end; {src_ratio}); payg: {how}",
            )
        if payg is None:
            ctx.add(key, "payg", None, "hour", "missing", "", ctx.today, "no public price found for this type")
            ctx.add(key, "monthly", None, "month", "missing", "", ctx.today, "no public price found for this type")
            ctx.add(key, "yearly", None, "month", "missing", "", ctx.today, "no public price found for this type")
            ctx.add(key, "spot", None, "hour", "missing", "", ctx.today, "no public price found for this type")
            continue
        assert monthly is not None  # derived from payg above when missing
        p, pq, purl, pdate, phow = payg
        ctx.add(key, "payg", p, "hour", pq, purl, pdate, phow)
        m, mq, murl, mdate, mhow = monthly
        ctx.add(key, "monthly", m, "month", mq, murl, mdate, mhow)
        ys = ctx.source(rules["yearly_source"])
        ctx.add(
            key,
            "yearly",
            q(m) * yearly,
            "month",
            "estimate",
            ys["url"],
            ys["as_of"],
            f"monthly {q(m)} x {yearly} (1-year factor, {ys['url']}); price per month of a 1-year term",
        )
        ss = ctx.source(rules["spot_source"])
        ctx.add(
            key,
            "spot",
            q(p) * spot_share,
            "hour",
            "estimate",
            ss["url"],
            ss["as_of"],
            f"payg {q(p)}/h x {spot_share}: conservative (vendor floor 10%, observed third-party ~20-35%); interruptible",
        )


def derive(cloud: str, region: str, today: str, data: Path | None = None) -> Catalog:
    src = load_sources(cloud, data)
    ctx = DeriveContext(src, region, today)
    _instance_rows(ctx, cloud)
    registry.module(cloud, "pricing").catalog_rows(ctx)
    dates = [r.as_of for r in ctx.rows.values() if r.price is not None and re.fullmatch(r"\d{4}-\d{2}-\d{2}", r.as_of)]
    return Catalog(cloud=cloud, region=region, currency=src["currency"], as_of=max(dates), built=today, rows=ctx.rows)


def build(cloud: str, today: str, data: Path | None = None) -> list[Path]:
    """Write every region's catalog file whose prices changed, keeping rows a vendor API refresh wrote (they win);
    the files written (a catalog whose prices are the same is left as it is, build date included)."""
    out = []
    for region in load_sources(cloud, data)["regions"]:
        cat = derive(cloud, region, today, data)
        path = pricecat.catalog_path(cloud, region, data)
        if path.exists():
            old = pricecat.load(cloud, region, data)
            for k, row in old.rows.items():
                if row.quality == "vendor API":
                    cat.rows[k] = row
            cat.as_of = max([cat.as_of] + [r.as_of for r in cat.rows.values() if r.quality == "vendor API"])
            if _same_prices(old, cat):  # only the build date (and the date stamped on missing rows) would change
                continue
        out.append(pricecat.write(cat, data))
    return out


def _same_prices(old: pricecat.Catalog, new: pricecat.Catalog) -> bool:
    """Whether two catalogs say the same prices: every row alike but for the as-of date of rows without a price
    (they carry the build day), and the same catalog as-of date. The build date itself does not count."""

    def rows(cat: pricecat.Catalog) -> dict:
        return {k: replace(r, as_of="") if r.price is None else r for k, r in cat.rows.items()}

    return (old.currency, old.as_of, rows(old)) == (new.currency, new.as_of, rows(new))
