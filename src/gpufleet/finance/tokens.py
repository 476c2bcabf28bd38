"""Cost per token: what one node costs a month (per billing model) over what the load test measured it can serve.

    CNY per million output tokens = node monthly cost / (output tokens/s x utilisation x seconds per month) x 10^6
    CNY per request               = node monthly cost / (requests/s x utilisation x seconds per month)

A node is what one more running node adds to the bill: the instance and its own disks, priced by the same program and
catalog as `cost estimate` (the stack re-declared for each billing model, as `cost compare` does, with one running
node). The fleet's load balancer, NAT and traffic are not in it, nor are the costs marked shared (the image snapshot
the nodes boot from, the KMS instance, the model bucket: one bill whatever the number of nodes). The throughput is the load test's knee (`gpufleet.sizing.capacity.per_node_qps_of`:
the knee when the run had an SLO, else its best error-free level); "utilisation" is the share of that throughput
the node serves on average over the month, the knee itself being 100 %.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from msgspec import Struct

from gpufleet import plan
from gpufleet.cost import view
from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.estimate import Estimate, money
from gpufleet.cost.resources import COMPUTE
from gpufleet.errors import Problem, UserError
from gpufleet.finance import compare
from gpufleet.inputs import number_problems
from gpufleet.sizing import capacity, loadtest

SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600  # 730 h
BILLINGS = ("payg", "monthly", "yearly", "spot")
MILLION = Decimal(1_000_000)
# The load's range, as fractions of the knee's throughput: the knee is 1 (100 %); below 1 % a node serves next to
# nothing and its cost per token is the idle node's cost spread over almost no tokens, not a planning figure.
MIN_UTILISATION = Decimal("0.01")
# A load test's requests/s and output tokens/s: at least MIN_PER_S (a level that served less than one request in a
# quarter of an hour measured no throughput to price) and at most what one node can take (capacity.MAX_QPS_PER_NODE).
MIN_PER_S = 0.001


def q(x: Decimal, places: str) -> Decimal:
    return x.quantize(Decimal(places), rounding=ROUND_HALF_UP)


# --- the load test -----------------------------------------------------------------------------


class Throughput(Struct, frozen=True):
    """The load-test level the costs are computed at, and what its requests were."""

    concurrency: int
    requests_per_s: Decimal
    output_tokens_per_s: Decimal
    how: str
    prompt_chars: int | None
    prompt_tokens: float | None
    output_tokens_per_request: Decimal
    max_tokens: int | None
    synthetic: bool
    note: str


def throughput(result: dict, shown: str) -> Throughput:
    """The reference level of a load-test result (its knee, else its best error-free level), or a UserError."""

    qps, how = capacity.per_node_qps_of(result, shown)
    levels = result["levels"]
    knee = result.get("knee") if isinstance(result.get("knee"), dict) else None
    if knee and knee.get("concurrency") is not None:
        level = next((lv for lv in levels if lv["concurrency"] == knee["concurrency"]), None)
    else:
        level = next((lv for lv in levels if lv["requests_per_s"] == qps and lv["error_rate"] == 0), None)
    if level is None:
        raise UserError([Problem(shown, "knee.concurrency", "names no level of the result: not a load-test result")])
    i = levels.index(level)
    tok = level.get("output_tokens_per_s")
    rps_field = "knee.requests_per_s" if knee and knee.get("requests_per_s") == qps else f"levels.{i}.requests_per_s"
    problems = number_problems(qps, shown, rps_field, MIN_PER_S, capacity.MAX_QPS_PER_NODE)
    problems += number_problems(tok, shown, f"levels.{i}.output_tokens_per_s", MIN_PER_S, capacity.MAX_QPS_PER_NODE)
    if problems:
        raise UserError(
            [Problem(p.file, p.path, f"{p.message}: not a throughput measured by a load test (rerun it)") for p in problems]
        )
    request: dict = result["request"] if isinstance(result.get("request"), dict) else {}
    rps, tps = Decimal(str(qps)), Decimal(str(tok))
    return Throughput(
        concurrency=int(level["concurrency"]),
        requests_per_s=rps,
        output_tokens_per_s=tps,
        how=how,
        prompt_chars=request.get("prompt_chars"),
        prompt_tokens=request.get("prompt_tokens"),
        output_tokens_per_request=q(tps / rps, "0.1"),
        max_tokens=request.get("max_tokens"),
        synthetic=bool(result.get("synthetic")),
        note=str(result.get("note") or ""),
    )


def parse_utilisation(text: str) -> list[Decimal]:
    """'0.3,0.5,0.8' -> [0.3, 0.5, 0.8]: each from MIN_UTILISATION (1 %) to 1 (the knee)."""
    out, bad = [], []
    for part in (p.strip() for p in text.split(",")):
        try:
            u = Decimal(part)
            if not u.is_finite() or not MIN_UTILISATION <= u <= 1:
                raise InvalidOperation
            out.append(u)
        except InvalidOperation:
            bad.append(part)
    if bad or not out:
        raise UserError(
            [
                Problem(
                    "--utilization",
                    "",
                    f"{', '.join(repr(b) for b in bad) or repr(text)}: give fractions of the knee's throughput from "
                    f"{MIN_UTILISATION} (1 %) to 1, comma-separated, e.g. 0.3,0.5,0.8",
                )
            ]
        )
    return sorted(set(out))


# --- one node for a month ----------------------------------------------------------------------


class NodeMonth(Struct, frozen=True):
    billing: str
    monthly: Decimal | None  # None: a line of the node has no price
    lines: tuple[str, ...]  # what it adds up
    estimated: bool  # rests on an estimated price
    oldest_as_of: str
    problem: str = ""


def node_month(billing: str, e: Estimate | None, problem: str = "") -> NodeMonth:
    """One node-month from an estimate of the stack with one running node: the instance and disks of the node resource
    whose instance lines of the billing are exactly one node for the month (730 hours, or 1 month on a subscription;
    several lines when a spot node is spread over pools); the resource's shared lines (its image's snapshot) are not
    the node's."""
    if e is None:
        return NodeMonth(billing, None, (), False, "", problem or "not priced")
    for name in dict.fromkeys(l.resource_name for l in e.lines if l.category == COMPUTE):
        mine = [l for l in e.lines if l.resource_name == name and view.node_own(l)]
        gpus = [l for l in mine if l.category == COMPUTE]
        node = [l for l in gpus if l.billing == billing] or [l for l in gpus if l.billing == gpus[0].billing]
        one = HOURS_PER_MONTH if node[0].billing in ("payg", "spot") else Decimal(1)
        if sum((l.monthly_quantity or Decimal(0) for l in node), Decimal(0)).quantize(Decimal("0.01")) != one:
            continue  # (a line's quantity is kept to 4 decimals: a third of 730 hours three times is 729.9999)
        # a group with an on-demand base runs more nodes than this one: its disks are shared out per node
        nodes = (sum((l.monthly_quantity or Decimal(0) for l in gpus), Decimal(0)) / one).quantize(Decimal("0.01"))
        lines = [*node, *(l for l in mine if l.category != COMPUTE)]
        complete = all(l.monthly_cost is not None for l in lines)
        share = {id(l): Decimal(1) if any(l is x for x in node) else 1 / nodes for l in lines}
        return NodeMonth(
            billing,
            money(sum((l.monthly_cost * share[id(l)] for l in lines if l.monthly_cost is not None), Decimal(0)))
            if complete
            else None,
            tuple(
                f"{l.component}: {l.monthly_quantity} {l.unit} x {l.unit_price} = {l.monthly_cost}"
                + ("" if share[id(l)] == 1 else f" / {nodes} nodes")
                for l in lines
            ),
            any(view.status(l) == "estimated" for l in lines),
            min((l.as_of for l in lines if l.as_of), default=""),
            "" if complete else _no_price(lines),
        )
    return NodeMonth(billing, None, (), False, "", f"no node resource priced for one node-month under {billing}")


