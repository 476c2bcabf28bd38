"""How Alibaba Cloud's resources are priced (cost components per type token) and how its price catalog rows are derived.

Each priced type has a function `(resource, ctx) -> list[CostComponent]` (see gpufleet.cost.resources); types with
no bill of their own are in FREE with the reason. The enum values read here are the ones the program sets.
`catalog_rows(ctx)` writes the region's non-instance rows from sources-alicloud.yaml (cost/derive.py calls it).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from gpufleet.cost import catalog
from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.derive import DeriveContext
from gpufleet.cost.resources import (
    DAYS_PER_MONTH,
    CostComponent,
    Disk,
    PricingContext,
    asg_share,
    bucket_name,
    clb_components,
    d,
    group_for,
    image_snapshot,
    model_bucket,
    node_components,
    policy_actions,
    policy_resource,
    qty,
    traffic_bound,
)
from gpufleet.registry import UsageKey

ALI_GROUP = "alicloud:ess/scalingGroup:ScalingGroup"


def _ali_billing(inputs: dict) -> str:
    if inputs.get("instanceChargeType") == "PrePaid":
        unit = inputs.get("periodUnit", "Month")
        period = int(inputs.get("period") or 1)
        return "yearly" if unit == "Year" or period >= 12 else "monthly"
    if inputs.get("spotStrategy") in ("SpotWithPriceLimit", "SpotAsPriceGo"):
        return "spot"
    return "payg"


def _ali_term_months(inputs: dict) -> int:
    """A PrePaid instance's term in months as declared (period x periodUnit; 0 when not PrePaid or in weeks)."""
    if inputs.get("instanceChargeType") != "PrePaid":
        return 0
    months = {"Month": 1, "Year": 12}.get(inputs.get("periodUnit", "Month"), 0)
    return int(inputs.get("period") or 1) * months


def _disk(category: str, level: str | None, size: int) -> Disk:
    """ESSD is priced per performance level (PL1 when none is set); other categories per category."""
    key = f"disk/cloud_essd/{level or 'PL1'}" if category == "cloud_essd" else f"disk/{category}"
    return (category, level, size, key)


def _ali_disks(inputs: dict, system_prefix: str) -> list[Disk]:
    disks = [
        _disk(
            inputs.get(f"{system_prefix}Category", "cloud_efficiency"),
            inputs.get(f"{system_prefix}PerformanceLevel"),
            int(inputs.get(f"{system_prefix}Size") or 40),
        )
    ]
    for disk in inputs.get("dataDisks") or []:
        disks.append(_disk(disk.get("category", "cloud_efficiency"), disk.get("performanceLevel"), int(disk.get("size") or 0)))
    return disks


def _ali_cap(inputs: dict, itype: str) -> Decimal | None:
    for lim in inputs.get("spotPriceLimits") or []:
        if lim.get("instanceType") == itype and lim.get("priceLimit") is not None:
            return d(lim["priceLimit"])
    return None


