"""`cost diff`: what changes between two stacks' estimates, line by line.

Lines are matched by resource type, resource name without the fleet prefix (llm-prod-nat ~ llm-dev-nat),
and price kind (instance, disk, eip, nat, clb, ...) in order of appearance.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gpufleet.cost.estimate import Estimate, Line


@dataclass(frozen=True)
class Change:
    key: str
    a: Line | None
    b: Line | None

    @property
    def delta(self) -> Decimal | None:
        ca = self.a.monthly_cost if self.a else Decimal(0)
        cb = self.b.monthly_cost if self.b else Decimal(0)
        if ca is None or cb is None:
            return None
        return cb - ca

    @property
    def status(self) -> str:
        if self.a is None:
            return "added"
        if self.b is None:
            return "removed"
        same = (self.a.component, self.a.monthly_quantity, self.a.unit_price) == (
            self.b.component,
            self.b.monthly_quantity,
            self.b.unit_price,
        )
        return "same" if same else "changed"


def _keyed(e: Estimate, prefix: str) -> dict[str, Line]:
    out: dict[str, Line] = {}
    for l in e.lines:
        name = l.resource_name[len(prefix) :].lstrip("-") if prefix and l.resource_name.startswith(prefix) else l.resource_name
        kind = l.price_key.split("/")[0] if l.price_key else l.component
        base = f"{l.resource_type.split(':')[-1]} {name} {kind}"
        key, n = base, 1
        while key in out:
            n += 1
            key = f"{base} #{n}"
        out[key] = l
    return out


def diff(a: Estimate, a_prefix: str, b: Estimate, b_prefix: str) -> list[Change]:
    ka, kb = _keyed(a, a_prefix), _keyed(b, b_prefix)
    keys = list(ka) + [k for k in kb if k not in ka]
    return [Change(k, ka.get(k), kb.get(k)) for k in keys]
