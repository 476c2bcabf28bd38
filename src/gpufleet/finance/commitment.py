"""`cost commit`: which nodes to subscribe (monthly / yearly) and which to leave pay-as-you-go or spot.

From the fleet's weekly schedules (the same week `usage.schedule_average` weighs), how many hours a month each node
runs: node 1 is the one that runs most; node k runs whenever the schedules ask for at least k nodes. A node is worth
a subscription when its utilisation (hours / 730) is above the break-even

    break-even utilisation = subscription price per month / (hourly price of the alternative x 730)

where the alternative is pay-as-you-go (spot for a spot fleet). Each node takes the cheapest of the alternative, a
monthly and a yearly subscription; the subscribed nodes are the first k (utilisation falls with k). A yearly term is
paid up front: 12 x its monthly price per node. Instance prices only: a node's disks cost about the same either way.

The spec has one billing model per stack: a subscription model subscribes `replicas.min` nodes (components/<cloud>/
scaling.py, `_subscription_baseline`) and the autoscaler's nodes above them are pay-as-you-go. So "k nodes yearly,
the rest pay-as-you-go" is `billing: {model: yearly, period_months: 12}` with `replicas.min: k`; subscribed nodes with
spot above them cannot be said in one stack (the plan says so and suggests the split).
"""

from __future__ import annotations

import copy
from decimal import Decimal

import msgspec
from msgspec import Struct, field

from gpufleet import clock
from gpufleet import plan as plans
from gpufleet.cost import catalog as pricecat
from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.estimate import break_even_utilisation, money, row_spread_and_staleness
from gpufleet.cost.usage import WEEK_MIN, cron_week_minutes
from gpufleet.errors import Problem, UserError
from gpufleet.stacks import loader

RATIO = Decimal("0.0001")


class Prices(Struct, frozen=True):
    """Per node of the stack's instance type: hourly pay-as-you-go and spot, monthly subscription, yearly per month."""

    payg_hourly: Decimal
    monthly: Decimal | None
    yearly_per_month: Decimal | None
    spot_hourly: Decimal | None = None
    currency: str = "CNY"
    sources: dict[str, str] = field(default_factory=dict)  # billing -> "quality, source, as_of"
    spreads: dict[str, tuple[Decimal, Decimal]] = field(default_factory=dict)  # billing -> sourced (low, high)


class Node(Struct, frozen=True):
    index: int  # 1 = the node that runs most
    hours: Decimal  # a month
    utilisation: Decimal
    choice: str  # yearly | monthly | payg | spot
    cost: Decimal  # a month, of the choice
    rest_cost: Decimal  # a month, left pay-as-you-go (or spot)


class Plan(Struct):
    stack: str
    instance_type: str
    prices: Prices
    rest: str  # payg | spot: what the nodes not subscribed are billed as
    profile: list[tuple[int, Decimal]]  # (nodes running, hours a month at that count)
    nodes: list[Node]
    break_even: dict[str, Decimal]  # monthly / yearly -> utilisation
    notes: list[str]
    billing_block: dict | None = None  # a valid `billing:` (with the replicas/schedules it needs), when expressible
    spec_changes: dict = field(default_factory=dict)
    cannot: list[str] = field(default_factory=list)
    term_change: str = ""  # the stack's own term has no price: the plan is for a 1-year term, not the stack's

    @property
    def subscribed(self) -> list[Node]:
        return [n for n in self.nodes if n.choice in ("monthly", "yearly")]

    @property
    def term(self) -> str | None:
        terms = {n.choice for n in self.subscribed}
        return terms.pop() if len(terms) == 1 else ("mixed" if terms else None)

    @property
    def monthly_cost(self) -> Decimal:
        return money(sum((n.cost for n in self.nodes), Decimal(0)))

    @property
    def monthly_cost_without(self) -> Decimal:
        """Every scheduled node left pay-as-you-go (or spot)."""
        return money(sum((n.rest_cost for n in self.nodes), Decimal(0)))

    @property
    def upfront(self) -> Decimal:
        """Cash paid when a yearly term is bought: 12 months of each yearly node (the 1-year term the catalog prices)."""
        y = self.prices.yearly_per_month
        n = sum(1 for x in self.subscribed if x.choice == "yearly")
        return money(pricecat.YEARLY_TERM_MONTHS * n * y) if y is not None and n else Decimal("0.00")


