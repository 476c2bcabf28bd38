"""Cost components per Pulumi resource type (Infracost style).

Each priced type has a function `(resource, ctx) -> list[CostComponent]`; each quantity is per month
in the unit of the catalog row named by `price_key`. Types with no bill of their own are in FREE with
the reason. tests/cost walks the inventories of every shipped stack and fails on a type in neither.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.usage import Usage

DAYS_PER_MONTH = HOURS_PER_MONTH / 24
CATEGORIES = ("gpu_compute", "disk", "bandwidth", "nat", "load_balancer", "other")


@dataclass(frozen=True)
class CostComponent:
    name: str
    monthly_quantity: Decimal | None  # None: depends on usage nobody gave; shown as a unit price
    price_key: str
    billing: str  # the catalog row: payg | monthly | yearly | spot | any
    category: str
    note: str = ""
    price_cap: Decimal | None = None  # spot price limit from the program


@dataclass
class PricingContext:
    cloud: str
    region: str
    usage: Usage
    replicas_average: Decimal  # average running GPU nodes of the whole fleet
    resources: list[dict]
    notes: list[str] = field(default_factory=list)

    def of_type(self, token: str) -> list[dict]:
        return [r for r in self.resources if r["type"] == token]


def _d(x, default: str = "0") -> Decimal:
    return Decimal(str(x if x is not None else default))


def _qty(value: Decimal | None) -> Decimal | None:
    return None if value is None else Decimal(value)


# --- shared pieces -----------------------------------------------------------------------------


def _disk_key(category: str, level: str | None) -> str:
    if category == "cloud_essd":
        return f"disk/cloud_essd/{level or 'PL1'}"
    return f"disk/{category}"


def _node_components(
    kind: str,
    itype: str,
    billing: str,
    nodes: Decimal,
    disks: list[tuple[str, str | None, int]],
    cap: Decimal | None = None,
    note: str = "",
) -> list[CostComponent]:
    """GPU nodes and their disks. nodes: average count; payg/spot quantities in hours, subscription in months."""
    hours = billing in ("payg", "spot")
    qty = nodes * HOURS_PER_MONTH if hours else nodes
    out = [CostComponent(f"{kind} {itype} ({billing})", qty, f"instance/{itype}", billing, "gpu_compute", note, cap)]
    disk_billing = "payg" if hours else billing
    for label, (category, level, size) in zip(_disk_labels(len(disks)), disks):
        per_node = Decimal(size) * (HOURS_PER_MONTH if hours else 1)
        out.append(
            CostComponent(
                f"{label} {category}{'/' + level if level else ''} {size} GiB",
                nodes * per_node,
                _disk_key(category, level),
                disk_billing,
                "disk",
            )
        )
    return out


def _disk_labels(n: int) -> list[str]:
    return ["system disk"] + [f"data disk {i}" for i in range(1, n)]


def _asg_share(ctx: PricingContext, group_token: str, group: dict | None, baseline: int) -> tuple[Decimal, str]:
    """Average nodes the autoscaler runs for this group: the fleet average minus baseline subscription
    instances, split across groups by desired capacity."""
    groups = ctx.of_type(group_token)
    total = max(Decimal(0), ctx.replicas_average - baseline)
    if not groups or group is None:
        return total, ""
    weights = [_d(g["inputs"].get("desiredCapacity"), "0") for g in groups]
    if sum(weights) == 0:
        share = total / len(groups)
    else:
        share = total * _d(group["inputs"].get("desiredCapacity"), "0") / sum(weights)
    return (
        share,
        f"{share.quantize(Decimal('0.0001'))} average nodes = (fleet average {ctx.replicas_average} - {baseline} subscription nodes)",
    )


def _group_for(ctx: PricingContext, cfg: dict, group_token: str, id_field: str) -> dict | None:
    groups = ctx.of_type(group_token)
    ref = cfg["inputs"].get(id_field)
    for g in groups:
        if ref is not None and ref in (g.get("id"), f"{g['name']}_id", g["name"]):
            return g
    for g in groups:
        if cfg.get("parent") and cfg.get("parent") == g.get("parent"):
            return g
    return groups[0] if len(groups) == 1 else None


# --- Alibaba -----------------------------------------------------------------------------------

ALI_GROUP = "alicloud:ess/scalingGroup:ScalingGroup"


def _ali_billing(inputs: dict) -> str:
    if inputs.get("instanceChargeType") == "PrePaid":
        unit = inputs.get("periodUnit", "Month")
        period = int(inputs.get("period") or 1)
        return "yearly" if unit == "Year" or period >= 12 else "monthly"
    if inputs.get("spotStrategy") in ("SpotWithPriceLimit", "SpotAsPriceGo"):
        return "spot"
    return "payg"


def _ali_disks(inputs: dict, system_prefix: str) -> list[tuple[str, str | None, int]]:
    disks = [
        (
            inputs.get(f"{system_prefix}Category", "cloud_efficiency"),
            inputs.get(f"{system_prefix}PerformanceLevel"),
            int(inputs.get(f"{system_prefix}Size") or 40),
        )
    ]
    for d in inputs.get("dataDisks") or []:
        disks.append((d.get("category", "cloud_efficiency"), d.get("performanceLevel"), int(d.get("size") or 0)))
    return disks


def _ali_cap(inputs: dict, itype: str) -> Decimal | None:
    for lim in inputs.get("spotPriceLimits") or []:
        if lim.get("instanceType") == itype and lim.get("priceLimit") is not None:
            return _d(lim["priceLimit"])
    return None


def ali_scaling_configuration(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    itype = i.get("instanceType") or (i.get("instanceTypes") or [None])[0]
    baseline = len(
        [r for r in ctx.of_type("alicloud:ecs/instance:Instance") if r["inputs"].get("instanceChargeType") == "PrePaid"]
    )
    nodes, how = _asg_share(ctx, ALI_GROUP, _group_for(ctx, res, ALI_GROUP, "scalingGroupId"), baseline)
    billing = _ali_billing(i)
    if billing in ("monthly", "yearly"):
        billing = "payg"  # ESS creates only pay-as-you-go or spot instances
    return _node_components("autoscaled node", itype, billing, nodes, _ali_disks(i, "systemDisk"), _ali_cap(i, itype), how)


def ali_instance(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    billing = _ali_billing(i)
    comps = _node_components(
        "node",
        i["instanceType"],
        billing,
        Decimal(1),
        _ali_disks(i, "systemDisk"),
        _ali_cap(i, i["instanceType"]),
        "subscription baseline node" if billing in ("monthly", "yearly") else "",
    )
    bw = int(i.get("internetMaxBandwidthOut") or 0)
    if bw:
        comps.append(
            CostComponent(f"public IP {bw} Mbps (traffic)", _qty(ctx.usage.nat_egress_gb), "eip/traffic", "any", "bandwidth")
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
        out.append(
            CostComponent(
                f"EIP outbound traffic (cap {bw} Mbps)",
                _qty(ctx.usage.nat_egress_gb),
                "eip/traffic",
                "any",
                "bandwidth",
                "usage nat_egress_gb",
            )
        )
        return out
    return _ali_eip_bandwidth(bw, subscription)


def ali_nat(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    if i.get("internetChargeType", "PayByLcu") != "PayByLcu":
        spec = i.get("specification", "Small")
        return [CostComponent(f"NAT gateway spec {spec}", HOURS_PER_MONTH, f"nat/spec_{spec}", "any", "nat")]
    cu = ctx.usage.nat_cu_hours
    note = "usage nat_cu_hours"
    if cu is None:
        cu, note = HOURS_PER_MONTH, "documented minimum: 1 CU each hour (usage nat_cu_hours unknown)"
    return [
        CostComponent("NAT gateway instance", HOURS_PER_MONTH, "nat/instance", "any", "nat"),
        CostComponent("NAT capacity units", Decimal(cu), "nat/cu", "any", "nat", note),
    ]


def _clb(public: bool, ctx: PricingContext) -> list[CostComponent]:
    """Both clouds' CLB: instance fee, LCUs from usage, public traffic out when internet-facing."""
    out = [
        CostComponent("CLB instance fee", HOURS_PER_MONTH, "clb/instance", "any", "load_balancer"),
        CostComponent(
            "CLB capacity units (LCU)", _qty(ctx.usage.lb_lcu_hours), "clb/lcu", "any", "load_balancer", "usage lb_lcu_hours"
        ),
    ]
    if public:
        out.append(
            CostComponent(
                "CLB public traffic out", _qty(ctx.usage.lb_egress_gb), "clb/traffic", "any", "bandwidth", "usage lb_egress_gb"
            )
        )
    return out


