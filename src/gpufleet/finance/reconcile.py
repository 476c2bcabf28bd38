"""`cost reconcile --stack S --bill FILE`: a cloud's billing-detail CSV against the stack's estimate.

Bill formats: the columns each cloud's pricing module reads (BILL_COLUMNS, with the vendor page they come from).
A file in UTF-8 (with or without BOM) or GB18030 (what a Chinese spreadsheet saves) is read.

Matching, in order: the bill's instance name is a declared resource's name or the instance name it declares (the
scaling configuration's node name for every node it launches); the instance ID is one the resource declares; a tag
`gpufleet:fleet` equal to the stack's fleet with a product naming a type the stack declares once (the pricing module's
BILL_TYPES: an EIP line without a name is the stack's one EIP); the tag alone (matched to the stack, no single
resource). What matches nothing is listed as a bill line no stack declares.

Per resource: the estimate of its own lines (a lower bound when one is unpriced), the bill (the lines' amounts summed)
and the variance (bill - estimate). Per category, like with like: a bill line matched to a resource holds the whole
resource unless the resource's bill lines name each category its estimate has, so the categories of such a resource
are compared together (`gpu_compute + disk`: the nodes' bill lines hold their disks; `bandwidth + load_balancer`: the
CLB's line holds its traffic). Shared costs (the KMS instance, the image snapshot, the model bucket: one bill for the
stacks declaring them) are not this stack's own: they are listed apart with the part `cost report --all` allocates to
this stack (allstacks.shared_parts over the stacks of its cloud and region; a broken one of them leaves the part
unknown, with a note), and left out of the rows above.
"""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from msgspec import Struct, field

from gpufleet import inputs, naming, registry
from gpufleet.cost import figures, view
from gpufleet.cost.estimate import Estimate, amount, money
from gpufleet.cost.resources import CATEGORIES, COMPUTE
from gpufleet.errors import Problem, UserError
from gpufleet.finance import allstacks
from gpufleet.finance.stack import stack_estimate
from gpufleet.plan import for_stack
from gpufleet.stacks import loader


def formats(cloud: str | None = None) -> dict[str, dict[str, tuple[str, ...]]]:
    """cloud -> the bill columns it reads per role (each cloud's pricing module: BILL_COLUMNS; a cloud without one has
    no bill format here)."""
    out = {}
    for name in registry.names() if cloud is None else (cloud,):
        cols = getattr(registry.module(name, "pricing"), "BILL_COLUMNS", None)
        if cols:
            out[name] = cols
    return out


def missing_bill(cloud: str | None = None) -> str:
    """The fix of a bill file that does not exist: the billing-detail CSV, and where each cloud's console exports it
    (its pricing module's BILL_EXPORT, for the clouds `formats(cloud)` reads)."""
    where = [
        f"on {registry.profile(c).said} from {export}"
        for c in formats(cloud)
        if (export := getattr(registry.module(c, "pricing"), "BILL_EXPORT", ""))
    ]
    return (
        "give the billing-detail CSV of the month to reconcile"
        + (f", exported {' or '.join(where)}" if where else ", exported from the cloud's console")
        + "; docs/cost-reports.md (The bill, reconciled) names the columns read"
    )


PRODUCT_CATEGORY = (  # what a bill line is when no declared resource says it (product name words, both languages;
    # a cloud's own product names are its pricing module's BILL_PRODUCTS: category -> words, checked in this order)
    (("云盘", "云硬盘", "块存储", "cloud disk", "block storage", "快照", "snapshot"), "disk"),
    (("nat",), "nat"),
    (("负载均衡", "load balancer"), "load_balancer"),
    (("弹性公网", "eip", "公网", "bandwidth", "traffic", "流量"), "bandwidth"),
    (("云服务器", "gpu"), COMPUTE),
)


