"""`gpufleet cost estimate|compare|diff` and `gpufleet catalog build|refresh` (all offline but refresh)."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any, Literal

import typer

from gpufleet import registry
from gpufleet.cli import options, renderers
from gpufleet.errors import Problem, UserError, console
from gpufleet.files import output_problems

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

cost_app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="Monthly cost of what a stack declares, from the dated price catalog.\n\n"
    "\b\nExamples:\n"
    "  gpufleet cost estimate --stack alicloud-cn-hangzhou-prod\n"
    "  gpufleet cost compare --stack alicloud-cn-hangzhou-prod\n"
    "  gpufleet cost commit --stack alicloud-cn-hangzhou-prod",
)
catalog_app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="The price catalogs: shipped in cost/data/, your account's in the project's cost/catalog/.\n\n\b\nExamples:\n  gpufleet catalog build --cloud alicloud --date 2026-12-03",
)
FORMATS = ("table", "csv", "json", "xlsx", "html")


def _all_stacks() -> list[str]:
    from gpufleet.stacks.loader import stack_names

    return stack_names()


def _registered_clouds() -> tuple[str, ...]:
    return registry.names()


# Options that several cost commands take, declared once (each call makes the command its own typer.Option).
def _usage() -> Any:
    return typer.Option(
        None,
        "--usage",
        metavar="FILE",
        parser=options.file_name,
        help="usage profile YAML on top of the stack's own (its `gpufleet:usage` key)",
    )


def _discounts() -> Any:
    return typer.Option(
        None,
        "--discounts",
        metavar="FILE",
        parser=options.file_name,
        help="negotiated rates: discounts: [{match, billing, factor}]",
    )


def _currency() -> Any:
    return typer.Option(None, "--currency", metavar="CUR", help="show the figures in USD (with --fx), each labelled as converted")


def _fx() -> Any:
    return typer.Option(
        None, "--fx", metavar="RATE@DATE", help="CNY per USD and its date, e.g. 7.12@2026-12-01 (no rate ships here)"
    )


@cost_app.command("estimate")
def estimate_cmd(
    stack: str = options.stack(),
    usage_file: str | None = _usage(),
    discounts_file: str | None = _discounts(),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
    budget: str | None = typer.Option(
        None, "--budget", metavar="AMOUNT", help="exit 1 when the monthly total is above AMOUNT (or not complete)"
    ),
    allow_unpriced: bool = typer.Option(
        False, "--allow-unpriced", help="with --budget: check the lower bound of a total with unpriced lines instead of failing"
    ),
    currency: str | None = _currency(),
    fx_rate: str | None = _fx(),
) -> None:
    """The stack's monthly cost, line by line, with what each price rests on.

    A line without a price or quantity is shown and left out of the total, which then reads ≥ X.
    Exit 1: over --budget, or --budget with an incomplete total (unless --allow-unpriced). Exit 2: bad input.

    \b
    Examples:
      gpufleet cost estimate --stack alicloud-cn-hangzhou-prod
      gpufleet cost estimate -s alicloud-cn-hangzhou-prod --format xlsx -o prod.xlsx
      gpufleet cost estimate -s alicloud-cn-hangzhou-prod --budget 25000 --allow-unpriced --json
      gpufleet cost estimate -s alicloud-cn-hangzhou-prod --currency USD --fx 7.12@2026-12-01
    """
    from gpufleet.cost import budget as budgets
    from gpufleet.finance import exports, report

    chosen = options.chosen_format(fmt, as_json, FORMATS, out, options.inputs(out, [stack], usage_file, discounts_file))
    limit = budgets.parse(budget)
    if allow_unpriced and limit is None:  # it changes only the --budget check: alone it was ignored
        raise UserError([Problem("--allow-unpriced", "", "give --budget too (e.g. --budget 25000 --allow-unpriced)")])
    from gpufleet.cost import fx
    from gpufleet.finance.stack import stack_estimate

    fleet, est = stack_estimate(stack, usage_file, discounts_file)
    est = fx.convert(est, fx.parse(currency, fx_rate, est.currency))
    renderers.render(
        chosen,
        out,
        table=renderers.Text(lambda: _table_text(lambda c: report.estimate_table(est, c), out)),
        json=renderers.Json(lambda: report.estimate_json(est), ensure_ascii=False),
        csv=renderers.Text(lambda: exports.estimate_csv(est)),
        xlsx=renderers.Text(lambda: _xlsx(lambda buf: exports.estimate_xlsx(est, buf))),
        html=renderers.Text(lambda: exports.estimate_html(est)),
    )
    if limit is not None:
        verdict = budgets.check(est, limit, allow_unpriced)
        console(stderr=True).print(verdict.message, soft_wrap=True)
        if not verdict.ok:
            raise typer.Exit(1)


def _table_text(draw, out: Path | None) -> str:
    """A rich table as text, as wide as the terminal (200 columns in a file or a pipe: money is never cut)."""
    buf = io.StringIO()
    draw(console(file=buf, width=console().width if out is None else 200))
    return buf.getvalue()


def _xlsx(write) -> bytes:
    buf = io.BytesIO()
    write(buf)
    return buf.getvalue()


@cost_app.command("compare")
def compare_cmd(
    stack: str = options.stack(),
    clouds: str | None = typer.Option(
        None, "--clouds", metavar="LIST", help="comma-separated clouds to price on (default: every registered cloud)"
    ),
    billing: str = typer.Option(
        "payg,monthly,yearly,spot",
        "--billing",
        metavar="LIST",
        help="comma-separated billing models: payg, monthly, yearly, spot",
    ),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
    usage_file: str | None = _usage(),
    discounts_file: str | None = _discounts(),
    currency: str | None = _currency(),
    fx_rate: str | None = _fx(),
) -> None:
    """The same fleet re-declared for each cloud and billing model, priced the same way.

    \b
    Examples:
      gpufleet cost compare --stack alicloud-cn-hangzhou-prod
      gpufleet cost compare -s alicloud-cn-hangzhou-prod --billing payg,yearly --format xlsx -o q3.xlsx
      gpufleet cost compare -s alicloud-cn-hangzhou-prod --clouds tencentcloud --format html -o compare.html
    """
    from gpufleet.cost import estimate, usage
    from gpufleet.finance import compare, exports, report

    chosen = options.chosen_format(fmt, as_json, FORMATS, out, options.inputs(out, [stack], usage_file, discounts_file))
    cloud_list = [c.strip() for c in clouds.split(",") if c.strip()] if clouds is not None else list(_registered_clouds())
    billing_list = [b.strip() for b in billing.split(",") if b.strip()]
    problems = []
    if not cloud_list:
        problems.append(Problem("--clouds", "", f"names no cloud ({clouds!r}); e.g. {','.join(_registered_clouds())}"))
    if not billing_list:
        problems.append(Problem("--billing", "", f"names no billing model ({billing!r}); e.g. payg,monthly"))
    if problems:
        raise UserError(problems)
    from gpufleet.cost import fx

    rate = fx.parse(currency, fx_rate)
    found = compare.compare(
        stack, cloud_list, billing_list, usage.load(stack, usage_file), estimate.load_discounts(discounts_file)
    )
    for o in found:
        o.estimate = fx.convert(o.estimate, rate) if o.estimate is not None else None
    renderers.render(
        chosen,
        out,
        table=renderers.Text(lambda: _table_text(lambda c: report.compare_table(stack, found, c), out)),
        json=renderers.Json(lambda: compare.as_json(stack, found), ensure_ascii=False),
        csv=renderers.Text(lambda: exports.compare_csv(stack, found)),
        xlsx=renderers.Text(lambda: _xlsx(lambda buf: exports.compare_xlsx(stack, found, buf))),
        html=renderers.Text(lambda: exports.compare_html(stack, found)),
    )


DIFF_FORMATS = ("table", "json", "markdown")


@cost_app.command("diff")
def diff_cmd(
    stacks: list[str] = typer.Option(
        ...,
        "--stack",
        "-s",
        help="twice: A then B; once with --baseline: B (a name or a Pulumi.<name>.yaml path)",
        callback=lambda v: [options.resolve_stack(x) for x in v],
        metavar="NAME|PATH",
    ),
    baseline: Path | None = typer.Option(
        None,
        "--baseline",
        parser=options.path,
        help="A = a saved `gpufleet cost estimate --format json -o FILE.json`",
        metavar="FILE.json",
    ),
    usage_file: str | None = typer.Option(
        None, "--usage", parser=options.file_name, help="usage profile YAML for the stacks priced now"
    ),
    fmt: str = options.fmt(DIFF_FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
) -> None:
    """What changes in cost (B minus A): per category with %, per scenario, line by line. Unpriced deltas are named,
    never counted as savings.

    \b
    Examples:
      gpufleet cost diff --stack alicloud-cn-hangzhou-dev --stack alicloud-cn-hangzhou-prod
      # before a change, save A: gpufleet cost estimate -s alicloud-cn-hangzhou-prod --format json -o before.json
      gpufleet cost diff --stack alicloud-cn-hangzhou-prod --baseline before.json --format markdown
    """
    from gpufleet.cost import diff
    from gpufleet.finance import report
    from gpufleet.finance.stack import stack_estimate

    chosen = options.chosen_format(fmt, as_json, DIFF_FORMATS, output, options.inputs(output, stacks, baseline, usage_file))
    want = 1 if baseline is not None else 2
    if len(stacks) != want:
        hint = "with --baseline give one --stack (B)" if baseline is not None else "give --stack twice (A then B), or --baseline"
        raise UserError([Problem("--stack", "", f"{hint}; got {len(stacks)}")])
    a = diff.load_baseline(baseline) if baseline is not None else stack_estimate(stacks[0], usage_file)[1]
    b = stack_estimate(stacks[-1], usage_file)[1]
    result = diff.run(a, b, str(baseline) if baseline is not None else "--stack")
    renderers.render(
        chosen,
        output,
        json=renderers.Json(lambda: report.diff_json(result), ensure_ascii=False),
        markdown=renderers.Text(lambda: report.diff_markdown(result)),
        table=renderers.Draw(lambda c: report.diff_table(result, c), file_width=100),
    )


COMMIT_FORMATS = ("table", "json")


@cost_app.command("commit")
def commit_cmd(
    stack: str = options.stack(),
    fmt: str = options.fmt(COMMIT_FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
) -> None:
    """Which nodes to subscribe (monthly / yearly) and which to leave pay-as-you-go or spot, from the schedules:
    hours a month per node, the break-even utilisation, the upfront cash of a yearly term, and the `billing:` block
    (validated) or what the spec cannot express.

    \b
    Examples:
      gpufleet cost commit --stack alicloud-cn-hangzhou-prod
      gpufleet cost commit --stack tencentcloud-ap-guangzhou-prod --json
    """
    from gpufleet.finance import commitment, report

    chosen = options.chosen_format(fmt, as_json, COMMIT_FORMATS, output, options.inputs(output, [stack]))
    plan = commitment.plan_stack(stack)
    renderers.render(
        chosen,
        output,
        json=renderers.Json(lambda: commitment.as_json(plan), ensure_ascii=False),
        table=renderers.Draw(lambda c: report.commit_table(plan, c), file_width=100),
    )


TOKEN_FORMATS = ("table", "json")


@cost_app.command("tokens")
def tokens_cmd(
    stack: str = options.stack(),
    from_loadtest: Path = typer.Option(
        ...,
        "--from-loadtest",
        metavar="FILE",
        parser=options.path,
        help="a result file of `gpufleet loadtest --save-json FILE` (or --json -o FILE)",
    ),
    utilization: str = typer.Option(
        "0.3,0.5,0.8",
        "--utilization",
        metavar="LIST",
        help="average load as fractions of the knee's throughput, each 0.01 to 1 (the knee itself is always shown), "
        "e.g. 0.3,0.5,0.8",
    ),
    peak_qps: float | None = options.real(
        None,
        "--peak-qps",
        metavar="QPS",
        help="requests/s at the busiest time: the node count `plan capacity` would buy and its monthly cost",
    ),
    redundancy: int | None = typer.Option(
        None, "--redundancy", metavar="N", help="with --peak-qps: spare nodes above the peak (N+K), as plan capacity (default 1)"
    ),
    usage_file: str | None = _usage(),
    discounts_file: str | None = _discounts(),
    fmt: str = options.fmt(TOKEN_FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
) -> None:
    """Cost per million output tokens and per request, for each billing model, from a load test of one node.

    Node monthly cost (instance and disks, from the catalog) / (output tokens/s x utilisation x 730 h x 3600 s) x 10^6,
    at the load test's knee and at each --utilization. Warns when the load test was run on another instance type,
    GPU or serving flags than the stack has now. Exit 2: bad input.

    \b
    Examples:
      gpufleet cost tokens -s alicloud-cn-hangzhou-prod --from-loadtest examples/loadtest-example.json
      gpufleet cost tokens -s alicloud-cn-hangzhou-prod --from-loadtest examples/loadtest-example.json --peak-qps 40
      gpufleet cost tokens -s alicloud-cn-hangzhou-prod --from-loadtest lt.json --utilization 0.2,0.6 --json
    """
    from gpufleet import plan
    from gpufleet.cost import catalog as pricecat
    from gpufleet.cost import estimate, usage
    from gpufleet.finance import tokens
    from gpufleet.inputs import read_json_object

    chosen = options.chosen_format(
        fmt, as_json, TOKEN_FORMATS, out, options.inputs(out, [stack], from_loadtest, usage_file, discounts_file)
    )
    if redundancy is not None and peak_qps is None:  # it sizes the --peak-qps fleet only: alone it was ignored
        raise UserError([Problem("--redundancy", "", "give --peak-qps too (e.g. --peak-qps 40 --redundancy 2)")])
    redundancy = 1 if redundancy is None else redundancy
    utilisations = tokens.parse_utilisation(utilization)
    shown = str(from_loadtest)
    result = read_json_object(from_loadtest, "write one with `gpufleet loadtest ... --save-json FILE`")
    t = tokens.throughput(result, shown)
    fleet = plan.for_stack(stack).fleet
    nodes = tokens.node_months(stack, usage.load(stack, usage_file), estimate.load_discounts(discounts_file))
    rows = [(n, tokens.points(n, t, utilisations)) for n in nodes]
    from gpufleet.finance.compare import spot_base

    pk = tokens.peak(peak_qps, t, nodes, redundancy, spot_base(fleet.spec, "spot")) if peak_qps is not None else None
    warns = tokens.warnings(result, shown, fleet)
    currency = pricecat.load(fleet.spec.cloud, fleet.spec.region).currency
    renderers.render(
        chosen,
        out,
        json=renderers.Json(lambda: tokens.as_json(stack, currency, shown, t, rows, pk, warns), ensure_ascii=False),
        table=renderers.Text(lambda: lambda buf: _tokens_table(buf, out, stack, fleet, currency, shown, t, rows, pk, warns)),
    )


def _width(out: Path | None) -> int:
    """Columns for the tables of tokens and report: the terminal's (or $COLUMNS), else 100 (a file, a pipe)."""

    if out is None and (sys.stdout.isatty() or os.environ.get("COLUMNS")):
        return console().width
    return 100