def _no_price(lines) -> str:
    """Why a node-month has no figure: its lines without a price (and, for a term the catalog does not price, why)."""
    unpriced = [l for l in lines if l.monthly_cost is None]
    why = "; ".join(dict.fromkeys(l.term_unpriced for l in unpriced if l.term_unpriced))
    return "a line of the node has no price: " + "; ".join(l.component for l in unpriced) + (f" ({why})" if why else "")


def node_months(stack: str, usage, discounts=None, billings: tuple[str, ...] = BILLINGS) -> list[NodeMonth]:
    """One node-month per billing model: the stack re-declared with that billing (cost compare), one running node."""

    spec = plan.for_stack(stack).fleet.spec
    out = []
    for billing in billings:  # one node above the on-demand base a spot option keeps, so that node is the spot one
        one = usage.with_keys(replicas_average=Decimal(1 + compare.spot_base(spec, billing)))
        out += [
            node_month(o.billing, o.estimate, o.problem) for o in compare.compare(stack, [spec.cloud], [billing], one, discounts)
        ]
    return out


# --- the arithmetic ----------------------------------------------------------------------------


def per_million_tokens(monthly: Decimal, tokens_per_s: Decimal, utilisation: Decimal) -> Decimal:
    return monthly / (tokens_per_s * utilisation * SECONDS_PER_MONTH) * MILLION