class BillLine(Struct, frozen=True):
    row: int
    instance_id: str
    name: str
    tags: dict[str, str]
    product: str
    detail: str
    region: str
    amount: Decimal
    cycle: str = ""  # the billing cycle (YYYY-MM) when the bill has the column
    same_as: int | None = None  # an earlier row equal to this one in every column (an export joined twice?)


class Match(Struct):
    resource: str  # the declared resource's name, or "" for a stack-level (tag) match; a category group's label
    category: str  # a resource's category (its compute, else its first line's); a group: its label (`gpu_compute + disk`)
    estimate: Decimal = Decimal(0)
    estimate_complete: bool = True
    bill: Decimal = Decimal(0)
    lines: list[int] = field(default_factory=list)
    how: str = ""

    @property
    def variance(self) -> Decimal:
        """bill - estimate; against an estimate that is a lower bound, the most the variance can be."""
        return money(self.bill - self.estimate)

    def variance_text(self) -> str:
        """The variance as a change reads (figures.change): `+38.29`, or `at most +38.29` when the estimate is a lower
        bound (a line without a price is left out of it, so the bill is at most that much above it)."""
        v = self.variance
        return figures.change(v, v, v) if self.estimate_complete else figures.change(None, None, v)


class Shared(Struct, frozen=True):
    """A cost the stacks declaring it share (view.shared): one bill, not this stack's own."""

    resource: str
    component: str
    category: str
    estimate: Decimal | None  # the whole cost, as this stack's estimate prices it (None: unpriced)
    part: Decimal | None  # this stack's allocation, as `cost report --all` makes it (None: not priced, or not known)
    stacks: tuple[str, ...] | None  # the stacks declaring it (None: not known, Result.notes says why)


class Result(Struct):
    stack: str
    cloud: str
    currency: str
    columns: dict[str, str]  # role -> the header read
    resources: list[Match]
    categories: dict[str, Match]  # a group's label (`gpu_compute + disk`) -> its estimate and bill
    undeclared: list[BillLine]
    not_billed: list[str]  # declared resources with a cost of their own and no bill line
    cycle: str = ""  # the billing cycle reconciled (YYYY-MM), "" when the bill has no cycle column
    repeated: list[tuple[int, int]] = field(default_factory=list)  # (row, the earlier row it repeats in every column)
    shared: list[Shared] = field(default_factory=list)
    allocate: str = "evenly"  # how `cost report --all` splits a shared cost (the part shown)
    notes: list[str] = field(default_factory=list)  # e.g. why no part of the shared costs is known


# gpufleet's own cap on a bill export: a month of line items of a fleet's resources is far smaller (the caps of the
# other inputs are 10 MiB; the traffic trace's 1 GiB)
MAX_BILL_BYTES = 1024 * 1024 * 1024


def _decode(raw: bytes, shown: str) -> str:
    for enc in ("utf-8-sig", "gb18030"):
        try:
            return raw.decode(enc)
        except UnicodeDecodeError:
            continue
    raise UserError([Problem(shown, "", "not UTF-8 or GB18030 text: export the bill as CSV")])


def _tags(text: str) -> dict[str, str]:
    out = {}
    for part in text.replace("；", ";").split(";"):
        k, sep, v = part.strip().rpartition(":") if part.count(":") > 1 else part.strip().partition(":")
        if sep:
            out[k.strip()] = v.strip()
    return out


def _rows(text: str, shown: str) -> list[list[str]]:
    """The CSV's rows, or a UserError naming the row (and the file's line) the csv module cannot read."""
    return inputs.csv_rows(csv.reader(io.StringIO(text)), shown, "export the billing detail as CSV again")


# A bill line's amount is money to the cent: at most MAX_AMOUNT_DIGITS digits before the decimal point (a quadrillion
# yuan is no bill line; past that the cents no longer fit the 28 significant digits money() rounds in, and a total
# of a million such lines still does).
MAX_AMOUNT_DIGITS = 15


