"""What usage takes a stack's overhead (everything but GPU compute) to a given share of the bill.

The seed's figure, "disk, bandwidth, load balancer and NAT make 30-50 % of a GPU bill", is not what the shipped stacks
show (6.5-32.6 % at their usage: docs/cost.md). It depends on traffic and disk: this table says, for one lever at a time and the rest as
priced, how much of it reaches each share, so a reader can look the figure up for their own traffic:

    share = (O + p x) / (G + O + p x)   =>   x = (share x (G + O) - O) / ((1 - share) x p)

G = the priced GPU compute, O = the priced overhead, p = the lever's price per unit (the sum of the unit prices of the
lines resting on that usage key, e.g. Alibaba's NAT capacity unit and EIP traffic for NAT egress), x = the usage on
top of what is priced now. A lever without a unit price in the catalog is left out (named).
"""

from __future__ import annotations

import re
from decimal import Decimal

from msgspec import Struct

from gpufleet.cost import usage
from gpufleet.cost.decision import usage_key
from gpufleet.cost.resources import COMPUTE, USAGE

SHARES = (Decimal("0.30"), Decimal("0.50"))
# The levers of the usage keys every cloud's pricing reads (declared in cost/resources.py USAGE); a cloud's own keys
# add theirs (lever_names).
LEVERS = {k.name: k.lever for k in USAGE if k.lever}
_GIB = re.compile(r"data disk 1 .* (\d+) GiB$")


class Lever(Struct, frozen=True):
    name: str
    unit_cost: Decimal  # money per unit of the lever
    now: Decimal | None  # the usage priced now (None: unknown, priced as 0 here)
    needed: dict[Decimal, Decimal | None]  # share -> usage on top of now (0: already there; None: no price)
    how: str


def _reach(share: Decimal, gpu: Decimal, over: Decimal, unit: Decimal) -> Decimal:
    extra = (share * (gpu + over) - over) / ((1 - share) * unit)
    return max(Decimal(0), extra).quantize(Decimal("0.01"))


def lever_names(cloud: str) -> dict[str, str]:
    """Usage key -> lever: the usage keys the cloud's estimate reads that are a lever (UsageKey.lever, declared next to
    the resource each prices)."""
    return {k.name: k.lever for k in usage.keys_of(cloud) if k.lever}


def levers(e) -> list[Lever]:
    """The levers of `e`, their prices in its currency; the usage that reaches each share is worked out on the estimate
    as priced (before a currency conversion: x is a quantity, and converted money is rounded to the cent)."""
    priced = e.converted_from or e
    if priced.overhead_share is None:  # compute unpriced: no share to move
        return []
    gpu = priced.by_category[COMPUTE]
    over = priced.monthly_total - gpu
    out = []
    for key, name in lever_names(e.cloud).items():
        lines = [l for l in e.lines if usage_key(l) == key]
        if not lines:
            continue
        unit = _unit_price(lines)
        base = _unit_price([l for l in priced.lines if usage_key(l) == key])
        now = next((l.monthly_quantity for l in lines if l.monthly_quantity is not None), None)
        how = " + ".join(f"{l.component} {l.unit_price}" for l in lines if l.unit_price is not None) + f" per {lines[0].unit}"
        needed = {s: (_reach(s, gpu, over, base) if base > 0 else None) for s in SHARES}
        out.append(Lever(name, unit, now, needed, how if unit > 0 else "no unit price in the catalog"))
    disk = _disk(e)
    if disk is not None:
        (per_gib, size, how), (base, _, _) = disk, _disk(priced) or disk
        out.append(Lever("data disk size per node (GiB)", per_gib, size, {s: _reach(s, gpu, over, base) for s in SHARES}, how))
    return out


def _unit_price(lines) -> Decimal:
    return sum((l.unit_price for l in lines if l.unit_price is not None), Decimal(0))


def _disk(e) -> tuple[Decimal, Decimal, str] | None:
    """(the cost of one more GiB on every node's data disk a month, the disk's size, how) from the first data-disk line."""
    disks = [l for l in e.lines if l.category == "disk" and _GIB.search(l.component) and l.monthly_cost]
    if not disks:
        return None
    d = disks[0]
    found, cost = _GIB.search(d.component), d.monthly_cost
    assert found is not None and cost is not None  # the filter above
    size = Decimal(found.group(1))
    per_gib = cost / size
    return per_gib, size, f"{d.component}: {d.monthly_cost} a month for {size} GiB on the average nodes ({per_gib:.4f} per GiB)"


def as_json(e) -> list[dict]:
    return [
        {
            "lever": v.name,
            "unit_cost": str(v.unit_cost.quantize(Decimal("0.000001"))),
            "now": None if v.now is None else str(v.now),
            "extra_for_share": {f"{s:.0%}": (None if x is None else str(x)) for s, x in v.needed.items()},
            "how": v.how,
        }
        for v in levers(e)
    ]
