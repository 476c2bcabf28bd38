"""Cost components (Infracost style): the cloud-neutral pieces, and the lookup of a type's cost function.

Each cloud's pricing module (components/<cloud>/pricing.py) has a function `(resource, ctx) -> list[CostComponent]`
per priced type token; each quantity is per month in the unit of the catalog row named by `price_key`. Types with
no bill of their own are in its FREE (or FREE_PREFIXES) with the reason. tests/cost walks the inventories of every
shipped stack and fails on a type in neither.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Protocol

from msgspec import Struct, field

from gpufleet import inputs, registry
from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.registry import UsageKey

DAYS_PER_MONTH = HOURS_PER_MONTH / 24


def _categories() -> list[dict]:
    path = Path(__file__).parent / "data" / "categories.yaml"
    with inputs.shaped("cost/data/categories.yaml"):
        return inputs.load_mapping(path, "cost/data/categories.yaml")["categories"]


_CATEGORY_ROWS = _categories()
CATEGORIES = tuple(c["name"] for c in _CATEGORY_ROWS)  # the report order (cost/data/categories.yaml)
NODE_CATEGORIES = tuple(c["name"] for c in _CATEGORY_ROWS if c["node"])  # one node's own cost: instance and disks
(COMPUTE,) = (c["name"] for c in _CATEGORY_ROWS if c["compute"])  # the instances; every other category is overhead


class CostComponent(Struct, frozen=True):
    name: str
    monthly_quantity: Decimal | None  # None: depends on usage nobody gave; shown as a unit price
    price_key: str
    billing: str  # the catalog row: payg | monthly | yearly | spot | any
    category: str
    note: str = ""
    price_cap: Decimal | None = None  # spot price limit from the program
    shared: bool = (
        False  # one bill for several stacks (KMS instance, model bucket, image snapshots): count once in `cost report --all`
    )
    bound: Decimal | None = None  # the most monthly_quantity can be when it is unknown (a declared cap), see bound_how
    bound_how: str = ""
    shared_id: str = ""  # with `shared`: what the stacks share (a bucket's or secret's name); "" = one per cloud/region
    replaced_by: str = ""  # a spot node's item when it is reclaimed and replaced at pay-as-you-go; "" = price_key
    term_months: int = 0  # a subscription's term as declared (period in months); 0: none declared (catalog.term_not_priced)


def bandwidth_cap_gb(mbps) -> Decimal:
    """The most GB a month a link capped at `mbps` can carry: mbps x 730 h x 3600 s / 8 bits / 1000 (decimal GB)."""
    return (Decimal(str(mbps)) * HOURS_PER_MONTH * 3600 / 8 / 1000).quantize(Decimal("0.01"))


def traffic_bound(mbps) -> tuple[Decimal | None, str]:
    """(bound, how) for outbound traffic through a link whose bandwidth the program caps (the vendor enforces it)."""
    if not mbps:
        return None, ""
    gb, cap = bandwidth_cap_gb(mbps), format(Decimal(str(mbps)).normalize(), "f")
    return gb, f"at most {gb} GB: the declared {cap} Mbps cap used all month"


# --- usage keys every cloud's pricing reads, each declared next to what it prices (a cloud's own keys: the USAGE of its
# pricing module). A usage file sets them; null (the default) is unknown: the line shows its unit price, or the key's
# `unknown` assumption is priced and stated.

REPLICAS_AVERAGE = UsageKey(
    "replicas_average",
    "average running GPU nodes over the month; null = the scaling group's desired capacity, weighted over the week by "
    "the fleet's autoscaling schedules (cost/estimate.py fleet_average)",
)


class UsageProfile(Protocol):
    """What a pricing function reads of the usage profile (cost/usage.py Usage, which knows the keys declared here):
    a declared key's value by name, as an attribute or with get(); None is unknown."""

    def get(self, key: str) -> Decimal | None: ...

    def __getattr__(self, name: str) -> Decimal | None: ...


class PricingContext(Struct):
    cloud: str
    region: str
    usage: UsageProfile
    replicas_average: Decimal  # average running GPU nodes of the whole fleet
    resources: list[dict]
    notes: list[str] = field(default_factory=list)
    # A rollout's serving groups: (logical prefix of the group's resources, its average nodes), the fleet's group first;
    # empty: one serving group runs replicas_average (cost/estimate.py group_averages)
    groups: tuple[tuple[str, Decimal], ...] = ()

    def of_type(self, token: str) -> list[dict]:
        return [r for r in self.resources if r["type"] == token]


def shown_nodes(n: Decimal) -> Decimal:
    """An average node count as printed: at most 4 decimals. Only for text: prices use the exact average (the week's
    466/168 = 2.773809... nodes, not 2.7738, whose 0.0071 h a month short was 7 cents of a 9.53 CNY/h line)."""
    return n if n == n.quantize(Decimal("0.0001")) else n.quantize(Decimal("0.0001"))


def d(x, default: str = "0") -> Decimal:
    return Decimal(str(x if x is not None else default))


