"""`cost compare`: the same fleet re-declared for another cloud and billing model.

Each option is a modified spec dict (cloud, region, zones, instance type, billing) validated once by the
same loader (gpufleet.plan.for_spec), declared once by the same program and priced by the same functions.
"""

from __future__ import annotations

import copy
import math
from decimal import Decimal

from msgspec import Struct

from gpufleet import plan as plans
from gpufleet.cost import catalog as pricecat
from gpufleet.cost import estimate
from gpufleet.cost.decision import decide, label
from gpufleet.cost.estimate import Estimate, amount
from gpufleet.cost.usage import Usage
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.registry import profile
from gpufleet.stacks import catalog as stackcat
from gpufleet.stacks import loader

BILLINGS = ("payg", "monthly", "yearly", "spot")
EARTH_RADIUS_KM = 6371.0


def distance_km(a: stackcat.Location, b: stackcat.Location) -> float:
    """Great-circle distance (haversine) between two region locations."""
    la1, lo1, la2, lo2 = map(math.radians, (a.lat, a.lon, b.lat, b.lon))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(h))


def region_for(cloud: str, region: str, other: str) -> tuple[str | None, str]:
    """The region of `other` for a fleet in `cloud`'s `region`, derived from each cloud's own region locations (its
    catalog): one in the same city, else the nearest. (None, why) when a location is missing."""
    here = stackcat.locations(cloud).get(region)
    theirs = stackcat.locations(other)
    if here is None or not theirs:
        return None, f"no {other} region mapped for {region} (a region location is missing from the clouds' catalogs)"
    same = sorted(r for r, loc in theirs.items() if loc.city == here.city)
    if same:
        return same[0], "same city"
    km = {r: distance_km(here, loc) for r, loc in theirs.items()}
    best = min(sorted(km), key=km.__getitem__)
    others = ", ".join(
        f"{here.city}-{theirs[r].city} about {5 * round(km[r] / 5):.0f} km" for r in sorted(km, key=km.__getitem__)
    )
    return best, f"{other} has no {here.city} region; nearest: {others}"


def gpu_for(cloud: str, kind: str) -> tuple[str | None, str]:
    """The GPU kind `cloud` sells for `kind`: itself, else the kind of the same architecture with the least memory
    that is at least as much (stacks/data/gpus.yaml); (None, why) when it sells neither."""
    sold = {t.gpu for t in stackcat.instance_types(cloud)}
    if kind in sold:
        return kind, ""
    kinds = stackcat.gpu_kinds()
    want = kinds.get(kind)
    cands = (
        []
        if want is None
        else [
            k
            for k in sold
            if k in kinds and kinds[k].architecture == want.architecture and kinds[k].memory_gib >= want.memory_gib
        ]
    )
    if want is None or not cands:
        return None, f"{cloud} sells no {kind} (nor an equivalent with at least its memory)"
    other = min(cands, key=lambda k: (kinds[k].memory_gib, k))
    return other, (
        f"GPU {kind} -> {other}: {cloud} sells no {kind}; {other} is {want.architecture} too, "
        f"with {kinds[other].memory_gib} GB against {want.memory_gib}"
    )


class Option(Struct):
    cloud: str
    region: str
    instance_type: str | None
    billing: str
    mapping: list[str]  # how the option was derived from the stack ("cn-hangzhou -> ap-shanghai: ...")
    estimate: Estimate | None = None
    problem: str = ""
    current: bool = False  # the stack as declared: its own cloud, region and billing model


def _instance_for(cloud: str, gpu: str, count: int, like: stackcat.InstanceType) -> stackcat.InstanceType | None:
    """Same GPU kind and count; nearest in vCPU then memory to the stack's type."""
    cands = [t for t in stackcat.instance_types(cloud) if t.gpu == gpu and t.gpus == count]
    return min(cands, key=lambda t: (abs(t.vcpu - like.vcpu), abs(t.memory_gib - like.memory_gib)), default=None)


def spot_base(spec, billing: str) -> int:
    """The on-demand base a re-declared option gets: prod keeps replicas.min on demand under spot nodes
    (stacks/loader.py cross_problems, issue 18); otherwise none."""
    return spec.replicas.min if billing == "spot" and spec.environment == "prod" else 0