def _tokens_table(buf, out, stack, fleet, currency, shown, t, rows, pk, warns) -> None:
    from rich.table import Table
    from rich.text import Text

    from gpufleet.cost import figures

    c = console(file=buf, width=_width(out))
    title = f"{stack}: one {fleet.instance_type.type} node ({fleet.spec.gpu.count}x {fleet.spec.gpu.kind}), {currency}"
    tab = Table(title=title)
    columns: tuple[tuple[str, Literal["left", "right"]], ...] = (
        ("billing", "left"),
        (f"node {currency}/month", "right"),
        ("load", "left"),
        ("out tok/s", "right"),
        ("per 1M out tok", "right"),
        ("per request", "right"),
    )
    for col, justify in columns:
        tab.add_column(col, justify=justify, no_wrap=justify == "right")
    for n, pts in rows:
        for i, p in enumerate(pts):
            tab.add_row(
                (n.billing + ("*" if n.estimated else "")) if i == 0 else "",
                (str(n.monthly) if n.monthly is not None else "unpriced") if i == 0 else "",
                p.label,
                str(p.output_tokens_per_s),
                figures.rounded(p.per_million, 2) if p.per_million is not None else "-",
                figures.rounded(p.per_request, 6) if p.per_request is not None else "-",
                end_section=i == len(pts) - 1,
            )
    c.print(tab)
    prompt = (f"{t.prompt_tokens:g} prompt tokens" if t.prompt_tokens is not None else "prompt tokens not recorded") + (
        f" ({t.prompt_chars} characters)" if t.prompt_chars is not None else ""
    )
    c.print(
        f"load test {shown}{' (SYNTHETIC)' if t.synthetic else ''}: {prompt}, {t.output_tokens_per_request} output tokens per "
        f"request"
        + (f" (max_tokens {t.max_tokens})" if t.max_tokens is not None else "")
        + f"; {t.how}: {t.requests_per_s} requests/s, {t.output_tokens_per_s} output tokens/s",
        soft_wrap=False,
    )
    c.print(
        f"per 1M output tokens = node {currency}/month / (output tokens/s x load x {tokens_seconds()} s) x 10^6; "
        "node = instance + its own disks (not the load balancer, NAT, traffic or shared costs); * = rests on an estimated price"
    )
    for n, _ in rows:
        if n.problem:
            c.print(Text(f"{n.billing}: {n.problem}", "yellow"))
    if pk is not None:
        costs = ", ".join(f"{b} {v if v is not None else 'unpriced'}" for b, v in pk.monthly.items())
        if pk.spot_on_demand_base:
            costs += f" (spot: {pk.spot_on_demand_base} of the {pk.nodes} nodes pay-as-you-go, the spec's on-demand base)"
        c.print(
            f"peak {pk.peak_qps:g} QPS: {pk.nodes} nodes (plan capacity, N+{pk.plan['redundancy']}, "
            f"{pk.plan['qps_per_node']:g} QPS per node); {currency}/month for them: {costs}"
        )
    for w in warns:
        c.print(Text.assemble(("warning", "yellow"), f" {w}"))