# A comma in an amount groups thousands (`1,234.50`, as both vendors' exports write it); any other comma is a decimal
# comma (`9,98`, `1.234,50` from a spreadsheet in another locale), which dropping the commas read as 998 and 1.2345.
_GROUPED = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?")


def _amount(cell: str) -> tuple[Decimal | None, str]:
    """(the amount of a bill's amount cell, "") or (None, what is wrong with it); `1,234.50` and a `¥` are read."""
    text = cell.replace("¥", "").replace("￥", "").strip()
    if not text:
        return None, "empty: every bill line has an amount (0 when it cost nothing); export the bill again"
    if "," in text:
        if not _GROUPED.fullmatch(text):
            return None, (
                f"not a number: {cell!r} has a comma that does not group thousands (a decimal comma?); write the "
                "amount with a decimal point (9.98, 1234.50) or export the bill again"
            )
        text = text.replace(",", "")
    try:
        amount = Decimal(text)
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite():
        return None, f"not a number: {cell!r}"
    if amount != 0 and amount.adjusted() >= MAX_AMOUNT_DIGITS:
        return (
            None,
            f"out of range: {cell!r} has more than {MAX_AMOUNT_DIGITS} digits before the decimal point; not a bill amount",
        )
    return amount, ""


# A billing cycle is a calendar month, as both vendors' exports write it (Alibaba BillingCycle / 账期 and Tencent
# Bill Month / 账单月份: 2026-11).
CYCLE_FORM = "a month written YYYY-MM, e.g. 2026-11"


def is_cycle(text: str) -> bool:
    return re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", text) is not None


def one_cycle(lines: list[BillLine], month: str | None, shown: str, column: str) -> tuple[str, list[BillLine]]:
    """(the billing cycle, its lines): the one --month names, else the bill's only one; a bill spanning several cycles
    without --month, or a --month the bill does not have, is a UserError. A bill without a cycle column: ("", all)."""
    if month is not None and not is_cycle(month):
        raise UserError([Problem("--month", "", f"{month!r} is not {CYCLE_FORM}")])
    if not column:
        if month is not None:
            raise UserError([Problem(shown, "header", "has no billing-cycle column: --month cannot select its lines")])
        return "", lines
    cycles = sorted({b.cycle for b in lines})
    if month is None:
        if len(cycles) > 1:
            raise UserError(
                [
                    Problem(
                        shown,
                        column,
                        f"the bill spans {len(cycles)} billing cycles ({', '.join(cycles)}): an estimate is one month; "
                        f"choose one with --month, e.g. --month {cycles[-1]}",
                    )
                ]
            )
        return (cycles[0] if cycles else ""), lines
    if month not in cycles:
        raise UserError(
            [Problem("--month", "", f"{month}: {shown} has no line of it (its {column}: {', '.join(cycles) or 'none'})")]
        )
    return month, [b for b in lines if b.cycle == month]


