"""The cost of a simulated trace, from the cost module's own line items (the ones `cost estimate` shows).

- Nodes: the node-hours of each billing model the simulation ran x one node-month of that billing model
  (gpufleet.finance.tokens.node_months: the instance and its own disks, the stack re-declared per billing model as
  `cost compare` does) / 730 hours. A subscription node is paid for the whole trace (it is held all along).
- Everything else the stack declares (load balancer, NAT, EIP, bucket, the image's snapshot, ...): the estimate's
  monthly lines that are not a node's own (cost.view.node_own), for the trace's share of a 730-hour month.
A line without a price keeps the total a lower bound (`complete: false`), never a zero.
"""

from __future__ import annotations

from decimal import Decimal

from gpufleet.cost import usage as usage_mod
from gpufleet.cost import view
from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.estimate import money
from gpufleet.finance import tokens as tok
from gpufleet.finance.stack import stack_estimate
from gpufleet.simulate.engine import Result


def trace_cost(stack: str, r: Result, node_hours: dict[str, float], tokens: float | None, usage_file: str | None = None) -> dict:
    usage = usage_mod.load(stack, usage_file)
    fleet, est = stack_estimate(stack, usage_file)
    hours = Decimal(str(r.trace.duration_s)) / Decimal(3600)
    lines, complete, total = [], True, Decimal(0)
    months = {nm.billing: nm for nm in tok.node_months(stack, usage, billings=tuple(sorted(node_hours)))}
    for billing, h in sorted(node_hours.items()):
        nm = months.get(billing)
        nh = Decimal(str(h))
        if nm is None or nm.monthly is None:
            complete = False
            lines.append(
                {"item": f"nodes ({billing})", "node_hours": float(nh), "cost": None, "why": nm.problem if nm else "not priced"}
            )
            continue
        c = nm.monthly * nh / HOURS_PER_MONTH
        total += c
        lines.append(
            {
                "item": f"nodes ({billing})",
                "node_hours": float(nh),
                "per_node_month": str(nm.monthly),
                "cost": str(money(c)),
                "estimated": nm.estimated,
            }
        )
    for line in est.lines:
        if view.node_own(line):  # in the node-hours above; a shared disk line (the image snapshot) is not
            continue
        if line.monthly_cost is None:
            complete = False
            lines.append(
                {"item": f"{line.resource_name}: {line.component}", "cost": None, "why": "no price (cost estimate shows it)"}
            )
            continue
        c = line.monthly_cost * hours / HOURS_PER_MONTH
        total += c
        lines.append({"item": f"{line.resource_name}: {line.component}", "cost": str(money(c))})
    per_million = None
    if tokens:
        per_million = str(money(total / Decimal(str(tokens)) * Decimal(1_000_000)))
    return {
        "currency": est.currency,
        "total": str(money(total)),
        "complete": complete,
        "per_million_output_tokens": per_million,
        "hours": float(hours),
        "lines": lines,
        "prices_as_of": est.catalog_as_of,
    }