def qty(value: Decimal | None) -> Decimal | None:
    return None if value is None else Decimal(value)


# --- shared pieces -----------------------------------------------------------------------------


Disk = tuple[str, str | None, int, str]  # (category, performance level, GiB, catalog price key)


def node_components(
    kind: str,
    itype: str,
    billing: str,
    nodes: Decimal,
    disks: list[Disk],
    cap: Decimal | None = None,
    note: str = "",
    pool: tuple[str, ...] = (),
    term_months: int = 0,
) -> list[CostComponent]:
    """GPU nodes and their disks. nodes: average count; payg/spot quantities in hours, subscription in months. pool:
    the instance types the nodes are spread over evenly (a spot pool; default itype alone), one line each; the disks
    are the same whatever the type. term_months: a subscription's declared term (its instance and disks are bought
    for it)."""
    hours = billing in ("payg", "spot")
    qty = nodes * HOURS_PER_MONTH if hours else nodes
    term = 0 if hours else term_months
    types = pool or (itype,)
    out = [  # a reclaimed spot node of any pool is replaced by itype, the cheapest on demand (ESS's default per-instance price)
        CostComponent(
            f"{kind} {t} ({billing})",
            qty / len(types),
            f"instance/{t}",
            billing,
            COMPUTE,
            note,
            cap,
            replaced_by=f"instance/{itype}",
            term_months=term,
        )
        for t in types
    ]
    disk_billing = "payg" if hours else billing
    for label, (category, level, size, key) in zip(_disk_labels(len(disks)), disks):
        per_node = Decimal(size) * (HOURS_PER_MONTH if hours else 1)
        out.append(
            CostComponent(
                f"{label} {category}{'/' + level if level else ''} {size} GiB",
                nodes * per_node,
                key,
                disk_billing,
                "disk",
                term_months=term,
            )
        )
    return out


def _disk_labels(n: int) -> list[str]:
    return ["system disk"] + [f"data disk {i}" for i in range(1, n)]


def asg_share(ctx: PricingContext, group_token: str, group: dict | None, baseline: int) -> tuple[Decimal, str]:
    """Average nodes the autoscaler runs for this group: the fleet average minus baseline subscription
    instances, split across groups by desired capacity."""
    groups = ctx.of_type(group_token)
    total = max(Decimal(0), ctx.replicas_average - baseline)
    if group is not None and ctx.groups:
        # a rollout: each serving group runs its own average (the subscription baseline belongs to the fleet's group)
        for i, (prefix, average) in enumerate(ctx.groups):
            if group["name"].startswith(prefix + "-"):
                groups = [g for g in groups if g["name"].startswith(prefix + "-")]
                total = max(Decimal(0), average - (baseline if i == 0 else 0))
                break
    if not groups or group is None:
        return total, ""
    weights = [d(g["inputs"].get("desiredCapacity"), "0") for g in groups]
    if sum(weights) == 0:
        share = total / len(groups)
    else:
        share = total * d(group["inputs"].get("desiredCapacity"), "0") / sum(weights)
    return (
        share,
        f"{share.quantize(Decimal('0.0001'))} average nodes = (fleet average {shown_nodes(ctx.replicas_average)} - {baseline} "
        "subscription nodes)",
    )


def group_for(ctx: PricingContext, cfg: dict, group_token: str, id_field: str) -> dict | None:
    groups = ctx.of_type(group_token)
    ref = cfg["inputs"].get(id_field)
    for g in groups:
        if ref is not None and ref in (g.get("id"), f"{g['name']}_id", g["name"]):
            return g
    for g in groups:
        if cfg.get("parent") and cfg.get("parent") == g.get("parent"):
            return g
    return groups[0] if len(groups) == 1 else None


LB_LCU_HOURS = UsageKey("lb_lcu_hours", "load balancer capacity units used per month")
LB_EGRESS_GB = UsageKey(
    "lb_egress_gb",
    "public traffic out of the load balancer per month (responses to clients), GB",
    lever="load balancer egress (GB a month)",
)
# Read by each cloud's NAT gateway / EIP pricing (components/<cloud>/pricing.py): every cloud's fleet egresses through NAT.
NAT_EGRESS_GB = UsageKey(
    "nat_egress_gb",
    "traffic out through the NAT gateway's EIP per month (nodes fetching packages, APIs), GB",
    lever="NAT egress through the EIP (GB a month)",
)


def clb_components(public: bool, ctx: PricingContext) -> list[CostComponent]:
    """A classic load balancer: instance fee, LCUs from usage, public traffic out when internet-facing."""
    out = [
        CostComponent("CLB instance fee", HOURS_PER_MONTH, "clb/instance", "any", "load_balancer"),
        CostComponent(
            "CLB capacity units (LCU)", qty(ctx.usage.lb_lcu_hours), "clb/lcu", "any", "load_balancer", "usage lb_lcu_hours"
        ),
    ]
    if public:
        out.append(
            CostComponent(
                "CLB public traffic out", qty(ctx.usage.lb_egress_gb), "clb/traffic", "any", "bandwidth", "usage lb_egress_gb"
            )
        )
    return out


