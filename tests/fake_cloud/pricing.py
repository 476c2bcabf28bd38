"""How the fake cloud's resources are priced, and how its catalog rows are derived from sources-fakecloud.yaml."""

from __future__ import annotations

from decimal import Decimal

from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.derive import DeriveContext
from gpufleet.cost.resources import CostComponent, PricingContext, asg_share, clb_components, node_components, qty
from gpufleet.registry import UsageKey

GROUP = "fakecloud:compute/group:Group"


def group(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    nodes, how = asg_share(ctx, GROUP, res, 0)
    disks = [("fk-ssd", None, int(i["diskGib"]), "disk/fk-ssd")]
    return node_components("autoscaled node", i["instanceType"], "payg", nodes, disks, None, how)


# The fake NAT bills the traffic it processes: a usage key only this cloud's pricing reads.
USAGE = (UsageKey("fk_nat_processed_gb", "GB the fake NAT gateway processes a month", lever="fake NAT processing (GB a month)"),)


def nat(res: dict, ctx: PricingContext) -> list[CostComponent]:
    processed = ctx.usage.get("fk_nat_processed_gb")
    return [
        CostComponent("NAT gateway", HOURS_PER_MONTH, "nat/instance", "any", "nat"),
        CostComponent("NAT processed traffic", qty(processed), "nat/processed", "any", "nat", "usage fk_nat_processed_gb"),
    ]


def balancer(res: dict, ctx: PricingContext) -> list[CostComponent]:
    return clb_components(bool(res["inputs"].get("public")), ctx)


PRICED = {GROUP: group, "fakecloud:net/nat:Nat": nat, "fakecloud:lb/balancer:Balancer": balancer}
FREE = {
    "fakecloud:net/vpc:Vpc": "VPC: no charge",
    "fakecloud:net/subnet:Subnet": "subnet: no charge",
    "fakecloud:net/firewall:Firewall": "firewall: no charge",
}


def catalog_rows(ctx: DeriveContext) -> None:
    src = ctx.src
    for name, fact in src["disks"].items():
        ctx.add_fact(f"disk/{name}", "payg", fact, "GiB-hour", field="payg")
    for key, fact in src["flat"].items():
        ctx.add_fact(key, "any", fact, fact["unit"])
    ctx.add("clb/lcu", "any", Decimal(0), "LCU-hour", "estimate", "fake", ctx.today, "the fake balancer has no LCU fee")