def ali_scaling_configuration(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    itype = i.get("instanceType") or (i.get("instanceTypes") or [None])[0]
    baseline = len(
        [r for r in ctx.of_type("alicloud:ecs/instance:Instance") if r["inputs"].get("instanceChargeType") == "PrePaid"]
    )
    nodes, how = asg_share(ctx, ALI_GROUP, group_for(ctx, res, ALI_GROUP, "scalingGroupId"), baseline)
    billing = _ali_billing(i)
    if billing in ("monthly", "yearly"):
        billing = "payg"  # ESS creates only pay-as-you-go or spot instances
    disks, cap = _ali_disks(i, "systemDisk"), _ali_cap(i, itype)
    group = group_for(ctx, res, ALI_GROUP, "scalingGroupId")
    if billing == "spot" and group is not None:
        payg, spot, mix = _ali_spot_mix(group["inputs"], nodes)
        pool = _spot_pool(i, group["inputs"], ctx)
        spread = f"spread evenly over {len(pool)} spot pools" if len(pool) > 1 else ""
        if payg:
            return node_components("autoscaled node, on-demand part", itype, "payg", payg, disks, None, f"{how}; {mix}") + (
                node_components("autoscaled node, spot part", itype, "spot", spot, disks, cap, f"{mix}; {spread}", pool)
                if spot
                else []
            )
        return node_components("autoscaled node", itype, billing, nodes, disks, cap, f"{how}; {spread}".rstrip("; "), pool)
    return node_components("autoscaled node", itype, billing, nodes, disks, cap, how)


def _spot_pool(inputs: dict, group: dict, ctx: PricingContext) -> tuple[str, ...]:
    """The instance types ESS spreads spot nodes over: "the scaling group creates spot instances in a balanced manner
    across the specified number of lowest-cost instance types" (CreateScalingGroup SpotInstancePools; lowest-cost per
    instance, CapacityOptions.PriceComparisonMode's default PricePerUnit; alibabacloud_ess20220222 1.13.3). The program
    sets as many pools as types; fewer are the cheapest by the catalog's spot price (an unpriced type last)."""
    types = list(inputs.get("instanceTypes") or [inputs.get("instanceType")])
    pools = int(group.get("spotInstancePools") or 1)
    if pools >= len(types):
        return tuple(types)
    rows = catalog.load("alicloud", ctx.region)

    def spot_price(itype: str) -> Decimal:
        row = rows.get(f"instance/{itype}", "spot")
        return row.price if row is not None and row.price is not None else Decimal("Infinity")

    return tuple(sorted(types, key=spot_price)[:pools])


def _ali_spot_mix(group: dict, nodes: Decimal) -> tuple[Decimal, Decimal, str]:
    """A spot group's average nodes split as ESS allocates them: the on-demand base first, then the on-demand share of
    the nodes above it (on_demand_base_capacity, on_demand_percentage_above_base_capacity); the rest is spot."""
    base = d(group.get("onDemandBaseCapacity"), "0")
    percent = d(group.get("onDemandPercentageAboveBaseCapacity"), "0")
    in_base = min(nodes, base)
    above_payg = (nodes - in_base) * percent / 100
    payg = in_base + above_payg
    return payg, nodes - payg, f"on-demand base {base} + {percent}% of the nodes above it at pay-as-you-go, the rest spot"


def ali_instance(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    billing = _ali_billing(i)
    comps = node_components(
        "node",
        i["instanceType"],
        billing,
        Decimal(1),
        _ali_disks(i, "systemDisk"),
        _ali_cap(i, i["instanceType"]),
        "subscription baseline node" if billing in ("monthly", "yearly") else "",
        term_months=_ali_term_months(i),
    )
    bw = int(i.get("internetMaxBandwidthOut") or 0)
    if bw:
        comps.append(
            CostComponent(f"public IP {bw} Mbps (traffic)", qty(ctx.usage.nat_egress_gb), "eip/traffic", "any", "bandwidth")
        )
    return comps


def _ali_eip_bandwidth(bw: int, subscription: bool) -> list[CostComponent]:
    if subscription:
        if bw <= 5:
            return [CostComponent(f"EIP {bw} Mbps subscription", Decimal(1), f"eip/subscription_{bw}mbps", "any", "bandwidth")]
        return [
            CostComponent("EIP first 5 Mbps subscription", Decimal(1), "eip/subscription_5mbps", "any", "bandwidth"),
            CostComponent(
                f"EIP {bw - 5} Mbps above 5 subscription", Decimal(bw - 5), "eip/subscription_over_5", "any", "bandwidth"
            ),
        ]
    out = [
        CostComponent("EIP configuration fee (by bandwidth)", DAYS_PER_MONTH, "eip/config_bandwidth", "any", "bandwidth"),
        CostComponent(f"EIP bandwidth 1-{min(bw, 5)} Mbps", DAYS_PER_MONTH * min(bw, 5), "eip/bandwidth_1_5", "any", "bandwidth"),
    ]
    if bw > 5:
        out.append(
            CostComponent(
                f"EIP bandwidth {bw - 5} Mbps above 5", DAYS_PER_MONTH * (bw - 5), "eip/bandwidth_over_5", "any", "bandwidth"
            )
        )
    return out


def ali_eip(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    bw = int(i.get("bandwidth") or 5)
    subscription = i.get("paymentType") == "Subscription" or i.get("instanceChargeType") == "PrePaid"
    if i.get("internetChargeType", "PayByBandwidth") == "PayByTraffic":
        bound_to_ecs = any(
            a["inputs"].get("instanceType") in ("EcsInstance",)
            for a in ctx.of_type("alicloud:ecs/eipAssociation:EipAssociation")
            if a["inputs"].get("allocationId") in (f"{res['name']}_id", res.get("id"))
        )
        out = (
            []
            if bound_to_ecs
            else [
                CostComponent(
                    "EIP configuration fee (by traffic)",
                    HOURS_PER_MONTH,
                    "eip/config_traffic",
                    "any",
                    "bandwidth",
                    "charged: bound to a NAT gateway, not to an ECS instance",
                )
            ]
        )
        cap, how = traffic_bound(bw)
        out.append(
            CostComponent(
                f"EIP outbound traffic (cap {bw} Mbps)",
                qty(ctx.usage.nat_egress_gb),
                "eip/traffic",
                "any",
                "bandwidth",
                "usage nat_egress_gb",
                bound=cap,
                bound_how=how,
            )
        )
        return out
    return _ali_eip_bandwidth(bw, subscription)


# A pay-by-CU NAT gateway is billed at least 1 CU each hour (the catalog's nat/cu row): CU-hours a month.
NAT_CU_MINIMUM = HOURS_PER_MONTH
NAT_CU_MINIMUM_HOW = "1 CU each hour"


def ali_nat(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    if i.get("internetChargeType", "PayByLcu") != "PayByLcu":
        spec = i.get("specification", "Small")
        return [CostComponent(f"NAT gateway spec {spec}", HOURS_PER_MONTH, f"nat/spec_{spec}", "any", "nat")]
    cu = ctx.usage.get("nat_cu_hours")
    note = "usage nat_cu_hours"
    if cu is None:
        cu, note = NAT_CU_MINIMUM, f"documented minimum: {NAT_CU_MINIMUM_HOW} (usage nat_cu_hours unknown)"
    return [
        CostComponent("NAT gateway instance", HOURS_PER_MONTH, "nat/instance", "any", "nat"),
        CostComponent("NAT capacity units", Decimal(cu), "nat/cu", "any", "nat", note),
    ]


def ali_clb(res: dict, ctx: PricingContext) -> list[CostComponent]:
    public = res["inputs"].get("addressType", "internet") == "internet"
    return clb_components(public, ctx) + (ali_clb_public_ip() if public else [])


def ali_clb_public_ip() -> list[CostComponent]:
    """An internet-facing CLB pays a public-IP retention fee (the former instance fee, renamed 2024-12-01, help.aliyun.com 27692)."""
    return [CostComponent("CLB public IP retention fee", HOURS_PER_MONTH, "clb/public_ip", "any", "load_balancer")]


def ali_node_reads(res: dict, ctx: PricingContext) -> list[CostComponent]:
    """What the node role's policy reads and the account pays for outside the stack: a KMS secret needs a paid KMS
    instance; the model bucket's storage. Both shared by every stack that reads them (counted once across stacks)."""
    acts = policy_actions(res["inputs"].get("policyDocument"))
    out = []
    if "kms:GetSecretValue" in acts:
        out.append(
            CostComponent(
                f"KMS instance ({ctx.region}; a secret needs a paid KMS instance)",
                Decimal(1),
                "kms/instance",
                "any",
                "other",
                shared=True,
            )
        )
    if "oss:GetObject" in acts:
        bucket = bucket_name(policy_resource(res["inputs"].get("policyDocument"), "oss:GetObject"))
        out.append(model_bucket(ctx, "OSS standard", "oss/standard", bucket))
    return out


def ali_scaling_configuration_and_image(res: dict, ctx: PricingContext) -> list[CostComponent]:
    """The autoscaled nodes and the snapshot of the image they boot (shared by the stacks of the region using it)."""
    size = int(res["inputs"].get("systemDiskSize") or 40)
    return ali_scaling_configuration(res, ctx) + image_snapshot(res, ctx, "imageId", size, "snapshot/standard")


# Alibaba's own usage key (the others are cost/usage.py's): the NAT gateway's capacity units.
USAGE = (
    UsageKey(
        "nat_cu_hours",
        f"NAT capacity units used per month; null = the documented minimum, {NAT_CU_MINIMUM_HOW} ({NAT_CU_MINIMUM})",
        unknown=f"unknown; the documented minimum of {NAT_CU_MINIMUM_HOW} ({NAT_CU_MINIMUM}) is priced",
        lever="NAT capacity units (CU-hours a month)",
        minimum=NAT_CU_MINIMUM,
        minimum_how=NAT_CU_MINIMUM_HOW,
    ),
)

PRICED: dict[str, Callable[[dict, PricingContext], list[CostComponent]]] = {
    "alicloud:ess/scalingConfiguration:ScalingConfiguration": ali_scaling_configuration_and_image,
    "alicloud:ecs/instance:Instance": ali_instance,
    "alicloud:ecs/eipAddress:EipAddress": ali_eip,
    "alicloud:vpc/natGateway:NatGateway": ali_nat,
    "alicloud:slb/applicationLoadBalancer:ApplicationLoadBalancer": ali_clb,
    "alicloud:ram/policy:Policy": ali_node_reads,
}

_CONFIG = "configuration object: no billing item of its own in the sources consulted"
FREE: dict[str, str] = {
    "alicloud:vpc/network:Network": "VPC: no charge",
    "alicloud:vpc/switch:Switch": "vSwitch: no charge",
    "alicloud:vpc/snatEntry:SnatEntry": "SNAT rule: billed through the NAT gateway's CUs",
    "alicloud:ecs/securityGroup:SecurityGroup": _CONFIG,
    "alicloud:ecs/securityGroupRule:SecurityGroupRule": _CONFIG,
    "alicloud:ecs/eipAssociation:EipAssociation": "binding: charged only above 5x the daily quota (1 CNY per binding), not reached by a fleet",
    "alicloud:slb/listener:Listener": "listener: billed through the CLB's LCUs",
    "alicloud:slb/serverCertificate:ServerCertificate": "uploaded server certificate: no charge",
    "alicloud:ess/scalingGroup:ScalingGroup": "ESS is free; its nodes are priced at the scaling configuration",
    "alicloud:ess/scalingRule:ScalingRule": "ESS is free",
    "alicloud:ess/scheduledTask:ScheduledTask": "ESS is free; schedules are in the average running nodes",
    "alicloud:ess/alarm:Alarm": "ESS is free",
    "alicloud:ess/attachment:Attachment": "ESS is free; attached instances are priced as instances",
    "alicloud:ess/lifecycleHook:LifecycleHook": "ESS is free",
    "alicloud:ess/scalingGroupVServerGroups:ScalingGroupVServerGroups": "ESS is free; the group's nodes are priced as instances",
    "alicloud:slb/serverGroup:ServerGroup": "a CLB VServer group has no bill of its own (the CLB's LCUs are priced)",
    "alicloud:ecs/ramRoleAttachment:RamRoleAttachment": "RAM role on an instance: no charge",
}
FREE_PREFIXES: dict[str, str] = {
    "alicloud:ram/": "RAM (roles, policies): no charge (the node policy's KMS secret and bucket are priced at the policy)",
    "alicloud:cms/": "CloudMonitor alarm rules and contact groups: no charge for basic alarms",
}


# --- the region's derived catalog rows ---------------------------------------------------------------


def declared_floor(resources: list[dict]) -> int:
    """GPU nodes kept at the floor, as declared: the ESS group's min_size, which counts the PrePaid nodes attached to
    it ("There are two types ECS instances in a scaling group: AutoCreated and Attached", ess_attachment docs), or the
    PrePaid nodes when there are more of them."""
    groups = sum(int(r["inputs"].get("minSize") or 0) for r in resources if r["type"] == ALI_GROUP)
    prepaid = sum(
        1
        for r in resources
        if r["type"] == "alicloud:ecs/instance:Instance" and r["inputs"].get("instanceChargeType") == "PrePaid"
    )
    return max(groups, prepaid)


def catalog_rows(ctx: DeriveContext) -> None:
    """Disk, EIP, NAT and CLB rows of the region from sources-alicloud.yaml (the rules are in cost/derive.py)."""
    src = ctx.src
    for name, fact in src["disks"].items():
        key = f"disk/{name}"
        if fact.get("missing"):
            for b, unit in (("payg", "GiB-hour"), ("monthly", "GiB-month")):
                ctx.add(key, b, None, unit, "missing", "", ctx.today, "no sourced price in cost/data/sources-alicloud.yaml")
            continue
        ctx.add_fact(key, "payg", fact, "GiB-hour", field="payg")
        ctx.add_fact(key, "monthly", fact, "GiB-month", field="sub")
        yf = Decimal(src["rules"]["yearly_factor"])
        ys = ctx.source(src["rules"]["yearly_source"])
        ctx.add(
            key,
            "yearly",
            Decimal(fact["sub"]) * yf,
            "GiB-month",
            "estimate",
            ys["url"],
            ys["as_of"],
            f"monthly {fact['sub']} x {yf} (1-year factor of the ECS order applied to its disks)",
        )
    e = src["eip"]
    ctx.add_fact("eip/traffic", "any", e["traffic_gb"], "GB")
    ctx.add_fact("eip/config_traffic", "any", e["traffic_config_hour"], "hour")
    ctx.add_fact("eip/config_bandwidth", "any", e["bandwidth_config_day"], "day")
    ctx.add_fact("eip/bandwidth_1_5", "any", e["bandwidth_mbps_day_1_5"], "Mbps-day")
    ctx.add_fact("eip/bandwidth_over_5", "any", e["bandwidth_mbps_day_over_5"], "Mbps-day")
    sub = e["subscription_month"]
    for mbps, price in sub["tiers"].items():
        ctx.add_fact(
            f"eip/subscription_{mbps}mbps",
            "any",
            {"price": price, "source": sub["source"], "regions_listed": sub["regions_listed"]},
            "month",
        )
    ctx.add_fact(
        "eip/subscription_over_5",
        "any",
        {"price": sub["per_mbps_over_5"], "source": sub["source"], "regions_listed": sub["regions_listed"]},
        "Mbps-month",
    )
    n = src["nat"]
    ctx.add_fact("nat/instance", "any", n["instance_hour"], "hour")
    ctx.add_fact("nat/cu", "any", n["cu_hour"], "CU-hour", extra=f"at least {n['min_cu_per_hour']} CU each hour")
    c = src["clb"]
    ctx.add_fact("clb/instance", "any", c["instance_hour"], "hour", listed=src["regions"])
    ctx.add_fact("clb/lcu", "any", c["lcu_hour"], "LCU-hour")
    ctx.add_fact("clb/traffic", "any", c["traffic_gb"], "GB")
    services_rows(ctx)


def services_rows(ctx: DeriveContext) -> None:
    """Rows from the public price points (quotes-alicloud.yaml): KMS instance, CLB public-IP retention fee, OSS, snapshots."""
    ctx.add_quote(
        "kms/instance", "any", "month", "kms/software_instance", "monthly", "no CNY or USD price of the KMS instance found"
    )
    ctx.add_quote(
        "clb/public_ip",
        "any",
        "hour",
        "clb/public_ip_retention_fee",
        "payg",
        "no price of the CLB public-IP retention fee found",
        "the former instance fee's Hangzhou example; renamed 公网IP保有费 on 2024-12-01 (27692)",
    )
    ctx.add_quote("oss/standard", "any", "GB-month", "oss/standard_lrs", "payg", "no OSS standard storage price found")
    ctx.add_quote("snapshot/standard", "any", "GiB-month", "snapshot/standard", "payg", "no snapshot storage price found")


# `cost reconcile` (finance/reconcile.py): the billing-detail CSV's columns per role, English then the console's Chinese.
# Alibaba Cloud, Expenses and Costs billing detail (实例账单 / instance bill; the bill-to-OSS file format,
# help.aliyun.com/document_detail/89133 "详单文件格式", read 2026-12-04): InstanceID (实例ID), NickName (实例昵称), Tag (实例标签,
# "key1:value1;key2:value2"), ProductName (产品名称), ProductDetail (产品明细), Region (地域), PretaxAmount (应付金额),
# BillingCycle (账期). The Chinese names are that page's descriptions of the fields.
BILL_COLUMNS: dict[str, tuple[str, ...]] = {
    "id": ("InstanceID", "实例ID", "实例id"),
    "name": ("NickName", "实例昵称"),
    "tag": ("Tag", "实例标签", "实例Tag"),
    "product": ("ProductName", "产品名称", "产品"),
    "detail": ("ProductDetail", "产品明细"),
    "region": ("Region", "地域"),
    "amount": ("PretaxAmount", "应付金额"),
    "cycle": ("BillingCycle", "账期"),
}
# Where a user gets that CSV (`cost reconcile --bill` of no file says it): the Expenses and Costs console's Bill Details
# page exports the detailed bill of a month as CSV (alibabacloud.com/help/en/user-center/user-guide/billing-details-1).
BILL_EXPORT = "the Expenses and Costs console's Bill Details page (the detailed bill, as CSV)"
# Its product names in a bill line, by category (finance/reconcile.py: added to the words every cloud's bill uses).
BILL_PRODUCTS: dict[str, tuple[str, ...]] = {"load_balancer": ("slb", "clb"), "gpu_compute": ("ecs",)}
# The types a stack declares once whose bill line a product names (finance/reconcile.py): a line tagged with the fleet
# and without a name or id of the stack (an EIP's NickName is often empty) is the stack's one resource of that type.
BILL_TYPES: dict[str, tuple[str, ...]] = {
    "alicloud:ecs/eipAddress:EipAddress": ("弹性公网ip", "elastic ip", "eip"),
    "alicloud:vpc/natGateway:NatGateway": ("nat网关", "nat gateway"),
    "alicloud:slb/applicationLoadBalancer:ApplicationLoadBalancer": ("负载均衡", "server load balancer", "slb", "clb"),
}