def redeclare(raw: dict, fleet: loader.Fleet, cloud: str, billing: str) -> tuple[dict | None, list[str], str, str | None]:
    """The stack's spec for `cloud` and `billing`: (spec dict or None, mapping notes, region, instance type)."""
    spec = fleet.spec
    new = copy.deepcopy(raw)
    notes: list[str] = []
    region = spec.region
    if cloud != spec.cloud:
        mapped, why = region_for(spec.cloud, spec.region, cloud)
        if mapped is None:
            return None, [why], "", None
        region = mapped
        notes.append(f"region {spec.region} -> {region}: {why}")
    gpu, why = gpu_for(cloud, spec.gpu.kind)
    if gpu is None:
        return None, notes + [why], region, None
    if why:
        notes.append(why)
    itype = _instance_for(cloud, gpu, spec.gpu.count, fleet.instance_type)
    if itype is None:
        return None, notes + [f"{cloud} has no {spec.gpu.count}x {gpu} instance"], region, None
    if itype.type != fleet.instance_type.type:
        notes.append(
            f"instance {fleet.instance_type.type} ({fleet.instance_type.vcpu} vCPU, {fleet.instance_type.memory_gib} GiB) -> "
            f"{itype.type} ({itype.vcpu} vCPU, {itype.memory_gib} GiB), same GPUs, nearest vCPU/memory"
        )
    zones_all = stackcat.regions(cloud)[region]
    if cloud != spec.cloud:
        selling = [z for z, kinds in zones_all.items() if gpu in kinds]
        if len(selling) < len(spec.zones):
            return (
                None,
                notes + [f"{region} has {len(selling)} zones selling {gpu}; the fleet spans {len(spec.zones)}"],
                region,
                itype.type,
            )
        new["zones"] = selling[: len(spec.zones)]
        notes.append(f"zones {', '.join(spec.zones)} -> {', '.join(new['zones'])}")
    new["cloud"], new["region"] = cloud, region
    own, other = profile(spec.cloud).object_scheme, profile(cloud).object_scheme

    def moved(source: str) -> str:
        """The same archive in the other cloud's object storage."""
        if cloud == spec.cloud or not source.startswith(f"{own}://"):
            return source
        bucket, _, key = source[len(own) + 3 :].partition("/")
        bucket = bucket.removesuffix(profile(spec.cloud).example_bucket_suffix) + profile(cloud).example_bucket_suffix
        return f"{other}://{bucket}/{key}"

    source = spec.model.source
    if moved(source) != source:
        new["model"] = {**raw["model"], "source": moved(source)}
        notes.append(f"model source {source} -> {new['model']['source']} (the same archive in {cloud}'s object storage)")
    new["gpu"] = {**raw.get("gpu", {}), "kind": gpu, "instance_type": itype.type}
    if spec.rollout is not None and isinstance(raw.get("rollout"), dict):  # a rollout's candidate moves along
        cand = dict(raw["rollout"].get("candidate") or {})
        cand["model"] = {**cand.get("model", {}), "source": moved(spec.rollout.candidate.model.source)}
        if spec.rollout.candidate.gpu is not None:
            kind, _ = gpu_for(cloud, spec.rollout.candidate.gpu.kind)
            cand["gpu"] = {"kind": kind or spec.rollout.candidate.gpu.kind, "count": spec.rollout.candidate.gpu.count}
        new["rollout"] = {**raw["rollout"], "candidate": cand}
    if billing != spec.billing.model:
        notes.append(
            f"billing {spec.billing.model} -> {billing}"
            + {"monthly": " (1-month subscription)", "yearly": " (1-year subscription)", "spot": " (interruptible)"}.get(
                billing, ""
            )
        )
    b: dict[str, str | int] = {"model": billing}
    if billing in ("monthly", "yearly"):
        b["period_months"] = 1 if billing == "monthly" else pricecat.YEARLY_TERM_MONTHS
        declared = spec.billing.period_months if billing == spec.billing.model else None
        if declared and declared != b["period_months"] and cloud == spec.cloud:
            b["period_months"] = declared  # the stack as declared keeps its own term (priced only where a row prices it)
        elif declared and (unpriced := pricecat.term_not_priced(billing, declared)):
            notes.append(f"billing {billing}: a 1-year subscription, not the stack's {declared}-month term ({unpriced})")
        if unpriced := pricecat.term_not_priced(billing, int(b["period_months"])):
            notes.append(f"billing {billing}, period_months {b['period_months']} as the stack declares it: {unpriced}")
    elif spot_base(spec, billing):
        b["on_demand_base"] = spot_base(spec, billing)
        notes.append(f"spot with an on-demand base of {spec.replicas.min} pay-as-you-go nodes (replicas.min)")
    new["billing"] = b
    return new, notes, region, itype.type


