"""How Tencent Cloud's resources are priced (cost components per type token) and how its price catalog rows are derived.

Each priced type has a function `(resource, ctx) -> list[CostComponent]` (see gpufleet.cost.resources); types with
no bill of their own are in FREE with the reason. The enum values read here are the ones the program sets.
`catalog_rows(ctx)` writes the region's non-instance rows from sources-tencentcloud.yaml (cost/derive.py calls it).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.derive import DeriveContext
from gpufleet.cost.resources import (
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
    shown_nodes,
    traffic_bound,
)

TC_GROUP = "tencentcloud:As/scalingGroup:ScalingGroup"
TC_DISKS_DEFAULT = "CLOUD_PREMIUM"


def _disk(category: str, size: int) -> Disk:
    return (category, None, size, f"disk/{category}")


def _tc_billing(inputs: dict, period_field: str) -> str:
    """POSTPAID_BY_HOUR, SPOTPAID or PREPAID (monthly below a 12-month term, yearly from 12)."""
    charge = inputs.get("instanceChargeType") or ""
    if charge == "PREPAID":
        return "yearly" if int(inputs.get(period_field) or 1) >= 12 else "monthly"
    return {"SPOTPAID": "spot"}.get(charge, "payg")


def _tc_term_months(inputs: dict) -> int:
    """A PREPAID instance's term in months as declared (instance_charge_type_prepaid_period; 0 when not PREPAID)."""
    if inputs.get("instanceChargeType") != "PREPAID":
        return 0
    return int(inputs.get("instanceChargeTypePrepaidPeriod") or 1)


def _tc_group(ctx: PricingContext, cfg: dict) -> dict | None:
    """The AS group launching this configuration: the group names the configuration (configuration_id), not the
    other way round; with a spot fleet's on-demand base there are two groups under one parent."""
    for g in ctx.of_type(TC_GROUP):
        if g["inputs"].get("configurationId") in (cfg.get("id"), f"{cfg['name']}_id"):
            return g
    return group_for(ctx, cfg, TC_GROUP, "configurationId")


def _tc_nodes(ctx: PricingContext, cfg: dict, baseline: int) -> tuple[Decimal, str]:
    """Average nodes of this configuration's group. A fixed-size group (min = max: a spot fleet's on-demand base) runs
    its size while the fleet average allows; the other group runs the rest."""
    group = _tc_group(ctx, cfg)
    groups = ctx.of_type(TC_GROUP)
    fixed = [g for g in groups if g["inputs"].get("minSize") == g["inputs"].get("maxSize")]
    if group is None or len(groups) != 2 or len(fixed) != 1:
        return asg_share(ctx, TC_GROUP, group, baseline)
    total, _ = asg_share(ctx, TC_GROUP, None, baseline)
    size = min(total, d(fixed[0]["inputs"].get("minSize"), "0"))
    if group is fixed[0]:
        return size, f"{size} nodes: the on-demand base group's fixed size"
    return (
        total - size,
        f"{shown_nodes(total - size)} average nodes = fleet average {shown_nodes(ctx.replicas_average)} - {size} on-demand "
        "base nodes",
    )


