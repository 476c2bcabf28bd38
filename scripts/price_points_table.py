"""Our catalog price next to every public price point (cost/data/quotes-<cloud>.yaml), as a Markdown table.

python scripts/price_points_table.py [--cloud alicloud|tencentcloud] [-o FILE]

Each quote is compared with the catalog row it corresponds to (same item and billing; the MAP below where the
quotes file and the catalog name an item differently), in the quote's region when we have a catalog for it, else the
cloud's first catalog region. A quote that includes a disk is compared with our instance price plus that disk.
`ours/public` is the ratio of the two prices in their units (for a USD point it is the implied CNY per USD).
"""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal
from pathlib import Path

from gpufleet.cost import catalog, derive
from gpufleet.errors import Problem, UserError
from gpufleet.files import output_problems, write_atomic

# quote item -> catalog key, per cloud; None: not a catalog item (the table says so)
MAP = {
    "alicloud": {
        "disk/cloud_essd_pl0": "disk/cloud_essd/PL0",
        "disk/cloud_essd_pl1": "disk/cloud_essd/PL1",
        "oss/standard_lrs": "oss/standard",
        "oss/standard_zrs": None,
        "snapshot/instant_access": None,
        "bandwidth/traffic": None,
        "bandwidth/fixed_1_5mbps": None,
        "bandwidth/fixed_above_5mbps": None,
        "eip/config_fee_traffic": "eip/config_traffic",
        "eip/bandwidth_5mbps": "eip/subscription_5mbps",
        "eip/bandwidth_1mbps": "eip/subscription_1mbps",
        "nat/legacy_small": None,
        "clb/instance_fee": "clb/instance",
        "clb/public_ip_retention_fee": "clb/public_ip",
        "kms/software_instance": "kms/instance",
        "kms/hardware_instance": None,
        "kms/secret": None,
        "kms/key": None,
        "kms/qps": None,
    },
    "tencentcloud": {
        "bandwidth/traffic": "net/traffic",
        "bandwidth/fixed_le_5mbps": "net/bandwidth_le_5",
        "bandwidth/fixed_le_2mbps": "net/subscription_le_2",
        "eip/idle": None,
        "ssm/api_calls": "ssm/calls",
    },
}
# a monthly quote of a fixed-bandwidth item is our subscription row; Tencent's over-5 Mbps has both
BILLING_KEY = {("tencentcloud", "bandwidth/fixed_above_5mbps", "monthly"): "net/subscription_over_5"}
TENCENT_OVER_5 = {("tencentcloud", "bandwidth/fixed_above_5mbps", "payg"): "net/bandwidth_over_5"}
PER = {("hour", "day"): Decimal(24), ("day", "hour"): Decimal(1) / 24}  # (our unit, the quote's unit) -> factor


def _fmt(x: Decimal) -> str:
    """4 decimals, 6 below 0.01 (as the catalog keeps them)."""
    return f"{x:.4f}" if abs(x) >= Decimal("0.01") else f"{x:.6f}"


def _key(cloud: str, q: derive.Quote) -> str | None:
    special = {**BILLING_KEY, **TENCENT_OVER_5}.get((cloud, q.item, q.billing))
    if special:
        return special
    return MAP.get(cloud, {}).get(q.item, q.item)


def _row(cat: catalog.Catalog, key: str, billing: str) -> catalog.PriceRow | None:
    return cat.rows.get((key, billing)) or cat.rows.get((key, "any"))


def table(cloud: str) -> list[str]:
    quotes = derive.load_quotes(cloud)
    regions = catalog.regions(cloud)
    cats = {r: catalog.load(cloud, r) for r in regions}
    out = []
    for q in quotes.rows:
        region = next((r for r in regions if q.covers(r)), regions[0])
        cat = cats[region]
        key = _key(cloud, q)
        public = f"{q.price} {q.currency}/{q.unit}"
        src = q.source if len(q.source) <= 90 else q.source[:87] + "..."
        if key is None:
            out.append(f"| {q.item} | {q.billing} | not in the catalog | {public} | - | {src} | {q.as_of} |")
            continue
        r = _row(cat, key, q.billing)
        if r is None or r.price is None:
            out.append(f"| {q.item} | {q.billing} | {region}: missing | {public} | - | {src} | {q.as_of} |")
            continue
        ours, lo, hi, note = r.price, r.lowest, r.highest, ""
        if q.disk:
            dk, gib = q.disk
            drow = _row(cat, dk, "payg" if q.billing in ("payg", "spot") else "monthly")
            if drow is not None and drow.price is not None:
                ours, lo, hi = ours + drow.price * gib, lo + drow.price * gib, hi + drow.price * gib
                note = f" + {gib} GiB disk"
        factor = PER.get((r.unit, q.unit), Decimal(1))
        unit = q.unit if (r.unit, q.unit) in PER else r.unit
        ours_u, lo_u, hi_u = ours * factor, lo * factor, hi * factor
        spread = "" if lo_u == hi_u else f" ({_fmt(lo_u)}-{_fmt(hi_u)})"
        same_unit = unit == q.unit or {unit, q.unit} <= {"GB", "GiB"} or unit.replace("GiB", "GB") == q.unit.replace("GiB", "GB")
        ratio = f"{ours_u / q.price:.3f}" if same_unit else f"units differ ({unit})"
        shown = f"{region}: {_fmt(ours_u)} CNY/{unit}{note}{spread}, {r.quality}"
        out.append(f"| {q.item} | {q.billing} | {shown} | {public} | {ratio} | {src} | {q.as_of} |")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cloud", choices=("alicloud", "tencentcloud"), action="append")
    parser.add_argument("-o", "--output", help="write the table to this file (atomically; - is standard output)")
    args = parser.parse_args()
    out = None if args.output is None else Path(args.output)
    problems = [Problem("-o", "", "is empty: give a file")] if args.output == "" else output_problems(out) if out else []
    if problems:  # before the table is computed
        print("\n".join(str(p) for p in problems), file=sys.stderr)
        return 2
    lines = []
    for cloud in args.cloud or ["alicloud", "tencentcloud"]:
        lines += [
            f"### {cloud}",
            "",
            "| item | billing | ours (region: price (low-high), quality) | public | ours/public | source | public as of |",
            "|---|---|---|---|---|---|---|",
            *table(cloud),
            "",
        ]
    text = "\n".join(lines)
    if out is None:
        sys.stdout.write(text)
        return 0
    try:
        write_atomic(out, text)
    except UserError as exc:
        print("\n".join(str(p) for p in exc.problems), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