def compare(
    stack: str, clouds: list[str], billings: list[str], usage: Usage, discounts: list[estimate.Discount] | None = None
) -> list[Option]:
    problems = [
        Problem("--clouds", "", f"unknown cloud {c!r}" + did_you_mean(c, stackcat.clouds()))
        for c in clouds
        if c not in stackcat.clouds()
    ]
    problems += [
        Problem("--billing", "", f"unknown billing {b!r}" + did_you_mean(b, BILLINGS)) for b in billings if b not in BILLINGS
    ]
    if problems:
        raise UserError(problems)
    # each option once: `--billing payg,payg` priced the same option twice and ranked it as its own runner-up
    clouds, billings = list(dict.fromkeys(clouds)), list(dict.fromkeys(billings))

    base = plans.for_stack(stack)
    fleet, raw, shown = base.fleet, base.raw, base.fleet.file
    out: list[Option] = []
    for cloud in clouds:
        for billing in billings:
            new, notes, region, itype = redeclare(raw, fleet, cloud, billing)
            opt = Option(cloud, region, itype, billing, notes)
            opt.current = (cloud, region, billing) == (fleet.spec.cloud, fleet.spec.region, fleet.spec.billing.model)
            if new is None:
                opt.problem = "; ".join(notes)
                out.append(opt)
                continue
            try:
                option = plans.for_spec(new, stack, file=shown + f" (as {cloud} {region} {billing})")
                opt_fleet, resources = option.fleet, option.resources
            except UserError as exc:
                opt.problem = "; ".join(str(p) for p in exc.problems)
                out.append(opt)
                continue
            except Exception as exc:  # the program failed for this option: report it on its row, keep the others
                opt.problem = f"preview failed: {type(exc).__name__}: {exc}"
                out.append(opt)
                continue
            opt.estimate = estimate.price_inventory(
                stack, opt_fleet.spec, opt_fleet.instance_type.type, resources, usage, discounts
            )
            out.append(opt)
    return out


class Rank(Struct, frozen=True):
    rank: int | None  # 1 = cheapest; None = not ranked
    why: str  # why not ranked ("overlaps X, Y"), else ""


def _same_unknown(l) -> tuple:
    return (l.price_key, l.billing, l.monthly_quantity, l.unit_price, l.category)


def _span(e: Estimate, drop: set[tuple]) -> tuple[Decimal, Decimal | None]:
    """What the total can be, leaving out the unpriced lines in `drop`: the sourced spread of the priced part, with
    no upper bound when another line is unpriced."""

    t = amount([l for l in e.lines if l.monthly_cost is not None or _same_unknown(l) not in drop])
    return t.low, (t.high if t.complete else None)


def _uncertain(a: Option, b: Option) -> bool:
    """Whether the order of a and b's totals could go either way. An unpriced line both share (same cloud, region,
    price row and quantity) adds the same unknown to both and is left out of the comparison."""
    ea, eb = a.estimate, b.estimate
    assert ea is not None and eb is not None
    common = (
        {_same_unknown(l) for l in ea.unpriced} & {_same_unknown(l) for l in eb.unpriced}
        if (ea.cloud, ea.region) == (eb.cloud, eb.region)
        else set()
    )
    x, y = _span(ea, common), _span(eb, common)
    return (y[1] is None or x[0] <= y[1]) and (x[1] is None or y[0] <= x[1])


