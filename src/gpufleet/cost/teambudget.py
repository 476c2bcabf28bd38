"""`cost budget --by team --budgets FILE`: each team's monthly cost (its own lines plus its allocation of the shared
costs, finance/allstacks.py) against the budget the file gives it.

The file: `budgets: {ml-platform: 60000, search: 12000}` (monthly, in the catalog currency). A team whose priced cost
(a lower bound when a line has no price) is above its budget is over; a team with an unpriced line is not checked
unless --allow-unpriced (then its lower bound is compared and the verdict says so); a team with stacks and no budget
is named. One file may hold the budgets of teams and cost centers (examples/budgets-example.yaml): a budget no group of
this grouping has is not an error (a near miss of a group's name is said on that group).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from pathlib import Path

from msgspec import Struct

from gpufleet import inputs
from gpufleet.cost import figures
from gpufleet.errors import Problem, UserError, did_you_mean

# The fix of a --budgets file that does not exist: what it holds, and where its format is described.
MISSING = (
    "write one: YAML `budgets: {TEAM: monthly amount}`, a monthly amount in the catalog currency for each team or "
    "cost center, e.g. `budgets: {ml-platform: 60000, search: 12000}` (docs/cost-reports.md: Team budgets)"
)


class TeamVerdict(Struct, frozen=True):
    group: str
    ok: bool
    cost: Decimal
    budget: Decimal | None
    complete: bool
    message: str


def load(path: Path) -> dict[str, Decimal]:
    shown = str(path)
    doc = inputs.load_mapping(path, shown, MISSING, what="a mapping with a `budgets:` mapping (team: monthly amount)")
    problems = [
        Problem(shown, str(k), f"unknown key{near if 'did you mean' in near else ''}: the file holds only `budgets:`")
        for k in doc
        if k != "budgets"
        for near in [did_you_mean(str(k), ["budgets"])]
    ]
    if "budgets" not in doc and problems:  # `budget:` was said to be "budgets: ... got nothing (null)" (review F7)
        raise UserError(problems)
    raw = inputs.mapping(doc.get("budgets"), shown, "budgets", "a mapping of team to monthly amount, e.g. {ml-platform: 60000}")
    out: dict[str, Decimal] = {}
    for team, amount in raw.items():
        if not isinstance(team, str) or not team.strip():  # `~: 5` was a team called "None"
            problems.append(
                Problem(shown, f"budgets.{team}", f"a team is named by its tag value (text), not {inputs.given(team)}")
            )
            continue
        try:
            if isinstance(amount, bool):
                raise InvalidOperation
            value = Decimal(str(amount))
            if not value.is_finite() or value < 0:
                raise InvalidOperation
            out[str(team)] = value
        except InvalidOperation:
            problems.append(Problem(shown, f"budgets.{team}", f"must be a number >= 0 (e.g. 60000), not {inputs.given(amount)}"))
    if problems:
        raise UserError(problems)
    return out


def check(r, limits: dict[str, Decimal], allow_unpriced: bool = False) -> list[TeamVerdict]:
    cur = r.currency
    out = []
    stray = [name for name in limits if name not in {g.name for g in r.groups}]  # a budget no group has: a misspelling?
    for g in r.groups:
        cost, limit = g.with_shared, limits.get(g.name)
        what = f"{figures.at_least(cost, g.complete)} {cur} ({g.monthly} own + {g.allocated} shared, allocated {r.allocate})"
        if limit is None:
            hint = did_you_mean(g.name, stray)  # ' (did you mean 'x'?)' for a near miss
            typo = f" (the file's {hint.removeprefix(' (did you mean ')[:-2]} is close: misspelt?)" if "did you" in hint else ""
            out.append(TeamVerdict(g.name, False, cost, None, g.complete, f"no budget in the file for {g.name}{typo}: {what}"))
        elif cost > limit:
            out.append(TeamVerdict(g.name, False, cost, limit, g.complete, f"over budget: {what} > {limit}"))
        elif not g.complete and not allow_unpriced:
            out.append(
                TeamVerdict(
                    g.name,
                    False,
                    cost,
                    limit,
                    False,
                    f"not checked: {what} is a lower bound ({g.unpriced_lines} line(s), {g.unpriced_stacks} stack(s) "
                    f"without a price); price them or pass --allow-unpriced to compare the lower bound with {limit}",
                )
            )
        else:
            bound = "" if g.complete else " (a lower bound: lines without a price are not in it)"
            out.append(TeamVerdict(g.name, True, cost, limit, g.complete, f"within budget: {what}{bound} <= {limit}"))
    return out


def as_json(r, verdicts: list[TeamVerdict]) -> dict:
    return {
        "by": r.by,
        "currency": r.currency,
        "allocate": r.allocate,
        "teams": [
            {
                "name": v.group,
                "ok": v.ok,
                "monthly_with_shared": str(v.cost),
                "complete": v.complete,
                "budget": None if v.budget is None else str(v.budget),
                "message": v.message,
            }
            for v in verdicts
        ],
        "money_format": "decimal strings",
    }