def read_bill(path: Path | str, cloud: str | None = None) -> tuple[str, dict[str, str], list[BillLine]]:
    """(cloud, role -> header read, lines) of a billing-detail CSV; a UserError naming the missing column."""
    shown = str(path)
    raw = inputs.read_bytes(path, shown, lambda: missing_bill(cloud), MAX_BILL_BYTES)  # built only for a missing bill
    rows = _rows(_decode(raw, shown), shown)
    if not rows:
        raise UserError([Problem(shown, "", "empty: export the billing detail as CSV with its header row")])
    header = [h.strip() for h in rows[0]]
    best: tuple[str, dict[str, str]] | None = None
    for name, roles in formats(cloud).items():
        found = {role: next((h for h in names if h in header), "") for role, names in roles.items()}
        if found["amount"] and (found["id"] or found["name"]):
            best = (name, found)
            break
    if best is None:
        want = "; ".join(
            f"{c}: an amount column ({' | '.join(r['amount'])}) and an instance column ({' | '.join(r['id'] + r['name'])})"
            for c, r in formats(cloud).items()
        )
        raise UserError([Problem(shown, "header", f"not a billing-detail CSV this reads; expected {want}")])
    name, cols = best
    twice = [h for h in cols.values() if h and header.count(h) > 1]  # which copy holds the amount is unclear
    if twice:
        raise UserError(
            [
                Problem(shown, "header", f"column {h!r} appears {header.count(h)} times: keep one and export it again")
                for h in twice
            ]
        )
    idx = {role: header.index(h) for role, h in cols.items() if h}
    lines, problems = [], []
    seen: dict[tuple[str, ...], int] = {}  # a row as written -> its first row number
    for n, r in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in r):
            continue
        if len(r) != len(header):  # an unquoted decimal comma (9980,55) splits the amount: 9980 was read, 55 dropped
            problems.append(
                Problem(
                    shown,
                    f"row {n}",
                    f"has {len(r)} cells, the header has {len(header)}: every row has the header's columns (an "
                    "unquoted decimal comma, 9,98, makes two cells of one amount); export the bill again as CSV, "
                    "amounts written with a decimal point (9.98)",
                )
            )
            continue
        same_as = seen.setdefault(tuple(c.strip() for c in r), n)

        def get(role: str, r: list[str] = r) -> str:
            i = idx.get(role)
            return r[i].strip() if i is not None else ""

        amount, why = _amount(get("amount"))
        if amount is None:
            problems.append(Problem(shown, f"row {n}.{cols['amount']}", why))
            continue
        if cols.get("cycle") and not is_cycle(get("cycle")):
            problems.append(Problem(shown, f"row {n}.{cols['cycle']}", f"not a billing cycle: {get('cycle')!r}; {CYCLE_FORM}"))
            continue
        lines.append(
            BillLine(
                n,
                get("id"),
                get("name"),
                _tags(get("tag")),
                get("product"),
                get("detail"),
                get("region"),
                amount,
                get("cycle"),
                same_as if same_as != n else None,
            )
        )
    if problems:
        raise UserError(problems)
    if not lines:  # a header alone reconciled every declared resource against a bill of 0.00
        raise UserError([Problem(shown, "", "no bill lines under the header: export the billing detail of the month")])
    return name, {k: v for k, v in cols.items() if v}, lines


def _category(line: BillLine, own: dict[str, tuple[str, ...]]) -> str:
    text = f"{line.product} {line.detail}".lower()
    return next((cat for words, cat in PRODUCT_CATEGORY if any(w in text for w in words + own.get(cat, ()))), "other")


def _declared_names(resources: list[dict]) -> dict[str, str]:
    """Every name a bill can show for a declared resource -> the resource: its own name and the instance / node name
    it declares (instanceName, the node name of a scaling configuration, clbName, name)."""
    out: dict[str, str] = {}
    for r in resources:
        out.setdefault(r["name"], r["name"])
        inputs = r.get("inputs") or {}
        settings = inputs.get("instanceNameSettings") or {}
        for v in (
            *(inputs.get(k) for k in ("instanceName", "name", "clbName", "loadBalancerName", "natGatewayName", "addressName")),
            settings.get("instanceName") if isinstance(settings, dict) else None,
        ):
            if isinstance(v, str) and v:
                out.setdefault(v, r["name"])
    return out


def _by_name(names: dict[str, str], name: str) -> str | None:
    """The declared resource a bill's instance name is: the same name, else the longest declared name it starts with
    followed by a separator (an autoscaled node's name with the suffix the scaling group adds)."""
    if not name:
        return None
    if name in names:
        return names[name]
    hits = [n for n in names if len(n) >= 8 and name.startswith(n) and name[len(n)] in "-._0123456789"]
    return names[max(hits, key=len)] if hits else None