def tc_scaling_config(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    itype = (i.get("instanceTypes") or [i.get("instanceType")])[0]
    baseline = len(
        [r for r in ctx.of_type("tencentcloud:Instance/instance:Instance") if r["inputs"].get("instanceChargeType") == "PREPAID"]
    )
    nodes, how = _tc_nodes(ctx, res, baseline)
    billing = _tc_billing(i, "instanceChargeTypePrepaidPeriod")
    disks = [_disk(i.get("systemDiskType", TC_DISKS_DEFAULT), int(i.get("systemDiskSize") or 50))]
    disks += [_disk(x.get("diskType", TC_DISKS_DEFAULT), int(x.get("diskSize") or 0)) for x in i.get("dataDisks") or []]
    cap = d(i["spotMaxPrice"]) if i.get("spotMaxPrice") else None
    return node_components("autoscaled node", itype, billing, nodes, disks, cap, how)


def tc_instance(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    billing = _tc_billing(i, "instanceChargeTypePrepaidPeriod")
    disks = [_disk(i.get("systemDiskType", TC_DISKS_DEFAULT), int(i.get("systemDiskSize") or 50))]
    disks += [_disk(x.get("dataDiskType", TC_DISKS_DEFAULT), int(x.get("dataDiskSize") or 0)) for x in i.get("dataDisks") or []]
    return node_components(
        "node",
        i["instanceType"],
        billing,
        Decimal(1),
        disks,
        None,
        "subscription baseline node" if billing in ("monthly", "yearly") else "",
        term_months=_tc_term_months(i),
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


EIP_BOUND_NOTE = (
    "bound to {to}: no IP resource fee while an EIP is bound (Tencent EIP billing, intlcloud-documents "
    "弹性公网 IP 计费说明_intl_en.md: 'the EIP only charges public network fees' once bound; cost/data/quotes-tencentcloud.yaml)"
)


def bound_to(ctx: PricingContext, res: dict) -> str | None:
    """The name of a declared resource whose inputs reference this one's outputs (a NAT gateway's assigned EIP)."""
    mark = f"<{res['name']}."

    def mentions(v) -> bool:
        if isinstance(v, str):
            return v.startswith(mark)
        if isinstance(v, list):
            return any(mentions(x) for x in v)
        if isinstance(v, dict):
            return any(mentions(x) for x in v.values())
        return False

    return next((r["name"] for r in ctx.resources if r is not res and mentions(r.get("inputs") or {})), None)


def tc_eip(res: dict, ctx: PricingContext) -> list[CostComponent]:
    i = res["inputs"]
    charge = i.get("internetChargeType", "TRAFFIC_POSTPAID_BY_HOUR")
    to = bound_to(ctx, res)
    out = [
        CostComponent(
            "EIP IP resource fee (idle)" if to is None else "EIP IP resource fee (none while bound)",
            HOURS_PER_MONTH if to is None else Decimal(0),
            "eip/holding",
            "any",
            "bandwidth",
            "not bound to a declared resource: the idle fee every hour" if to is None else EIP_BOUND_NOTE.format(to=to),
        )
    ]
    if charge == "TRAFFIC_POSTPAID_BY_HOUR":
        cap, how = traffic_bound(i.get("internetMaxBandwidthOut"))
        out.append(
            CostComponent(
                "EIP outbound traffic",
                qty(ctx.usage.nat_egress_gb),
                "net/traffic",
                "any",
                "bandwidth",
                "usage nat_egress_gb",
                bound=cap,
                bound_how=how,
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
    """Only an LCU-supported CLB (one declared with `sla_type`) is billed by LCU: provider v1.82.42 clb_instance
    `sla_type` "is required to create LCU-supported instances"; Tencent's LCU billing page (product/214/41563): "Only
    LCU-supported CLB instances will incur LCU usage fees". Without it (a shared-performance instance) there is no
    LCU line."""
    out = clb_components(res["inputs"].get("networkType", "OPEN") == "OPEN", ctx)
    if res["inputs"].get("slaType"):
        return out
    return [c for c in out if c.price_key != "clb/lcu"]


def cam_action(action: str) -> str:
    """A CAM policy's action as `service:Action`: CAM writes it with a `name/` prefix (role.py, autoscaler.py)."""
    return action.removeprefix("name/")


def tc_node_reads(res: dict, ctx: PricingContext) -> list[CostComponent]:
    """What the node role's policy reads and the account pays for outside the stack: the SSM secret (a monthly fee
    per secret and its API calls, at least 10,000 a month billed) and the model bucket's COS storage (shared)."""
    doc = res["inputs"].get("document")
    acts = policy_actions(doc, cam_action)
    out = []
    if "ssm:GetSecretValue" in acts:
        secret = policy_resource(doc, "ssm:GetSecretValue", cam_action).rsplit("/", 1)[-1]
        out += [
            # one secret per name: stacks naming different secrets pay for each (not merged in `cost report --all`)
            CostComponent(
                f"SSM secret{' ' + secret if secret else ''} (the API key)",
                Decimal(1),
                "ssm/secret",
                "any",
                "other",
                shared=True,
                shared_id=secret,
            ),
            CostComponent(
                "SSM API calls (billed per 10,000, at least 10,000 a month)",
                Decimal(1),
                "ssm/calls",
                "any",
                "other",
                "nodes read the secret at boot: far below the 10,000 calls billed at least",
                shared=True,
            ),
        ]
    if "cos:GetObject" in acts:
        out.append(
            model_bucket(ctx, "COS standard", "cos/standard", bucket_name(policy_resource(doc, "cos:GetObject", cam_action)))
        )
    return out


def tc_scaling_config_and_image(res: dict, ctx: PricingContext) -> list[CostComponent]:
    """The autoscaled nodes and the snapshot of the image they boot (shared by the stacks of the region using it)."""
    size = int(res["inputs"].get("systemDiskSize") or 50)
    return tc_scaling_config(res, ctx) + image_snapshot(res, ctx, "imageId", size, "snapshot/standard")


SCF_PACKAGE = {"invocations": Decimal(500_000), "gb_seconds": Decimal(100_000), "outbound_gb": Decimal(2)}
SCF_PACKAGE_SOURCE = "tencentcloud.com/document/product/583/17299 (Billing Overview, updated 2023-02-01)"


def tc_scf(res: dict, ctx: PricingContext) -> list[CostComponent]:
    """The SCF scaler, priced at SCF's basic package (a monthly fee, 0.06 USD a day, that covers 500,000 invocations,
    100,000 GBs and 2 GB out a month: Billing Overview product/583/17299 and Billable Items product/583/44254). The
    timer runs it once a minute (43,800 times a month); its GBs = runs x memory x seconds a run fit the package up to
    the second count shown in the note (the handler's timeout is the most a run can take)."""
    i = res["inputs"]
    triggers = i.get("triggers") or []
    runs = HOURS_PER_MONTH * 60 if any(t.get("type") == "timer" for t in triggers) else None
    mem_gb = d(i.get("memSize"), "128") / 1024
    timeout = d(i.get("timeout"), "3")
    out = [
        CostComponent(
            "SCF basic package (500,000 invocations, 100,000 GBs, 2 GB out a month)",
            Decimal(1),
            "scf/basic_package",
            "any",
            "other",
            f"billed monthly once the function is used ({SCF_PACKAGE_SOURCE})",
        )
    ]
    if runs is None:
        out.append(CostComponent("SCF usage beyond the basic package", None, "scf/gb_second", "any", "other", "usage unknown"))
        return out
    fits = (SCF_PACKAGE["gb_seconds"] / (runs * mem_gb)).quantize(Decimal("0.1"))
    worst = (runs * mem_gb * timeout).quantize(Decimal(1))
    over = max(Decimal(0), worst - SCF_PACKAGE["gb_seconds"])
    note = (
        f"{runs} runs x {mem_gb} GB fit the package's 100,000 GBs up to {fits} s a run (the scaler reads a few nodes' "
        f"metrics: about a second); at the {timeout} s timeout every run: {worst} GBs, {over} above the package"
    )
    out.append(CostComponent("SCF resource usage above the basic package", Decimal(0), "scf/gb_second", "any", "other", note))
    return out


PRICED: dict[str, Callable[[dict, PricingContext], list[CostComponent]]] = {
    "tencentcloud:As/scalingConfig:ScalingConfig": tc_scaling_config_and_image,
    "tencentcloud:Instance/instance:Instance": tc_instance,
    "tencentcloud:Eip/instance:Instance": tc_eip,
    "tencentcloud:Nat/gateway:Gateway": tc_nat,
    "tencentcloud:Clb/instance:Instance": tc_clb,
    "tencentcloud:Cam/policy:Policy": tc_node_reads,
    "tencentcloud:Scf/function:Function": tc_scf,
}

_CONFIG = "configuration object: no billing item of its own in the sources consulted"
FREE: dict[str, str] = {
    "tencentcloud:Vpc/instance:Instance": "VPC: no charge",
    "tencentcloud:Subnet/instance:Instance": "subnet: no charge",
    "tencentcloud:Security/group:Group": _CONFIG,
    "tencentcloud:Security/groupRuleSet:GroupRuleSet": _CONFIG,
    "tencentcloud:Clb/listener:Listener": "listener: billed through the CLB",
    "tencentcloud:Clb/listenerRule:ListenerRule": "listener rule: billed through the CLB",
    "tencentcloud:Ssl/certificate:Certificate": "uploaded certificate: no charge",
    "tencentcloud:As/scalingGroup:ScalingGroup": "Auto Scaling is free; its nodes are priced at the scaling config",
    "tencentcloud:As/scalingPolicy:ScalingPolicy": "Auto Scaling is free",
    "tencentcloud:As/schedule:Schedule": "Auto Scaling is free; schedules are in the average running nodes",
    "tencentcloud:As/attachment:Attachment": "Auto Scaling is free; attached instances are priced as instances",
    "tencentcloud:As/protectInstances:ProtectInstances": "Auto Scaling is free",
    "tencentcloud:As/lifecycleHook:LifecycleHook": "Auto Scaling is free",
    "tencentcloud:Tat/command:Command": "TAT (automation tools) commands: no charge of their own; they run on the priced nodes",
    "tencentcloud:Route/table:Table": _CONFIG,
    "tencentcloud:Route/tableEntry:TableEntry": _CONFIG,
    "tencentcloud:Monitor/alarmPolicy:AlarmPolicy": "basic monitoring alarms: no charge",
}
FREE_PREFIXES: dict[str, str] = {
    "tencentcloud:Cam/": "CAM (roles, policies): no charge (the node policy's SSM secret and bucket are priced at the policy)",
}


# --- the region's derived catalog rows ---------------------------------------------------------------


def declared_floor(resources: list[dict]) -> int:
    """GPU nodes kept at the floor, as declared: every AS group's own min_size (attached nodes are not launched by it)
    plus the subscription CVMs (the group's attached floor, protected from scale-in)."""
    groups = sum(int(r["inputs"].get("minSize") or 0) for r in resources if r["type"] == TC_GROUP)
    return groups + sum(1 for r in resources if r["type"] == "tencentcloud:Instance/instance:Instance")


def catalog_rows(ctx: DeriveContext) -> None:
    """Disk, public network, EIP, NAT and CLB rows of the region from sources-tencentcloud.yaml and quotes-tencentcloud.yaml."""
    src = ctx.src
    # The SCF scaler (autoscaler.py): the basic package from its USD/day quote; usage above it has no sourced price
    ctx.add_quote(
        "scf/basic_package", "any", "month", "scf/basic_package", "payg", "no SCF price found", scale=HOURS_PER_MONTH / 24
    )
    ctx.add("scf/gb_second", "any", None, "GB-second", "missing", "", ctx.today, "SCF resource usage unit price: NOT FOUND")
    yf = Decimal(src["rules"]["yearly_factor"])
    ys = ctx.source(src["rules"]["yearly_source"])
    for name, fact in src["disks"].items():
        key = f"disk/{name}"
        if fact.get("missing"):
            for b, unit in (("payg", "GiB-hour"), ("monthly", "GiB-month"), ("yearly", "GiB-month")):
                ctx.add(key, b, None, unit, "missing", "", ctx.today, "no sourced price in cost/data/sources-tencentcloud.yaml")
            continue
        if fact.get("from_quotes"):  # the type's own (international-site USD) list price, x the services' CNY/USD
            ctx.add_quote(key, "payg", "GiB-hour", key, "payg", f"no price for {name}", "priced per GB by the vendor")
        else:
            ctx.add_fact(key, "payg", fact, "GiB-hour", field="payg", listed=src["regions"])
        # subscription: the type's own monthly list price (international site, USD x the services' CNY/USD)
        ctx.add_quote(
            key, "monthly", "GiB-month", key, "monthly", f"no subscription price for {name}", "priced per GB by the vendor"
        )
        m = ctx.rows[(key, "monthly")]
        if m.price is None or m.lowest is None or m.highest is None:
            continue
        ctx.add(
            key,
            "yearly",
            m.price * yf,
            "GiB-month",
            "estimate",
            ys["url"],
            min(m.as_of, ys["as_of"]),
            f"monthly {m.price} x {yf} (CBS 1-year discount, official)",
            m.lowest * yf,
            m.highest * yf,
            m.quotes,
        )
    p = src["public_network"]
    ctx.add_fact("net/traffic", "any", p["traffic_gb"], "GB", listed=src["regions"])
    ctx.add_fact("net/bandwidth_le_5", "any", p["bandwidth_hour_le_5"], "Mbps-hour", listed=src["regions"])
    ctx.add_fact("net/bandwidth_over_5", "any", p["bandwidth_hour_over_5"], "Mbps-hour", listed=src["regions"])
    sub = p["subscription_mbps_month"]
    for tier in ("le_2", "from_2_to_5", "over_5"):
        ctx.add_fact(
            f"net/subscription_{tier}", "any", {"price": sub[tier], "source": sub["source"]}, "Mbps-month", listed=src["regions"]
        )
    ctx.add_quote(
        "eip/holding", "any", "hour", "eip/idle", "payg", "no EIP idle fee found", "the idle (unbound) fee; none while bound"
    )
    n = src["nat"]
    for size in ("small", "medium", "large"):
        ctx.add_fact(f"nat/{size}", "any", n[f"{size}_hour"], "hour", listed=src["regions"])
    ctx.add_fact("nat/traffic", "any", n["traffic_gb"], "GB", listed=src["regions"])
    c = src["clb"]
    ctx.add_quote("clb/instance", "any", "hour", "clb/instance", "payg", "no CLB instance price found", scale=Decimal(1) / 24)
    ctx.add_quote("clb/lcu", "any", "LCU-hour", "clb/lcu", "payg", "no CLB LCU price found")
    ctx.add_fact("clb/traffic", "any", c["traffic_gb"], "GB", listed=src["regions"])
    services_rows(ctx)


def services_rows(ctx: DeriveContext) -> None:
    """Rows from the public price points (quotes-tencentcloud.yaml): SSM, COS, snapshots (USD x the services' CNY/USD)."""
    ctx.add_quote("ssm/secret", "any", "secret-month", "ssm/secret", "payg", "no SSM secret price found")
    ctx.add_quote("ssm/calls", "any", "10k-calls", "ssm/api_calls", "payg", "no SSM API call price found")
    ctx.add_quote("cos/standard", "any", "GB-month", "cos/standard", "payg", "no COS standard storage price found")
    ctx.add_quote("snapshot/standard", "any", "GB-month", "snapshot/standard", "monthly", "no snapshot storage price found")


# `cost reconcile` (finance/reconcile.py): the billing-detail CSV's columns per role, English then the console's Chinese.
# Tencent Cloud, Billing Center bill details (Fields in Bills, tencentcloud.com/document/product/555/37506, updated
# 2025-03-28; the Chinese consumption-bill field page cloud.tencent.com/document/product/555/118503): Instance ID
# (实例ID / 资源ID), Instance Name (实例名称 / 资源别名), Product Name (产品名称), Subproduct Name (子产品名称), Component Name (组件名称),
# Region (地域), Tag Keys (标签), and the amount after discount: Total Amount After Discount (Excluding Tax) (折后税前总费用,
# the partner bill's name, product/1085/43050), Total Cost (总费用) or Discounted Total Cost (优惠后总价), the first found.
BILL_COLUMNS: dict[str, tuple[str, ...]] = {
    "id": ("Instance ID", "InstanceID", "实例ID", "资源ID"),
    "name": ("Instance Name", "InstanceName", "实例名称", "资源别名"),
    "tag": ("Tag Keys", "Tag", "标签"),
    "product": ("Product Name", "ProductName", "产品名称"),
    "detail": ("Component Name", "Subproduct Name", "组件名称", "子产品名称"),
    "region": ("Region", "地域"),
    "amount": (
        "Total Amount After Discount (Excluding Tax)",
        "Total Cost",
        "Discounted Total Cost",
        "折后税前总费用",
        "总费用",
        "优惠后总价",
    ),
    "cycle": ("Bill Month", "Consumption Month", "账单月份", "消耗账单所属月份"),
}
# Where a user gets that CSV (`cost reconcile --bill` of no file says it): the Billing Center's Bill Download page
# downloads a month's bill details (L3, the level with Component Name; tencentcloud.com/document/product/555/44357).
BILL_EXPORT = "the Billing Center's Bill Download page (bill details, L3, as CSV)"
# Its product names in a bill line, by category (finance/reconcile.py: added to the words every cloud's bill uses).
BILL_PRODUCTS: dict[str, tuple[str, ...]] = {"disk": ("cbs",), "load_balancer": ("clb",), "gpu_compute": ("cvm",)}
# The types a stack declares once whose bill line a product names (finance/reconcile.py): a line tagged with the fleet
# and without a name or id of the stack is the stack's one resource of that type.
BILL_TYPES: dict[str, tuple[str, ...]] = {
    "tencentcloud:Eip/instance:Instance": ("弹性公网ip", "elastic ip", "eip"),
    "tencentcloud:Nat/gateway:Gateway": ("nat网关", "nat gateway"),
    "tencentcloud:Clb/instance:Instance": ("负载均衡", "load balancer", "clb"),
}