def tokens_seconds() -> str:
    from gpufleet.finance.tokens import SECONDS_PER_MONTH

    return f"{SECONDS_PER_MONTH:,}"


REPORT_FORMATS = ("table", "json", "csv")


@cost_app.command("report")
def report_cmd(
    all_stacks: bool = typer.Option(False, "--all", help="every stack of the project (stacks/Pulumi.*.yaml)"),
    by: str = typer.Option("team", "--by", metavar="TAG", help="group by this tag of the stacks' specs: team | cost-center"),
    allocate_by: str = typer.Option(
        "evenly", "--allocate", metavar="RULE", help="split each shared cost across its stacks: evenly | node-hours"
    ),
    fmt: str = options.fmt(REPORT_FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
) -> None:
    """Monthly cost of all stacks, grouped by the `team` or `cost-center` tag of their specs.

    Shared costs are counted once and allocated to the stacks that declare them (--allocate).

    Each stack is priced as `cost estimate` prices it; a stack without the tag is grouped as untagged. Costs that
    stacks of one cloud and region share (KMS instance, model bucket, image snapshots) are counted once, in their own
    row. Exit 1 when a stack cannot be priced (it is named; the totals are lower bounds); exit 2 on bad input (a stack
    file or usage profile that `gpufleet check` refuses, too).

    \b
    Examples:
      gpufleet cost report --all
      gpufleet cost report --all --by cost-center --format csv -o by-cost-center.csv
    """
    from gpufleet.errors import did_you_mean
    from gpufleet.finance import allstacks

    chosen = options.chosen_format(fmt, as_json, REPORT_FORMATS, out, options.inputs(out, _all_stacks()))
    problems = []
    if by not in allstacks.GROUP_TAGS:
        problems.append(
            Problem(
                "--by",
                "",
                f"unknown tag {by!r}" + did_you_mean(by, allstacks.GROUP_TAGS),
            )
        )
    if allocate_by not in allstacks.ALLOCATIONS:
        problems.append(
            Problem("--allocate", "", f"unknown rule {allocate_by!r}" + did_you_mean(allocate_by, allstacks.ALLOCATIONS))
        )
    if not all_stacks:
        problems.append(Problem("--all", "", "give --all: the report covers every stack of the project"))
    if problems:
        raise UserError(problems)
    r = allstacks.report(allstacks.price_all(), by, allocate_by)
    renderers.render(
        chosen,
        out,
        json=renderers.Json(lambda: allstacks.as_json(r), ensure_ascii=False),
        csv=renderers.Text(lambda: allstacks.as_csv(r)),
        table=renderers.Text(lambda: lambda buf: _report_table(buf, out, r)),
    )
    if r.total.unpriced_stacks:
        raise typer.Exit(1)


def _report_table(buf, out, r) -> None:
    from rich.table import Table
    from rich.text import Text

    c = console(file=buf, width=_width(out))
    t = Table(title=f"monthly cost of all stacks by {r.by}, {r.currency}")
    t.add_column(r.by, justify="left")
    for col in ("stacks", "monthly", "with shared", "estimated", "unpriced"):
        t.add_column(col, justify="right", no_wrap=True)
    from gpufleet.finance import allstacks

    for g in allstacks.rows(r):
        last = g is r.total
        own = g is not r.total and g is not r.shared
        t.add_row(
            Text(g.name, "bold" if last else ""),
            str(len(g.stacks)),
            Text(g.total_text(), "bold" if last else ""),
            g.with_shared_text() if own else "",
            f"{g.estimated_share:.0%}",
            f"{g.unpriced_lines} lines" + (f", {g.unpriced_stacks} stacks" if g.unpriced_stacks else "")
            if not g.complete
            else "",
            end_section=g is r.groups[-1] or g is r.shared,
        )
    c.print(t)
    c.print(
        f"with shared = own cost + the group's share of the shared costs (allocated {r.allocate}); estimated: share of the "
        "priced cost resting on an estimated price; ≥ : lines or stacks without a price"
    )
    for g in r.groups:
        c.print(f"  {g.name}: {', '.join(g.stacks)}")
    for n in r.notes:
        c.print(Text.assemble(("note", "yellow"), f" {n}"))


@cost_app.command("budget")
def budget_cmd(
    by: str = typer.Option("team", "--by", metavar="TAG", help="the tag the budgets are per: team | cost-center"),
    budgets_file: Path = typer.Option(
        ..., "--budgets", metavar="FILE", parser=options.path, help="YAML: budgets: {TEAM: monthly amount}"
    ),
    allocate_by: str = typer.Option("evenly", "--allocate", metavar="RULE", help="shared costs: evenly | node-hours"),
    allow_unpriced: bool = typer.Option(
        False, "--allow-unpriced", help="check a team's lower bound when one of its lines has no price"
    ),
    fmt: str = options.fmt(COMMIT_FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
) -> None:
    """Each team's monthly cost (its stacks plus its share of the shared costs, as `cost report --all`) against its
    budget. Exit 1: a team over its budget, or not checked (a line without a price, unless --allow-unpriced), or a
    team with stacks and no budget. Exit 2: bad input (a stack file or usage profile, as `cost report --all`).

    \b
    Examples:
      gpufleet cost budget --by team --budgets examples/budgets-example.yaml --allow-unpriced
      gpufleet cost budget --by cost-center --budgets examples/budgets-example.yaml --allocate node-hours --allow-unpriced
    """
    from gpufleet.cost import teambudget
    from gpufleet.errors import did_you_mean
    from gpufleet.finance import allstacks

    chosen = options.chosen_format(fmt, as_json, COMMIT_FORMATS, out, options.inputs(out, _all_stacks(), budgets_file))
    problems = []
    if by not in allstacks.GROUP_TAGS:
        problems.append(Problem("--by", "", f"unknown tag {by!r}" + did_you_mean(by, allstacks.GROUP_TAGS)))
    if allocate_by not in allstacks.ALLOCATIONS:
        problems.append(
            Problem("--allocate", "", f"unknown rule {allocate_by!r}" + did_you_mean(allocate_by, allstacks.ALLOCATIONS))
        )
    if problems:
        raise UserError(problems)
    limits = teambudget.load(budgets_file)
    r = allstacks.report(allstacks.price_all(), by, allocate_by)
    verdicts = teambudget.check(r, limits, allow_unpriced)
    renderers.render(
        chosen,
        out,
        json=renderers.Json(lambda: teambudget.as_json(r, verdicts), ensure_ascii=False),
        table=renderers.Text(lambda: "".join(f"{v.group}: {v.message}\n" for v in verdicts)),
    )
    if not all(v.ok for v in verdicts):
        raise typer.Exit(1)


@cost_app.command("reconcile")
def reconcile_cmd(
    stack: str = options.stack(),
    bill: Path = typer.Option(
        ..., "--bill", metavar="FILE", parser=options.path, help="the cloud's billing-detail CSV (Alibaba or Tencent export)"
    ),
    month: str | None = typer.Option(
        None, "--month", metavar="YYYY-MM", help="the billing cycle to reconcile (needed when the bill spans several)"
    ),
    fmt: str = options.fmt(COMMIT_FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
) -> None:
    """A month's bill against the stack's estimate: per resource and category the estimate, the bill and the variance,
    and the bill lines no stack declares. Reads Alibaba's and Tencent's billing-detail CSV (English or Chinese
    headers, UTF-8 or GB18030). Exit 2: bad input.

    \b
    Examples:
      gpufleet cost reconcile --stack alicloud-cn-hangzhou-prod --bill examples/bill-alicloud-example.csv
      gpufleet cost reconcile -s tencentcloud-ap-guangzhou-prod --bill examples/bill-tencentcloud-example.csv --json
    """
    from gpufleet.finance import reconcile

    chosen = options.chosen_format(fmt, as_json, COMMIT_FORMATS, out, options.inputs(out, [stack], bill))
    r = reconcile.run(stack, bill, month)
    renderers.render(
        chosen,
        out,
        json=renderers.Json(lambda: reconcile.as_json(r), ensure_ascii=False),
        table=renderers.Text(lambda: reconcile.text(r)),
    )


# The registered clouds as the catalog commands' help lists them ("alicloud | tencentcloud"); their profiles are read
# here, at import: profile modules import nothing but the registry (no SDK, no provider).
CLOUDS_HELP = " | ".join(registry.names())
EVERY_CLOUD = "both" if len(registry.names()) == 2 else "all"


def _credentials_help() -> str:
    """Each cloud's pricing credentials as help says them: ALIBABA_CLOUD_ACCESS_KEY_ID/SECRET (a name after the first
    without the words it shares with the first), the clouds joined by "or"."""

    def said(names: tuple[str, ...]) -> str:
        first, *rest = names
        shared = [os.path.commonprefix([first, n]) for n in rest]
        return "/".join([first, *(n[s.rfind("_") + 1 :] for n, s in zip(rest, shared, strict=True))])

    return registry.spoken(said(p.price_credentials) for c in registry.names() if (p := registry.profile(c)).price_credentials)


IMAGE_PRICED_BY = registry.spoken([p.said for c in registry.names() if (p := registry.profile(c)).prices_take_image], "and")


@catalog_app.command("build")
def build_cmd(
    cloud: str | None = typer.Option(None, "--cloud", metavar="CLOUD", help=f"{CLOUDS_HELP} (default: {EVERY_CLOUD})"),
    today: str | None = typer.Option(
        None, "--date", metavar="YYYY-MM-DD", help="build date written to the files, not after today (default: today)"
    ),
) -> None:
    """Rewrite the shipped catalogs (cost/data/<cloud>-<region>.yaml of a gpufleet checkout) from the sourced facts.

    Offline. A catalog whose prices did not change is left as it is; an installed gpufleet's catalogs are its
    release's (refused: your own prices come from `catalog refresh`). Exit 2: bad input.

    \b
    Examples:
      gpufleet catalog build
      gpufleet catalog build --cloud tencentcloud --date 2026-12-05
    """
    from gpufleet.cost import catalog as pricecat
    from gpufleet.cost import derive
    from gpufleet.errors import did_you_mean
    from gpufleet.stacks.catalog import CLOUDS

    if cloud is not None and cloud not in CLOUDS:
        raise UserError([Problem("--cloud", "", f"unknown cloud {cloud!r}" + did_you_mean(cloud, CLOUDS))])
    built = derive.build_date(today)
    derive.shipped_writable()
    clouds = [cloud] if cloud else list(CLOUDS)
    # every catalog file can be replaced before anything is derived (a read-only folder fails now, not halfway)
    problems = [
        p
        for c in clouds
        for region in derive.load_sources(c)["regions"]
        for p in output_problems(pricecat.catalog_path(c, region), flag="catalog")
    ]
    if problems:
        raise UserError(problems)
    newest = max(derive.derive(c, region, built).as_of for c in clouds for region in derive.load_sources(c)["regions"])
    if built < newest:  # --date 1900-01-01 stamped catalogs built before the prices in them were quoted
        raise UserError(
            [Problem("--date", "", f"{built} is before the newest price in the sources ({newest}): give the day it is built")]
        )
    written = derive.build(clouds, built)  # every cloud's catalogs together: all written or none
    for c in clouds:
        mine = [p for p in written if p.name.startswith(f"{c}-")]
        for p in mine:
            typer.echo(f"wrote {p}")
        if not mine:
            typer.echo(f"{c}: every catalog already says these prices; nothing written")


@catalog_app.command(
    "refresh",
    help=f"""Fetch GPU instance prices from the vendor's pricing API with your credentials ({_credentials_help()})
    and write them to the project's cost/catalog/<cloud>-<region>.yaml with quality `vendor API`; its rows win over
    the shipped catalog's.

    Needs the network and credentials. Exit 1: no price was written; exit 2: bad input.

    \b
    Examples:
      gpufleet catalog refresh --cloud alicloud --region cn-hangzhou
      gpufleet catalog refresh --cloud tencentcloud --region ap-guangzhou
    """,
)
def refresh_cmd(
    cloud: str = typer.Option(..., "--cloud", metavar="CLOUD", help=CLOUDS_HELP),
    region: str = typer.Option(..., "--region", metavar="REGION", help="the region whose catalog is refreshed, e.g. cn-hangzhou"),
    endpoint: str | None = typer.Option(None, "--endpoint", metavar="HOST[:PORT]", help="API endpoint (default: the vendor's)"),
    protocol: str = typer.Option("https", "--protocol", hidden=True),
    image_id: str | None = typer.Option(
        None,
        "--image-id",
        metavar="ID",
        help=f"{IMAGE_PRICED_BY + ': ' if IMAGE_PRICED_BY else ''}image to price with (default: from images/lock.json)",
    ),
) -> None:
    # its help is the command's help= above: it names each cloud's credentials, read from the registry
    from gpufleet.cost import refresh

    res = refresh.refresh(cloud, region, endpoint, protocol, image_id)
    if res.written:
        typer.echo(f"wrote {len(res.written)} vendor API rows to {res.path}")
    for f in res.failed:
        typer.echo(f"  not priced: {f}", err=True)
    if not res.written:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(cost_app, name="cost")
    app.add_typer(catalog_app, name="catalog")