def _by_product(line: BillLine, resources: list[dict], own_types: dict[str, tuple[str, ...]]) -> str | None:
    """The declared resource a tagged bill line without a name or id of this stack is: the stack's one resource of a
    type whose product names the line's product names (BILL_TYPES), else None (none, or several of that type)."""
    text = f"{line.product} {line.detail}".lower()
    types = [t for t, words in own_types.items() if any(w in text for w in words)]
    hits = [r["name"] for r in resources if r["type"] in types]
    return hits[0] if len(hits) == 1 else None


def _groups(estimated: dict[str, set[str]], billed: dict[str, set[str]]) -> dict[str, str]:
    """category -> the label of the categories compared together. A resource whose bill lines do not name every
    category of its estimate (the nodes' ECS line holds their disks; the CLB's line its traffic) is billed whole: its
    categories and its lines' are one group."""
    group = {c: frozenset([c]) for c in CATEGORIES}
    for res, cats in billed.items():
        own = estimated.get(res, set())
        if own and not own <= cats:
            joined = frozenset().union(*(group[c] for c in own | cats))
            for c in joined:
                group[c] = joined
    return {c: " + ".join(x for x in CATEGORIES if x in g) for c, g in group.items()}


def reconcile(
    stack: str,
    e: Estimate,
    resources: list[dict],
    fleet_tag: str,
    lines: list[BillLine],
    cloud: str,
    columns,
    shared_parts: dict[tuple, tuple[object, list[str], dict[str, Decimal]]] | None = None,
) -> Result:
    """shared_parts: allstacks.shared_parts of the project's stacks with this one (None: no allocation known)."""
    names = _declared_names(resources)
    pricing = registry.module(cloud, "pricing")
    own = getattr(pricing, "BILL_PRODUCTS", {})
    ids = {str(r.get("id")): r["name"] for r in resources if r.get("id")}
    mine = [l for l in e.lines if not view.shared(l)]  # shared costs are listed apart, with this stack's part
    by_res: dict[str, Match] = {}
    estimated: dict[str, set[str]] = {}
    for l in mine:
        m = by_res.setdefault(l.resource_name, Match(l.resource_name, l.category))
        estimated.setdefault(l.resource_name, set()).add(l.category)
        if l.monthly_cost is None:
            m.estimate_complete = False
        else:
            m.estimate += l.monthly_cost
        if l.category == COMPUTE:
            m.category = COMPUTE
    stack_level: dict[str, Match] = {}
    undeclared = []
    billed: dict[str, set[str]] = {}  # resource -> the categories its bill lines name
    bill_cats: dict[str, Decimal] = {c: Decimal(0) for c in CATEGORIES}
    for b in lines:
        res = _by_name(names, b.name) or ids.get(b.instance_id)
        how = "instance name" if _by_name(names, b.name) else "instance id" if b.instance_id in ids else ""
        tagged = b.tags.get("gpufleet:fleet") == fleet_tag
        if res is None and tagged and (res := _by_product(b, resources, getattr(pricing, "BILL_TYPES", {}))):
            how = "tag and product"
        cat = _category(b, own)
        if res is not None:
            m = by_res.setdefault(res, Match(res, cat))
            cat = cat if cat != "other" else m.category
            billed.setdefault(res, set()).add(cat)
        elif tagged:
            m = stack_level.setdefault(cat, Match("", cat, how="tag gpufleet:fleet"))
            how = "tag gpufleet:fleet"
        else:
            undeclared.append(b)
            continue
        bill_cats[cat] += b.amount
        m.bill += b.amount
        m.lines.append(b.row)
        m.how = m.how or how
    matched = [m for m in by_res.values() if m.lines or m.estimate]
    # per category, like with like: the estimate's own lines and the bill's, grouped where a bill line holds several
    label = _groups(estimated, billed)
    cats: dict[str, Match] = {}
    for c in CATEGORIES:
        g = cats.setdefault(label[c], Match(label[c], label[c]))
        g.bill += bill_cats[c]
    for name, g in cats.items():
        a = amount([l for l in mine if label[l.category] == name])
        g.estimate, g.estimate_complete = a.value, a.complete
    cats = {k: g for k, g in cats.items() if g.bill or any(label[l.category] == k for l in mine)}
    not_billed = [m.resource for m in matched if not m.lines and m.estimate > 0]
    repeated = [(b.row, b.same_as) for b in lines if b.same_as is not None]  # counted, and said
    r = Result(
        stack, cloud, e.currency, dict(columns), [*matched, *stack_level.values()], cats, undeclared, not_billed, "", repeated
    )
    r.shared = shared_lines(stack, e, shared_parts)
    return r