def week_profile(spec) -> list[tuple[int, Decimal]]:
    """(nodes, hours a month) the schedules run: each schedule sets the count (desired, else min) when it fires."""
    if not spec.autoscaling.schedules:
        return [(spec.replicas.desired_or_min, HOURS_PER_MONTH)]
    events: list[tuple[int, int]] = []
    for i, s in enumerate(spec.autoscaling.schedules):
        minutes = cron_week_minutes(s.cron)
        if minutes is None:
            raise UserError(
                [
                    Problem(
                        "stack",
                        f"autoscaling.schedules.{i}.cron",
                        f"{s.cron!r} depends on the date; the planner needs schedules that repeat each week",
                    )
                ]
            )
        events += [(m, s.desired if s.desired is not None else s.min) for m in minutes]
    events.sort()
    minutes_at: dict[int, int] = {}
    for i, (m, count) in enumerate(events):
        nxt = events[i + 1][0] if i + 1 < len(events) else events[0][0] + WEEK_MIN
        minutes_at[count] = minutes_at.get(count, 0) + (nxt - m)
    return [(n, Decimal(mins) * HOURS_PER_MONTH / WEEK_MIN) for n, mins in sorted(minutes_at.items())]


def plan_nodes(
    profile: list[tuple[int, Decimal]], prices: Prices, rest: str, base: int = 0
) -> tuple[list[Node], dict[str, Decimal]]:
    """Per node k (1 = the one that runs most): its hours, and the cheapest of its alternative and a subscription.
    The first `base` nodes of a spot fleet are its on-demand base: their alternative is pay-as-you-go."""
    hourly = prices.spot_hourly if rest == "spot" and prices.spot_hourly is not None else prices.payg_hourly
    terms = {"monthly": prices.monthly, "yearly": prices.yearly_per_month}
    # an hourly price of 0 has no break-even (no subscription beats it): the term is left out
    break_even = {t: u for t, p in terms.items() if p is not None and (u := break_even_utilisation(p, hourly)) is not None}
    top = max((n for n, _ in profile), default=0)
    nodes = []
    for k in range(1, top + 1):
        hours = sum((h for n, h in profile if n >= k), Decimal(0))
        u = hours / HOURS_PER_MONTH
        own_rest, own_hourly = ("payg", prices.payg_hourly) if k <= base else (rest, hourly)
        rest_cost = money(hours * own_hourly)
        choice, cost = own_rest, rest_cost
        for t in ("yearly", "monthly"):  # the cheapest; a tie stays uncommitted
            p = terms[t]
            if p is not None and money(p) < cost:
                choice, cost = t, money(p)
        nodes.append(Node(k, hours.quantize(Decimal("0.01")), u.quantize(RATIO), choice, cost, rest_cost))
    return nodes, break_even


def catalog_prices(cloud: str, region: str, instance_type: str, data=None) -> Prices:
    cat = pricecat.load(cloud, region, data)
    key = f"instance/{instance_type}"
    rows = {b: cat.get(key, b) for b in ("payg", "monthly", "yearly", "spot")}
    payg = rows["payg"]
    if payg is None or payg.price is None:
        raise UserError(
            [
                Problem(
                    f"cost/data/{cloud}-{region}.yaml",
                    key,
                    "no pay-as-you-go price: the planner cannot weigh a subscription against it (add the row: catalog refresh)",
                )
            ]
        )
    return Prices(
        payg.price,
        rows["monthly"].price if rows["monthly"] else None,
        rows["yearly"].price if rows["yearly"] else None,
        rows["spot"].price if rows["spot"] else None,
        cat.currency,
        {b: f"{r.quality}, {r.source}, {r.as_of}" for b, r in rows.items() if r is not None and r.price is not None},
        {b: spread for b, r in rows.items() if r is not None and r.price is not None and (spread := _spread(r)) is not None},
    )


def _spread(row: pricecat.PriceRow) -> tuple[Decimal, Decimal] | None:
    low, high, _ = row_spread_and_staleness(row, clock.now().date())
    return None if low is None or high is None or low == high == row.price else (low, high)