def _cheaper(a: Option, b: Option) -> bool:
    """a's total is certainly below b's (only asked when the two are not uncertain)."""
    assert a.estimate is not None and b.estimate is not None
    return a.estimate.total.low < b.estimate.total.low


def _names(options: list[Option]) -> str:
    """`alicloud cn-hangzhou monthly/spot, tencentcloud ap-shanghai payg`: the options, grouped by where."""
    where: dict[str, list[str]] = {}
    for o in options:
        where.setdefault(f"{o.cloud} {o.region}", []).append(o.billing)
    return ", ".join(f"{w} {'/'.join(bs)}" for w, bs in where.items())


def rank(options: list[Option]) -> list[Rank]:
    """Rank the options by monthly total only where the order is certain.

    Each option's total is an interval: the sourced spread of its prices, open above when a line is unpriced (the
    total is then only a lower bound). Two options whose intervals overlap are not ranked (the order could go either
    way), so an option with unpriced lines is never ranked above a complete one on a partial total. A ranked option's
    rank is 1 + the options certainly cheaper than it. Totals in different currencies are not ranked.
    """
    priced = [o for o in options if o.estimate is not None]
    if len({o.estimate.currency for o in priced if o.estimate}) > 1:
        return [Rank(None, "currencies differ" if o.estimate else "no estimate") for o in options]
    out = []
    for o in options:
        if o.estimate is None:
            out.append(Rank(None, "no estimate"))
            continue
        others = [p for p in priced if p is not o]
        over = [p for p in others if _uncertain(o, p)]
        if over:
            out.append(Rank(None, f"overlaps {_names(over)}: not ranked"))
        else:
            out.append(Rank(1 + sum(1 for p in others if _cheaper(p, o)), ""))
    return out


def as_json(stack: str, options: list[Option]) -> dict:
    currencies = sorted({o.estimate.currency for o in options if o.estimate})
    decision = decide(options)
    ranks = {r.label: r for r in decision.rows}
    rows = []
    for o, r in zip(options, rank(options)):
        e = o.estimate
        t = e.total if e else None
        dr = ranks.get(label(o))
        vs = dr.versus_current if dr else None
        rows.append(
            {
                "current": o.current,
                "decision_rank": dr.rank if dr else None,
                "versus_current": {
                    "margin": str(vs.margin),
                    "low": str(vs.margin_low),
                    "high": str(vs.margin_high),
                    "confidence": vs.confidence,
                    "cancelled_lines": vs.cancelled,
                    "not_compared": list(vs.not_compared),
                    "bounded": list(vs.bounded),
                }
                if vs
                else None,
                "cloud": o.cloud,
                "region": o.region,
                "instance_type": o.instance_type,
                "billing": o.billing,
                "monthly_total": str(t.value) if t else None,
                "complete": t.complete if t else None,
                "range": {"low": str(t.low), "high": str(t.high) if t.complete else None} if t else None,
                "oldest_as_of": e.oldest_as_of if e else None,
                "rank": r.rank,
                "not_ranked": r.why or None if e else None,
                "by_category": {k: a.as_json() for k, a in e.categories.items()} if e else None,
                "overhead_share": str(e.overhead_share) if e and e.overhead_share is not None else None,
                "scenarios": {k: str(s.total.value) for k, s in e.scenarios.items()} if e else None,
                "unpriced": [f"{l.resource_name}: {l.component}" for l in e.unpriced] if e else None,
                "unpriced_lines": len(e.unpriced) if e else None,
                "estimated_lines": len(e.estimated) if e else None,
                "equivalence": o.mapping,
                "problem": o.problem or None,
            }
        )
    ests = [o.estimate for o in options if o.estimate]
    return {
        "stack": stack,
        "currency": currencies[0] if len(currencies) == 1 else currencies,
        "catalog_as_of": min((e.catalog_as_of for e in ests), default=None),
        "oldest_as_of": min((e.oldest_as_of for e in ests if e.oldest_as_of), default=None),
        "assumptions": ests[0].assumptions if ests else [],
        "decision": decision.as_json(),
        "rows": rows,
    }