def shared_lines(stack: str, e: Estimate, parts: dict | None) -> list[Shared]:
    """The estimate's shared lines, each with this stack's part of it as `cost report --all` allocates it."""
    out = []
    for l in e.lines:
        if not view.shared(l):
            continue
        _, users, split = (parts or {}).get(view.shared_key(e, l), (None, [stack], {}))
        stacks = None if parts is None else tuple(users)  # no allocation known: nor which stacks declare it
        out.append(Shared(l.resource_name, l.component, l.category, l.monthly_cost, split.get(stack), stacks))
    return out


def allocation(own: allstacks.StackCost, cloud: str, region: str, rule: str = "evenly") -> tuple[dict | None, str]:
    """(allstacks.shared_parts over this stack, already priced, and the project's stacks that may share a cost with
    it, a note): only the other stacks of its cloud and region (allstacks.may_share) are priced. One of them that
    cannot be read or priced leaves the allocation unknown (None) with a note naming its file, not an error: it is not
    this stack's input (`cost report --all` and `cost budget` refuse it)."""
    stack = own.stack
    names, unread = allstacks.may_share(stack, cloud, region)
    try:
        others = allstacks.price_all(names)
    except UserError as exc:
        unread += exc.problems
    if unread:
        files = ", ".join(dict.fromkeys(p.file for p in unread))
        why = f"{unread[0].path}: {unread[0].message}" if unread[0].path else unread[0].message
        return None, (
            f"no part of the shared costs: {files} cannot be read or validated ({why}), and may declare them too; "
            f"correct it (gpufleet check names what is wrong) to see this stack's part as `cost report --all` allocates it"
        )
    listed = loader.stack_names()  # in `cost report --all`'s order (the rounding cent goes to the last stack)
    order = {n: i for i, n in enumerate([*listed, *([] if stack in listed else [stack])])}
    return allstacks.shared_parts(sorted([own, *others], key=lambda c: order[c.stack]), rule), ""


def run(stack: str, bill: Path | str, month: str | None = None) -> Result:
    fleet, e = stack_estimate(stack)
    cloud, columns, lines = read_bill(bill, fleet.spec.cloud)
    cycle, lines = one_cycle(lines, month, str(bill), columns.get("cycle", ""))
    resources = for_stack(stack).resources
    shares = any(view.shared(l) for l in e.lines)  # else no other stack is read
    own = allstacks.StackCost(stack, dict(fleet.spec.tags), e)  # priced once: the estimate reconciled is the one allocated
    parts, note = allocation(own, fleet.spec.cloud, fleet.spec.region) if shares else ({}, "")
    r = reconcile(stack, e, resources, naming.base(fleet.spec), lines, cloud, columns, parts)
    r.cycle = cycle
    r.notes += [note] if note else []
    return r


