"""`cost report --all`: the monthly cost of every stack of the project, grouped by a tag of the stacks' specs.

Each stack is priced as `cost estimate` prices it (its own usage file and the catalog). The group is the value of
the tag `team` or `cost-center` in the stack's `tags:` (stacks/spec.py FleetSpec.tags); a stack without it is
"untagged". Costs that stacks of one cloud and region share (lines of cost components marked `shared`: the KMS
instance, the model bucket, image snapshots) appear in every stack's own estimate but are paid once: here they leave
the groups and are counted once, in the row "shared (counted once)", with a note naming the stacks that share them
(when the stacks price one differently, the largest priced line is counted and the note names each stack's figure).
Each shared cost is then allocated to the stacks declaring it (`--allocate evenly`, the default, or `node-hours`: by
their average GPU nodes x 730), as OpenCost allocates shared cost; a group's `with shared` column is its own cost plus
its allocation, and the groups' `with shared` add up to the total, which holds each shared cost once. A shared line is
what the stacks share: one bucket (by name), one secret (by name: stacks with their own secrets are not merged), the
region's KMS instance, one image's snapshot.
A stack that cannot be priced (no price catalog of its region) is named, and the total is then incomplete (a lower
bound), like a line without a price; a stack file that is broken (or its usage profile) is bad input, as in `gpufleet check`.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal

from msgspec import Struct, field

from gpufleet.cost import figures, view
from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.cost.estimate import Estimate, Line, money
from gpufleet.errors import Problem, UserError
from gpufleet.finance.stack import plan_estimate, read_stack
from gpufleet.stacks import loader
from gpufleet.stacks.project import project_root

GROUP_TAGS = ("team", "cost-center")
ALLOCATIONS = ("evenly", "node-hours")  # how a shared cost is split across the stacks declaring it
UNTAGGED = "untagged"
SHARED = "shared (counted once)"


class StackCost(Struct, frozen=True):
    stack: str
    tags: dict[str, str]
    estimate: Estimate | None
    problem: str = ""


class Group(Struct):
    name: str
    stacks: list[str] = field(default_factory=list)
    monthly: Decimal = Decimal(0)
    estimated: Decimal = Decimal(0)
    unpriced_lines: int = 0
    unpriced_stacks: int = 0
    allocated: Decimal = Decimal(0)  # this group's share of the shared costs (cost report --all --allocate)

    @property
    def with_shared(self) -> Decimal:
        return money(self.monthly + self.allocated)

    @property
    def complete(self) -> bool:
        return not self.unpriced_lines and not self.unpriced_stacks

    @property
    def estimated_share(self) -> Decimal:
        return Decimal(0) if self.monthly == 0 else (self.estimated / self.monthly).quantize(Decimal("0.0001"))

    def with_shared_text(self) -> str:
        return figures.at_least(self.with_shared, self.complete)

    def total_text(self) -> str:
        return figures.at_least(money(self.monthly), self.complete)


class Report(Struct):
    by: str
    currency: str
    groups: list[Group]
    shared: Group
    total: Group
    notes: list[str]
    allocate: str = "evenly"
    allocations: list[dict] = field(default_factory=list)  # {shared, stack, group, amount, weight}


def price_all(stacks: list[str] | None = None) -> list[StackCost]:
    """Every stack of the project (or the ones named), priced; a stack without a price (no catalog of its region) keeps
    its row with the reason. A stack file or usage profile that cannot be read or does not validate is a UserError
    naming each (as `gpufleet check` refuses them), and so is a project without a stack file: a report (and a budget
    check) of no stack printed a table of nothing, a traceback, or passed every budget."""
    if stacks is None and not (stacks := loader.stack_names()):
        root = project_root()
        raise UserError(
            [
                Problem(
                    str(root / "stacks"),
                    "",
                    "no stack file (Pulumi.<name>.yaml): nothing to report; run in the project whose stacks you mean (or "
                    "set GPUFLEET_PROJECT to it), or add a stack (gpufleet region new ...)",
                )
            ]
        )
    out, refused = [], []
    for name in stacks:
        try:  # a broken stack file or usage profile is bad input, as `gpufleet check` refuses it: priced as an untagged
            p, use = read_stack(name)  # stack of 0 it passed a budget (--allow-unpriced), naming no file
        except UserError as exc:
            refused += exc.problems
            continue
        tags = dict(p.fleet.spec.tags)
        try:
            out.append(StackCost(name, tags, plan_estimate(p, use)))
        except UserError as exc:  # no price for it (a region without a catalog): named, the totals lower bounds
            out.append(StackCost(name, tags, None, "; ".join(str(x) for x in exc.problems)))
    if refused:  # every broken file at once; one failing program (stacks/__main__.py) said once, not per stack
        raise UserError(list(dict.fromkeys(refused)))
    return out


def may_share(stack: str, cloud: str, region: str) -> tuple[list[str], list[Problem]]:
    """The project's other stacks that may share a cost with `stack` of `cloud` and `region` (a shared cost is one of
    a cloud and region, view.shared_key: a stack of another cannot share it), read only as far as their fleet's
    `cloud:` and `region:`; a stack file whose cloud or region does not read is kept (pricing it names what is wrong),
    and one that does not read at all is a problem here. Not validated: `cost report --all` refuses a broken stack."""
    out, unread = [], []
    for name in loader.stack_names():
        if name == stack:
            continue
        try:
            _, config = loader.read_stack_config(name)
        except UserError as exc:
            unread += exc.problems
            continue
        raw = config.get(loader.CONFIG_KEY)
        other = raw.get("cloud") if isinstance(raw, dict) else None
        where = raw.get("region") if isinstance(raw, dict) else None
        if isinstance(other, str) and other != cloud or other == cloud and isinstance(where, str) and where != region:
            continue
        out.append(name)
    return out, unread


def _add(g: Group, lines, stack: str | None = None) -> None:
    if stack is not None and stack not in g.stacks:
        g.stacks.append(stack)
    for l in lines:
        if l.monthly_cost is None:
            g.unpriced_lines += 1
            continue
        g.monthly += l.monthly_cost
        if view.status(l) == "estimated":
            g.estimated += l.monthly_cost


def _one_bill(lines: list[Line]) -> Line:
    """The line counted for a shared cost declared by several stacks: the largest priced one (stacks that disagree on
    its quantity, e.g. model_bucket_gb, are named in a note), an unpriced one only when no stack prices it."""
    priced = [l for l in lines if l.monthly_cost is not None]
    return max(priced, key=lambda l: l.monthly_cost or 0) if priced else lines[0]


def _shared_note(name: str, declared: list[tuple[str, Line]], counted: Line) -> str:
    stacks = list(dict.fromkeys(s for s, _ in declared))
    note = f"shared: {name} is declared by {', '.join(stacks)} and counted once" + (
        f" ({len(stacks)} stacks)" if len(stacks) > 1 else ""
    )
    costs = {s: l.monthly_cost for s, l in declared}
    if len(set(costs.values())) > 1:
        each = ", ".join(f"{s} {'unpriced' if v is None else v}" for s, v in costs.items())
        note += f"; the stacks disagree on it ({each}): {'unpriced' if counted.monthly_cost is None else counted.monthly_cost} is counted"
    return note


def node_hours(e: Estimate) -> Decimal:
    """The stack's GPU node-hours a month: its average running nodes (the estimate's average scenario) x 730."""

    avg = e.scenarios.get("average")
    return (avg.nodes if avg is not None else Decimal(0)) * HOURS_PER_MONTH


def allocate(cost: Decimal, stacks: list[str], weights: dict[str, Decimal], rule: str) -> dict[str, Decimal]:
    """Split a shared monthly cost across the stacks declaring it, evenly or by node-hours; the parts add up to the
    cost exactly (the rounding cent goes to the last stack)."""
    if rule == "node-hours" and sum(weights.get(s, Decimal(0)) for s in stacks) > 0:
        w = {s: weights.get(s, Decimal(0)) for s in stacks}
    else:
        w = {s: Decimal(1) for s in stacks}
    whole = sum(w.values())
    parts = {s: money(cost * w[s] / whole) for s in stacks}
    parts[stacks[-1]] += cost - sum(parts.values())
    return parts


def declared_shared(costs: list[StackCost]) -> tuple[dict[tuple, list[tuple[str, Line]]], dict[tuple, str]]:
    """Each shared cost (view.shared_key) -> (stack, its line) for every stack declaring it, and its name."""
    declared: dict[tuple, list[tuple[str, Line]]] = {}
    names: dict[tuple, str] = {}
    for c in costs:
        e = c.estimate
        if e is None:
            continue
        for l in e.lines:
            if view.shared(l):
                key = view.shared_key(e, l)
                names.setdefault(key, f"{l.component} ({e.cloud} {e.region})")
                declared.setdefault(key, []).append((c.stack, l))
    return declared, names


def shared_parts(costs: list[StackCost], rule: str = "evenly") -> dict[tuple, tuple[Line, list[str], dict[str, Decimal]]]:
    """Each shared cost -> (the line counted once, the stacks declaring it, each one's allocated part): the one home
    of the allocation, for `cost report --all` and `cost reconcile`. The parts are empty while the cost has no price."""
    weights = {c.stack: node_hours(c.estimate) for c in costs if c.estimate}
    out = {}
    for key, decl in declared_shared(costs)[0].items():
        one = _one_bill([l for _, l in decl])
        users = list(dict.fromkeys(s for s, _ in decl))
        out[key] = (one, users, {} if one.monthly_cost is None else allocate(one.monthly_cost, users, weights, rule))
    return out


def report(costs: list[StackCost], by: str, rule: str = "evenly") -> Report:
    groups: dict[str, Group] = {}
    shared = Group(SHARED)
    declared, shared_names = declared_shared(costs)  # shared key -> (stack, its line) for each stack declaring it
    total = Group("total")
    notes: list[str] = []
    currencies = {c.estimate.currency for c in costs if c.estimate}
    for c in costs:
        name = c.tags.get(by) or UNTAGGED
        g = groups.setdefault(name, Group(name))
        if c.estimate is None:
            g.stacks.append(c.stack)
            total.stacks.append(c.stack)
            g.unpriced_stacks += 1
            total.unpriced_stacks += 1
            notes.append(f"{c.stack}: not priced ({c.problem}); the totals are lower bounds")
            continue
        own = [l for l in c.estimate.lines if not view.shared(l)]
        _add(g, own, c.stack)
        _add(total, own, c.stack)
    group_of = {c.stack: (c.tags.get(by) or UNTAGGED) for c in costs}
    allocations: list[dict] = []
    for key, (one, _, parts) in shared_parts(costs, rule).items():
        _add(shared, [one])
        _add(total, [one])
        notes.append(_shared_note(shared_names[key], declared[key], one))
        for stack, part in parts.items():
            groups[group_of[stack]].allocated += part
            allocations.append(
                {"shared": shared_names[key], "stack": stack, "group": group_of[stack], "amount": part, "rule": rule}
            )
    sharing = {s for decl in declared.values() for s, _ in decl}
    shared.stacks = [c.stack for c in costs if c.stack in sharing]
    untagged = groups.get(UNTAGGED)
    if untagged:
        notes.append(f"untagged: {', '.join(untagged.stacks)} have no `{by}` tag (fleet tags in the stack file)")
    if len(currencies) > 1:
        notes.append(f"the stacks are priced in {', '.join(sorted(currencies))}: totals add different currencies")
    ordered = sorted(groups.values(), key=lambda g: (g.name == UNTAGGED, g.name))
    total.allocated = Decimal(0)  # the total already holds each shared cost once
    return Report(by, "/".join(sorted(currencies)) or "n/a", ordered, shared, total, notes, rule, allocations)


def rows(r: Report) -> list[Group]:
    """The groups, then the shared row (when there is a shared cost), then the total."""
    return [*r.groups, *([r.shared] if r.shared.stacks else []), r.total]


def as_json(r: Report) -> dict:
    def g(x: Group) -> dict:
        return {
            "name": x.name,
            "stacks": x.stacks,
            "monthly_total": str(money(x.monthly)),
            "complete": x.complete,
            "estimated_share": str(x.estimated_share),
            "unpriced_lines": x.unpriced_lines,
            "unpriced_stacks": x.unpriced_stacks,
            "allocated_shared": str(money(x.allocated)),
            "monthly_with_shared": str(x.with_shared) if x is not r.total and x is not r.shared else str(money(x.monthly)),
        }

    return {
        "by": r.by,
        "allocate": r.allocate,
        "allocations": [{**a, "amount": str(a["amount"])} for a in r.allocations],
        "currency": r.currency,
        "groups": [g(x) for x in r.groups],
        "shared": g(r.shared),
        "total": g(r.total),
        "notes": r.notes,
        "money_format": "decimal strings",
    }


def as_csv(r: Report) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "row",
            r.by,
            "stacks",
            "currency",
            "monthly_total",
            "complete",
            "estimated_share",
            "unpriced_lines",
            "unpriced_stacks",
            "allocated_shared",
        ]
    )
    for x in rows(r):
        kind = "total" if x is r.total else "shared" if x is r.shared else "group"
        w.writerow(
            [
                kind,
                x.name,
                " ".join(x.stacks),
                r.currency,
                money(x.monthly),
                str(x.complete).lower(),
                x.estimated_share,
                x.unpriced_lines,
                x.unpriced_stacks,
                money(x.allocated) if kind == "group" else "",
            ]
        )
    return buf.getvalue()