def per_request(monthly: Decimal, requests_per_s: Decimal, utilisation: Decimal) -> Decimal:
    return monthly / (requests_per_s * utilisation * SECONDS_PER_MONTH)


class Point(Struct, frozen=True):
    label: str
    utilisation: Decimal
    output_tokens_per_s: Decimal
    per_million: Decimal | None
    per_request: Decimal | None


def points(node: NodeMonth, t: Throughput, utilisations: list[Decimal]) -> list[Point]:
    out = []
    for label, u in [("knee (100%)", Decimal(1)), *((f"{(u * 100).normalize():f}%", u) for u in utilisations if u != 1)]:
        m = node.monthly
        out.append(
            Point(
                label,
                u,
                q(t.output_tokens_per_s * u, "0.001"),
                None if m is None else q(per_million_tokens(m, t.output_tokens_per_s, u), "0.0001"),
                None if m is None else q(per_request(m, t.requests_per_s, u), "0.000001"),
            )
        )
    return out


class Peak(Struct, frozen=True):
    peak_qps: float
    nodes: int
    plan: dict
    monthly: dict[str, Decimal | None]
    spot_on_demand_base: int = 0  # of the nodes, those a spot fleet keeps pay-as-you-go (prod: replicas.min)


def peak(peak_qps: float, t: Throughput, nodes: list[NodeMonth], redundancy: int = 1, spot_base: int = 0) -> Peak:
    """The nodes `plan capacity` buys for the peak at the knee's requests/s, and what they cost a month, per billing.

    Under spot, `spot_base` of them (the on-demand base the spec requires: prod keeps replicas.min pay-as-you-go,
    compare.spot_base) are pay-as-you-go nodes: 4 nodes of a prod spot fleet with min 2 are 2 payg + 2 spot."""

    p = capacity.plan(peak_qps, float(t.requests_per_s), redundancy, t.how)
    monthly = {n.billing: None if n.monthly is None else n.monthly * p.nodes for n in nodes}
    base = min(spot_base, p.nodes)
    if base and "spot" in monthly:
        payg, spot = (next((n.monthly for n in nodes if n.billing == b), None) for b in ("payg", "spot"))
        monthly["spot"] = None if payg is None or spot is None else payg * base + spot * (p.nodes - base)
    return Peak(peak_qps, p.nodes, p.to_json(), monthly, base)


# --- the loadtest's stack against the stack's ----------------------------------------------------


def warnings(result: dict, shown: str, fleet) -> list[str]:
    return loadtest.measured_elsewhere(result, shown, fleet, f"the costs below use {fleet.stack}'s prices with")


def as_json(stack: str, currency: str, shown: str, t: Throughput, rows: list[tuple[NodeMonth, list[Point]]], pk, warns) -> dict:
    def s(x):
        return None if x is None else str(x)

    return {
        "stack": stack,
        "currency": currency,
        "loadtest": {
            "file": shown,
            "synthetic": t.synthetic,
            "note": t.note or None,
            "reference_level": {
                "concurrency": t.concurrency,
                "requests_per_s": s(t.requests_per_s),
                "output_tokens_per_s": s(t.output_tokens_per_s),
                "how": t.how,
            },
            "prompt_chars": t.prompt_chars,
            "prompt_tokens": t.prompt_tokens,
            "output_tokens_per_request": s(t.output_tokens_per_request),
            "max_tokens": t.max_tokens,
        },
        "seconds_per_month": str(SECONDS_PER_MONTH),
        "node": "the instance and its own disks (not the fleet's load balancer, NAT or traffic, nor shared costs such as the image snapshot)",
        "billing": [
            {
                "billing": n.billing,
                "node_monthly": s(n.monthly),
                "estimated_price": n.estimated,
                "oldest_price_as_of": n.oldest_as_of or None,
                "lines": list(n.lines),
                "problem": n.problem or None,
                "points": [
                    {
                        "label": p.label,
                        "utilisation": s(p.utilisation),
                        "output_tokens_per_s": s(p.output_tokens_per_s),
                        "per_million_output_tokens": s(p.per_million),
                        "per_request": s(p.per_request),
                    }
                    for p in pts
                ],
            }
            for n, pts in rows
        ],
        "peak": None
        if pk is None
        else {
            "peak_qps": pk.peak_qps,
            "nodes": pk.nodes,
            "plan": pk.plan,
            "monthly": {b: s(v) for b, v in pk.monthly.items()},
            "spot_on_demand_base": pk.spot_on_demand_base,
        },
        "warnings": warns,
        "money_format": "decimal strings",
    }