def ali_clb(res: dict, ctx: PricingContext) -> list[CostComponent]:
    return _clb(res["inputs"].get("addressType", "internet") == "internet", ctx)


# --- Tencent -----------------------------------------------------------------------------------

TC_GROUP = "tencentcloud:As/scalingGroup:ScalingGroup"
TC_DISKS_DEFAULT = "CLOUD_PREMIUM"


def _tc_billing(inputs: dict, period_field: str) -> str:
    """POSTPAID_BY_HOUR, SPOTPAID or PREPAID (monthly below a 12-month term, yearly from 12)."""
    charge = inputs.get("instanceChargeType") or ""
    if charge == "PREPAID":
        return "yearly" if int(inputs.get(period_field) or 1) >= 12 else "monthly"
    return {"SPOTPAID": "spot"}.get(charge, "payg")


def tc_scaling_config(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    itype = (i.get("instanceTypes") or [i.get("instanceType")])[0]
    baseline = len(
        [r for r in ctx.of_type("tencentcloud:Instance/instance:Instance") if r["inputs"].get("instanceChargeType") == "PREPAID"]
    )
    nodes, how = _asg_share(ctx, TC_GROUP, _group_for(ctx, res, TC_GROUP, "configurationId"), baseline)
    billing = _tc_billing(i, "instanceChargeTypePrepaidPeriod")
    disks = [(i.get("systemDiskType", TC_DISKS_DEFAULT), None, int(i.get("systemDiskSize") or 50))]
    disks += [(d.get("diskType", TC_DISKS_DEFAULT), None, int(d.get("diskSize") or 0)) for d in i.get("dataDisks") or []]
    cap = _d(i["spotMaxPrice"]) if i.get("spotMaxPrice") else None
    return _node_components("autoscaled node", itype, billing, nodes, disks, cap, how)


def tc_instance(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    billing = _tc_billing(i, "instanceChargeTypePrepaidPeriod")
    disks = [(i.get("systemDiskType", TC_DISKS_DEFAULT), None, int(i.get("systemDiskSize") or 50))]
    disks += [(d.get("dataDiskType", TC_DISKS_DEFAULT), None, int(d.get("dataDiskSize") or 0)) for d in i.get("dataDisks") or []]
    return _node_components(
        "node",
        i["instanceType"],
        billing,
        Decimal(1),
        disks,
        None,
        "subscription baseline node" if billing in ("monthly", "yearly") else "",
    )


def _tc_bandwidth(bw: int, subscription: bool, label: str) -> list[CostComponent]:
    if subscription:
        tiers = [("le_2", min(bw, 2)), ("from_2_to_5", max(0, min(bw, 5) - 2)), ("over_5", max(0, bw - 5))]
        return [
            CostComponent(f"{label} bandwidth {n} Mbps ({t})", Decimal(n), f"net/subscription_{t}", "any", "bandwidth")
            for t, n in tiers
            if n
        ]
    out = [
        CostComponent(
            f"{label} bandwidth first {min(bw, 5)} Mbps", HOURS_PER_MONTH * min(bw, 5), "net/bandwidth_le_5", "any", "bandwidth"
        )
    ]
    if bw > 5:
        out.append(
            CostComponent(
                f"{label} bandwidth {bw - 5} Mbps above 5", HOURS_PER_MONTH * (bw - 5), "net/bandwidth_over_5", "any", "bandwidth"
            )
        )
    return out


def tc_eip(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    charge = i.get("internetChargeType", "TRAFFIC_POSTPAID_BY_HOUR")
    out = [CostComponent("EIP holding fee", HOURS_PER_MONTH, "eip/holding", "any", "bandwidth")]
    if charge == "TRAFFIC_POSTPAID_BY_HOUR":
        out.append(
            CostComponent(
                "EIP outbound traffic", _qty(ctx.usage.nat_egress_gb), "net/traffic", "any", "bandwidth", "usage nat_egress_gb"
            )
        )
    else:
        out += _tc_bandwidth(int(i.get("internetMaxBandwidthOut") or 1), charge == "BANDWIDTH_PREPAID_BY_MONTH", "EIP")
    return out


def tc_nat(res: dict, ctx: PricingContext) -> list[CostComponent]:
    conc = int(res["inputs"].get("maxConcurrent") or 1_000_000)
    size = "small" if conc <= 1_000_000 else "medium" if conc <= 3_000_000 else "large"
    return [CostComponent(f"NAT gateway ({size}, {conc} connections)", HOURS_PER_MONTH, f"nat/{size}", "any", "nat")]


def tc_clb(res: dict, ctx: PricingContext) -> list[CostComponent]:
    return _clb(res["inputs"].get("networkType", "OPEN") == "OPEN", ctx)


PRICED: dict[str, Callable[[dict, PricingContext], list[CostComponent]]] = {
    "alicloud:ess/scalingConfiguration:ScalingConfiguration": ali_scaling_configuration,
    "alicloud:ecs/instance:Instance": ali_instance,
    "alicloud:ecs/eipAddress:EipAddress": ali_eip,
    "alicloud:vpc/natGateway:NatGateway": ali_nat,
    "alicloud:slb/applicationLoadBalancer:ApplicationLoadBalancer": ali_clb,
    "tencentcloud:As/scalingConfig:ScalingConfig": tc_scaling_config,
    "tencentcloud:Instance/instance:Instance": tc_instance,
    "tencentcloud:Eip/instance:Instance": tc_eip,
    "tencentcloud:Nat/gateway:Gateway": tc_nat,
    "tencentcloud:Clb/instance:Instance": tc_clb,
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
    "alicloud:slb/serverGroup:ServerGroup": _CONFIG,
    "alicloud:ess/scalingGroup:ScalingGroup": "ESS is free; its nodes are priced at the scaling configuration",
    "alicloud:ess/scalingRule:ScalingRule": "ESS is free",
    "alicloud:ess/scheduledTask:ScheduledTask": "ESS is free; schedules are in the average running nodes",
    "alicloud:ess/alarm:Alarm": "ESS is free",
    "alicloud:ess/scalingGroupVServerGroups:ScalingGroupVServerGroups": "ESS is free",
    "alicloud:ess/attachment:Attachment": "ESS is free; attached instances are priced as instances",
    "alicloud:ess/lifecycleHook:LifecycleHook": "ESS is free",
    "alicloud:ecs/ramRoleAttachment:RamRoleAttachment": "RAM role on an instance: no charge",
    "tencentcloud:Vpc/instance:Instance": "VPC: no charge",
    "tencentcloud:Subnet/instance:Instance": "subnet: no charge",
    "tencentcloud:Security/group:Group": _CONFIG,
    "tencentcloud:Security/groupLiteRule:GroupLiteRule": _CONFIG,
    "tencentcloud:Security/groupRuleSet:GroupRuleSet": _CONFIG,
    "tencentcloud:Clb/listener:Listener": "listener: billed through the CLB",
    "tencentcloud:Clb/listenerRule:ListenerRule": "listener rule: billed through the CLB",
    "tencentcloud:Ssl/certificate:Certificate": "uploaded certificate: no charge",
    "tencentcloud:Clb/attachment:Attachment": _CONFIG,
    "tencentcloud:As/scalingGroup:ScalingGroup": "Auto Scaling is free; its nodes are priced at the scaling config",
    "tencentcloud:As/scalingPolicy:ScalingPolicy": "Auto Scaling is free",
    "tencentcloud:As/schedule:Schedule": "Auto Scaling is free; schedules are in the average running nodes",
    "tencentcloud:As/attachment:Attachment": "Auto Scaling is free; attached instances are priced as instances",
    "tencentcloud:As/protectInstances:ProtectInstances": "Auto Scaling is free",
    "tencentcloud:Route/table:Table": _CONFIG,
    "tencentcloud:Route/tableEntry:TableEntry": _CONFIG,
    "tencentcloud:Eip/association:Association": _CONFIG,
    "tencentcloud:Monitor/alarmPolicy:AlarmPolicy": "basic monitoring alarms: no charge",
    "tencentcloud:Monitor/alarmNotice:AlarmNotice": "basic monitoring alarms: no charge",
}
FREE_PREFIXES: dict[str, str] = {
    "gpufleet:": "component: a grouping of the resources below it",
    "pulumi:providers:": "Pulumi provider: not a cloud resource",
    "pulumi:pulumi:": "Pulumi stack: not a cloud resource",
    "alicloud:ram/": "RAM (roles, policies): no charge",
    "alicloud:cms/": "CloudMonitor alarm rules and contact groups: no charge for basic alarms",
    "tencentcloud:Cam/": "CAM (roles, policies): no charge",
}


def free_reason(token: str) -> str | None:
    if token in FREE:
        return FREE[token]
    return next((why for prefix, why in FREE_PREFIXES.items() if token.startswith(prefix)), None)


def is_covered(token: str) -> bool:
    return token in PRICED or free_reason(token) is not None