def as_json(r: Result) -> dict:
    def m(x: Match) -> dict:
        return {
            "resource": x.resource or None,
            "category": x.category,
            "estimate": str(money(x.estimate)),
            "estimate_complete": x.estimate_complete,
            "bill": str(money(x.bill)),
            "variance": str(x.variance),
            "bill_rows": x.lines,
            "matched_by": x.how or None,
        }

    return {
        "stack": r.stack,
        "cloud": r.cloud,
        "currency": r.currency,
        "billing_cycle": r.cycle or None,
        "columns": r.columns,
        "resources": [m(x) for x in r.resources],
        # like with like: categories one bill line holds together are one group (`gpu_compute + disk`)
        "categories": {c: {**m(x), "categories": c.split(" + ")} for c, x in r.categories.items()},
        "shared": [
            {
                "resource": x.resource,
                "component": x.component,
                "category": x.category,
                "estimate": None if x.estimate is None else str(x.estimate),
                "allocated_to_stack": None if x.part is None else str(x.part),
                "allocate": r.allocate,
                "stacks": None if x.stacks is None else list(x.stacks),
            }
            for x in r.shared
        ],
        "undeclared": [
            {"row": b.row, "instance_id": b.instance_id, "name": b.name, "product": b.product, "amount": str(b.amount)}
            for b in r.undeclared
        ],
        "not_billed": r.not_billed,
        "repeated_rows": [{"row": row, "same_as": first} for row, first in r.repeated],
        "notes": r.notes,
        "money_format": "decimal strings",
    }


def text(r: Result) -> str:
    cur = r.currency
    out = [
        f"{r.stack}: estimate vs bill ({r.cloud}, {cur}/month{', billing cycle ' + r.cycle if r.cycle else ''}; columns read: "
        + ", ".join(f"{k}={v}" for k, v in r.columns.items())
        + ")"
    ]
    out.append(f"{'resource':38} {'category':14} {'estimate':>12} {'bill':>12} {'variance':>17}  matched by")
    for x in r.resources:
        est = figures.at_least(money(x.estimate), x.estimate_complete)
        name = x.resource or f"(tagged {x.category})"
        out.append(f"{name:38} {x.category:14} {est:>12} {money(x.bill)!s:>12} {x.variance_text():>17}  {x.how or '-'}")
    out.append("per category (categories one bill line holds together are compared together; shared costs below):")
    width = max([14, *(len(c) for c in r.categories)])
    for c, x in r.categories.items():
        est = figures.at_least(money(x.estimate), x.estimate_complete)
        out.append(f"  {c:{width}} estimate {est:>12}  bill {money(x.bill)!s:>12}  variance {x.variance_text():>17}")
    if r.shared:
        out.append(
            f"shared costs (one bill for the stacks declaring them, not in the rows above; this stack's part as `cost "
            f"report --all` allocates it, {r.allocate}):"
        )
        for sh in r.shared:
            whole = figures.UNPRICED if sh.estimate is None else str(sh.estimate)
            if sh.stacks is None:
                out.append(f"  {sh.resource}: {sh.component} ({sh.category}): {whole}; this stack's part not known (note below)")
                continue
            part = "no part while unpriced" if sh.part is None else f"this stack's part {sh.part}"
            n = f"{len(sh.stacks)} stack{'s' if len(sh.stacks) != 1 else ''}"
            out.append(f"  {sh.resource}: {sh.component} ({sh.category}): {whole}, declared by {n}; {part}")
    if r.undeclared:
        out.append(f"{len(r.undeclared)} bill line(s) no stack declares:")
        out += [f"  row {b.row}: {b.product} {b.instance_id} {b.name} {b.amount}" for b in r.undeclared]
    if r.not_billed:
        out.append("estimated but not on the bill: " + ", ".join(r.not_billed))
    if r.repeated:
        pairs = ", ".join(f"row {row} = row {first}" for row, first in r.repeated[:10])
        more = f" and {len(r.repeated) - 10} more" if len(r.repeated) > 10 else ""
        out.append(
            f"{len(r.repeated)} row(s) repeat an earlier row in every column, and are counted again ({pairs}{more}): "
            "if the export was joined twice, export the month again"
        )
    out += [f"note: {n}" for n in r.notes]
    return "\n".join(out) + "\n"