def break_even_spread(prices: Prices, rest: str) -> dict[str, tuple[Decimal, Decimal | None]]:
    """The break-even utilisation at the ends of the sourced spreads: (cheapest subscription vs dearest hourly,
    dearest subscription vs cheapest hourly). Empty when no price involved states a spread. The high end is None when
    the cheapest hourly price is 0 (the subscription never beats it: break_even_utilisation); a term whose hourly
    price is 0 at both ends has no break-even and is left out."""
    if not prices.spreads:
        return {}
    hourly = prices.spot_hourly if rest == "spot" and prices.spot_hourly is not None else prices.payg_hourly
    h_lo, h_hi = prices.spreads.get(rest, (hourly, hourly))
    out = {}
    for term, price in (("monthly", prices.monthly), ("yearly", prices.yearly_per_month)):
        if price is None:
            continue
        lo, hi = prices.spreads.get(term, (price, price))
        low_end = break_even_utilisation(lo, h_hi)
        if low_end is not None:
            out[term] = (low_end, break_even_utilisation(hi, h_lo))
    return out


def _share(u: Decimal | None) -> str:
    return "never" if u is None else f"{u:.1%}"


def make_plan(stack: str, spec, raw: dict, instance_type: str, prices: Prices, file: str = "stack") -> Plan:
    rest = "spot" if spec.billing.model == "spot" else "payg"
    profile = week_profile(spec)
    nodes, be = plan_nodes(profile, prices, rest, spec.billing.on_demand_base or 0 if rest == "spot" else 0)
    notes = [
        "hours come from the schedules (autoscaling.schedules, UTC, a week repeated; 730 hours a month)",
        "nodes the autoscaler adds on load above the schedules run for hours nobody knows: they stay "
        + ("spot" if rest == "spot" else "pay-as-you-go"),
        "instance prices only: a subscribed node's disks are billed with it at about the same monthly amount",
    ]
    if rest == "spot":
        notes.append("the fleet is spot: subscriptions are weighed against the spot price, which can rise or be reclaimed")
    spreads = break_even_spread(prices, rest)
    for term, (lo, hi) in spreads.items():
        if lo == hi:
            continue
        notes.append(f"{term} break-even within the prices' sourced spreads: {lo:.1%}–{_share(hi)}")
        torn = [n.index for n in nodes if lo <= n.utilisation and (hi is None or n.utilisation <= hi)]
        if torn:
            notes.append(
                f"node(s) {', '.join(map(str, torn))}: the {term} choice depends on where the prices lie in their spread"
            )
    # issue 29: subscribe a node only when it runs above the break-even under the whole sourced range (the subscription
    # is cheaper even at the dearest subscription and the cheapest hourly price); otherwise it stays as it is
    kept = []
    for i, n in enumerate(nodes):
        if n.choice not in ("monthly", "yearly"):
            continue
        top = spreads.get(n.choice, (Decimal(0), Decimal(0)))[1]  # None: never (the cheapest hourly price is 0)
        if top is None or n.utilisation <= top:
            own_rest = "payg" if rest == "spot" and n.index <= (spec.billing.on_demand_base or 0) else rest
            nodes[i] = msgspec.structs.replace(n, choice=own_rest, cost=n.rest_cost)
            kept.append(f"{n.index} ({n.utilisation:.1%} <= {_share(top)})")
    if kept:
        notes.append(
            f"node(s) {', '.join(kept)}: not subscribed: the break-even's high end under the prices' sourced range is "
            f"above their utilisation, so the subscription is not cheaper under the whole range; they stay {rest}"
        )
    p = Plan(stack, instance_type, prices, rest, profile, nodes, be, notes, term_change=term_change(spec))
    _express(p, spec, raw, file)
    return p


def term_change(spec) -> str:
    """What the plan changes when the stack's own subscription term has no price (a 36-month term): it weighs the
    catalog's 1-year prices and its `billing:` block is a 1-year term, so it is not the stack's term at another cost
    ("" when the stack's term is priced or it declares none)."""
    months = spec.billing.period_months or 0
    if not pricecat.term_not_priced(spec.billing.model, months):
        return ""
    year = pricecat.YEARLY_TERM_MONTHS
    return (
        f"the stack subscribes for {months} months (billing.period_months {months}), a term with no sourced price (the "
        f"catalog's yearly rows are {year}-month terms): this plan weighs {year}-month prices, and its yearly choice is "
        f"a {year}-month term (period_months {year}, paid {year} months upfront), a change of term, not the stack's "
        f"{months}-month commitment at this cost; `cost estimate` leaves the {months}-month term unpriced"
    )