def _same(action: str) -> str:
    return action


def policy_actions(document, spelled: Callable[[str], str] = _same) -> set[str]:
    """The actions a policy document grants (JSON text or a mapping), each as `spelled` writes it: the cloud's pricing
    module passes how its policy language spells an action in the `service:Action` form (e.g. without a prefix)."""

    doc = document
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError:
            return set()
    if not isinstance(doc, dict):
        return set()
    out: set[str] = set()
    for st in doc.get("Statement") or doc.get("statement") or []:
        acts = st.get("Action") or st.get("action") or []
        for a in [acts] if isinstance(acts, str) else acts:
            out.add(spelled(str(a)))
    return out


IMAGE_SNAPSHOT_GB = UsageKey(
    "image_snapshot_gb",
    "GB of the golden image's snapshot in the stack's region (a snapshot is billed on the data it holds)",
    unknown="unknown; the node's system disk size is priced (an upper bound)",
)


def image_snapshot(res: dict, ctx: PricingContext, image_field: str, disk_gib: int, key: str) -> list[CostComponent]:
    """The golden image's snapshot storage in this region: one bill for every stack using the image (shared)."""
    image = res["inputs"].get(image_field)
    if not image:
        return []
    # one snapshot per image: a second configuration booting it (a spot fleet's on-demand base group, a rollout's
    # candidate on the fleet's image) stores no second copy; it is priced at the first configuration using the image
    first = next((r for r in ctx.of_type(res["type"]) if r["inputs"].get(image_field) == image), res)
    if first.get("name") != res.get("name"):
        return []
    gb, note = ctx.usage.image_snapshot_gb, "usage image_snapshot_gb"
    if gb is None:
        gb, note = Decimal(disk_gib), f"usage image_snapshot_gb unknown: the {disk_gib} GiB system disk, an upper bound"
    return [CostComponent(f"image snapshot {image} ({ctx.region})", Decimal(gb), key, "any", "disk", note, shared=True)]


def policy_resource(document, action: str, spelled: Callable[[str], str] = _same) -> str:
    """The first resource a policy document grants `action` on ("" when none): what a shared line is (`spelled`: as in
    policy_actions)."""

    doc = document
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError:
            return ""
    for st in (doc or {}).get("Statement") or (doc or {}).get("statement") or []:
        acts = st.get("Action") or st.get("action") or []
        acts = [acts] if isinstance(acts, str) else acts
        if action in [spelled(str(a)) for a in acts]:
            res = st.get("Resource") or st.get("resource") or []
            res = [res] if isinstance(res, str) else res
            return str(res[0]) if res else ""
    return ""


def bucket_name(arn: str) -> str:
    """A bucket resource whose last `:` field is BUCKET/<objects> (e.g. `acs:oss:*:*:BUCKET/*`) -> BUCKET."""
    return arn.rsplit(":", 1)[-1].split("/", 1)[0]


MODEL_BUCKET_GB = UsageKey(
    "model_bucket_gb",
    "GB stored in the model bucket the nodes read the weights from; shared by the stacks that read it (counted once by "
    "`cost report --all`)",
)


def model_bucket(ctx: PricingContext, service: str, key: str, bucket: str = "") -> CostComponent:
    """The model weights' bucket storage (e.g. "OSS standard", "oss/standard"): one bill for the stacks reading it."""
    return CostComponent(
        f"model bucket storage ({service})",
        qty(ctx.usage.model_bucket_gb),
        key,
        "any",
        "other",
        "usage model_bucket_gb",
        shared=True,
        shared_id=bucket,
    )


# The usage keys every cloud's pricing reads, in the order reports list them (cost/data/usage-defaults.yaml names them).
USAGE = (REPLICAS_AVERAGE, LB_EGRESS_GB, NAT_EGRESS_GB, LB_LCU_HOURS, MODEL_BUCKET_GB, IMAGE_SNAPSHOT_GB)


# --- which function prices a type: asked of the cloud's pricing module ------------------------------------

NEUTRAL_FREE_PREFIXES: dict[str, str] = {
    "gpufleet:": "component: a grouping of the resources below it",
    "pulumi:providers:": "Pulumi provider: not a cloud resource",
    "pulumi:pulumi:": "Pulumi stack: not a cloud resource",
}


def _pricing(cloud: str):
    return registry.module(cloud, "pricing")


def cost_function(cloud: str, token: str) -> Callable[[dict, PricingContext], list[CostComponent]] | None:
    return _pricing(cloud).PRICED.get(token)


def free_reason(cloud: str, token: str) -> str | None:
    pricing = _pricing(cloud)
    if token in pricing.FREE:
        return pricing.FREE[token]
    prefixes = {**NEUTRAL_FREE_PREFIXES, **pricing.FREE_PREFIXES}
    return next((why for prefix, why in prefixes.items() if token.startswith(prefix)), None)


def is_covered(cloud: str, token: str) -> bool:
    return cost_function(cloud, token) is not None or free_reason(cloud, token) is not None