def _express(p: Plan, spec, raw: dict, file: str) -> None:
    """A `billing:` block (and the replicas / schedules it needs) the spec validates, or what the spec cannot say."""

    k = len(p.subscribed)
    term = p.term
    if term == "mixed":
        p.cannot.append("monthly and yearly nodes in one stack: the spec has one billing model per stack")
        return
    if k == 0:
        block: dict[str, object] = {"model": p.rest}
        if spec.billing.model == "spot" and spec.billing.spot_price_limit is not None:
            block["spot_price_limit"] = spec.billing.spot_price_limit
        p.billing_block = block
        return
    if p.rest == "spot" and k < len(p.nodes):
        p.cannot.append(
            f"{k} subscribed node(s) with spot nodes above them: the spec has one billing model per stack "
            "(a subscription model subscribes replicas.min nodes and runs pay-as-you-go above them)"
        )
        p.cannot.append(
            f"split it: a second stack of {k} node(s) (replicas min = max = {k}) with billing {{model: {term}}}, and this "
            f"stack spot with {k} fewer nodes in replicas and schedules; the second stack has its own load balancer and "
            "NAT, so count their cost (gpufleet cost estimate on both)"
        )
        return
    if p.rest == "spot":
        p.notes.append("with a subscription model the nodes above the subscribed ones are pay-as-you-go, not spot")
    new = copy.deepcopy(raw)
    block = {"model": term, "period_months": pricecat.YEARLY_TERM_MONTHS if term == "yearly" else 1}
    new["billing"] = block
    changes: dict = {"billing": block}
    replicas = dict(new["replicas"])
    if replicas["min"] != k:
        replicas["min"] = k
        if replicas.get("desired") is not None and replicas["desired"] < k:
            replicas["desired"] = k
        replicas["max"] = max(replicas["max"], k)
        new["replicas"] = replicas
        changes["replicas"] = replicas
    schedules, raised = [], False
    for s in (new.get("autoscaling") or {}).get("schedules") or []:
        s = dict(s)
        if s["min"] < k:  # the subscribed nodes are paid for all month: no schedule asks for fewer
            s["min"], raised = k, True
            if s.get("desired") is not None and s["desired"] < k:
                s["desired"] = k
            s["max"] = max(s["max"], k)
        schedules.append(s)
    if raised:
        new["autoscaling"] = {**new["autoscaling"], "schedules": schedules}
        changes["autoscaling"] = {"schedules": schedules}
    try:
        loader.validate(new, stack=p.stack, file=f"{file} (with the planned billing)")  # billing only: fit unchanged
    except UserError as exc:
        p.cannot += [f"the planned spec does not validate: {pr}" for pr in exc.problems]
        return
    p.billing_block = block
    p.spec_changes = changes


def plan_stack(stack: str) -> Plan:
    base = plans.for_stack(stack)
    fleet = base.fleet
    prices = catalog_prices(fleet.spec.cloud, fleet.spec.region, fleet.instance_type.type)
    return make_plan(stack, fleet.spec, base.raw, fleet.instance_type.type, prices, fleet.file)


def as_json(p: Plan) -> dict:
    s = lambda x: None if x is None else str(x)  # noqa: E731
    pr = p.prices
    return {
        "stack": p.stack,
        "instance_type": p.instance_type,
        "currency": pr.currency,
        "prices": {
            "payg_hourly": s(pr.payg_hourly),
            "monthly": s(pr.monthly),
            "yearly_per_month": s(pr.yearly_per_month),
            "spot_hourly": s(pr.spot_hourly),
            "sources": pr.sources,
        },
        "rest": p.rest,
        "break_even_utilisation": {k: str(v) for k, v in p.break_even.items()},
        "break_even_within_spread": {k: [str(lo), s(hi)] for k, (lo, hi) in break_even_spread(pr, p.rest).items()},
        "profile": [{"nodes": n, "hours_per_month": str(h.quantize(Decimal("0.01")))} for n, h in p.profile],
        "nodes": [
            {
                "node": n.index,
                "hours_per_month": str(n.hours),
                "utilisation": str(n.utilisation),
                "choice": n.choice,
                "monthly_cost": str(n.cost),
                "monthly_cost_if_" + p.rest: str(n.rest_cost),
            }
            for n in p.nodes
        ],
        "subscribe": len(p.subscribed),
        "term": p.term,
        "leave": {"nodes": len(p.nodes) - len(p.subscribed), "billing": p.rest},
        "monthly_cost": str(p.monthly_cost),
        "monthly_cost_without_subscriptions": str(p.monthly_cost_without),
        "upfront_yearly": str(p.upfront),
        "billing": p.billing_block,
        "spec_changes": p.spec_changes,
        "cannot_express": p.cannot,
        "term_change": p.term_change or None,
        "notes": p.notes,
    }
