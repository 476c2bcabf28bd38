"""`gpufleet cost estimate|compare|diff` and `gpufleet catalog build|refresh` (all offline but refresh)."""

from __future__ import annotations

import io
import json
import os
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path

import typer
from rich.console import Console

from gpufleet.cli import options
from gpufleet.errors import Problem, UserError, console
from gpufleet.files import is_stdout, output_problems, write_atomic

cost_app = typer.Typer(
    rich_markup_mode=None, no_args_is_help=True, help="Monthly cost of what a stack declares, from the dated price catalog."
)
catalog_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help="The price catalog in cost/data/.")
FORMATS = ("table", "csv", "json", "xlsx", "html")


def _registered_clouds() -> tuple[str, ...]:
    from gpufleet.components import registry

    return registry.names()


def _console() -> Console:
    # not a terminal: wide enough for any table, unless COLUMNS says how wide (rich reads it then)
    return console(width=200) if not sys.stdout.isatty() and not os.environ.get("COLUMNS") else console()


@cost_app.command("estimate")
def estimate_cmd(
    stack: str = typer.Option(..., "--stack", help="stack name, e.g. alicloud-cn-hangzhou-prod"),
    usage_file: str | None = typer.Option(None, "--usage", help="usage profile YAML overriding cost/usage/<stack>.yaml"),
    discounts_file: str | None = typer.Option(
        None, "--discounts", help="negotiated rates: discounts: [{match, billing, factor}]"
    ),
    as_json: bool = typer.Option(False, "--json", help="print JSON (money as decimal strings)"),
    budget: str | None = typer.Option(None, "--budget", help="exit 1 when the monthly total is above this amount"),
) -> None:
    """The stack's monthly cost, line by line."""
    from gpufleet.cost import report

    limit = None
    if budget is not None:
        try:
            limit = Decimal(budget)
        except InvalidOperation:
            limit = None
        if limit is None or not limit.is_finite() or limit < 0:
            raise UserError([Problem("--budget", "", f"must be a finite number >= 0, not {budget!r}")])
    from gpufleet.plan import stack_estimate

    _, est = stack_estimate(stack, usage_file, discounts_file)
    if as_json:
        typer.echo(json.dumps(report.estimate_json(est), indent=2, ensure_ascii=False))
    else:
        report.estimate_table(est, _console())
    if limit is not None and est.monthly_total > limit:
        console(stderr=True).print(
            f"over budget: monthly total {est.monthly_total} {est.currency} > {limit}"
            + (f" (and {len(est.unpriced)} line(s) without a price are not counted)" if est.unpriced else "")
        )
        raise typer.Exit(1)


@cost_app.command("compare")
def compare_cmd(
    stack: str = typer.Option(..., "--stack"),
    clouds: str | None = typer.Option(None, "--clouds", help="comma-separated; default: every registered cloud"),
    billing: str = typer.Option("payg,monthly,yearly,spot", "--billing"),
    fmt: str = typer.Option("table", "--format", help="table | csv | json | xlsx | html"),
    output: Path | None = typer.Option(None, "-o", "--output", help="file to write (needed for xlsx)"),
    usage_file: str | None = typer.Option(None, "--usage"),
    discounts_file: str | None = typer.Option(None, "--discounts"),
) -> None:
    """The same fleet re-declared for each cloud and billing model, priced the same way."""
    from gpufleet.cost import compare, estimate, report, usage

    if fmt not in FORMATS:
        from gpufleet.errors import did_you_mean

        raise UserError([Problem("--format", "", f"unknown format {fmt!r}" + did_you_mean(fmt, FORMATS))])
    if fmt == "xlsx" and output is None:
        raise UserError([Problem("--format", "", "xlsx is a binary file: give -o FILE.xlsx")])
    cloud_list = [c.strip() for c in clouds.split(",") if c.strip()] if clouds is not None else list(_registered_clouds())
    billing_list = [b.strip() for b in billing.split(",") if b.strip()]
    problems = output_problems(output) if output else []
    if not cloud_list:
        problems.append(Problem("--clouds", "", f"names no cloud ({clouds!r}); e.g. alicloud,tencentcloud"))
    if not billing_list:
        problems.append(Problem("--billing", "", f"names no billing model ({billing!r}); e.g. payg,monthly"))
    if problems:
        raise UserError(problems)
    options = compare.compare(
        stack, cloud_list, billing_list, usage.load(stack, usage_file), estimate.load_discounts(discounts_file)
    )
    if fmt == "xlsx":
        buf = io.BytesIO()
        report.compare_xlsx(stack, options, buf)
        assert output is not None  # xlsx without -o raised above
        write_atomic(output, buf.getvalue())
        if not is_stdout(output):
            typer.echo(f"wrote {output}", err=True)
        return
    if fmt == "table":
        if output:
            table_buf = io.StringIO()
            report.compare_table(stack, options, console(file=table_buf, width=200))
            write_atomic(output, table_buf.getvalue())
        else:
            report.compare_table(stack, options, _console())
        return
    text = {
        "csv": lambda: report.compare_csv(stack, options),
        "json": lambda: json.dumps(compare.as_json(stack, options), indent=2, ensure_ascii=False) + "\n",
        "html": lambda: report.compare_html(stack, options),
    }[fmt]()
    if output:
        write_atomic(output, text)
        if not is_stdout(output):
            typer.echo(f"wrote {output}")
    else:
        typer.echo(text, nl=False)


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
        None, "--baseline", help="A = a saved `gpufleet cost estimate --format json -o FILE.json`", metavar="FILE.json"
    ),
    usage_file: str | None = typer.Option(None, "--usage", help="usage profile YAML for the stacks priced now"),
    fmt: str = options.fmt(DIFF_FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
) -> None:
    """What changes in cost (B minus A): per category with %, per scenario, line by line. Unpriced deltas are named,
    never counted as savings.

    Examples:
      gpufleet cost diff --stack alicloud-cn-hangzhou-dev --stack alicloud-cn-hangzhou-prod
      gpufleet cost estimate --stack alicloud-cn-hangzhou-prod --format json -o before.json
      gpufleet cost diff --stack alicloud-cn-hangzhou-prod --baseline before.json --format markdown
    """
    from gpufleet.cost import diff, report
    from gpufleet.plan import stack_estimate

    chosen = options.chosen_format(fmt, as_json, DIFF_FORMATS, output)
    want = 1 if baseline is not None else 2
    if len(stacks) != want:
        hint = "with --baseline give one --stack (B)" if baseline is not None else "give --stack twice (A then B), or --baseline"
        raise UserError([Problem("--stack", "", f"{hint}; got {len(stacks)}")])
    a = diff.load_baseline(baseline) if baseline is not None else stack_estimate(stacks[0], usage_file)[1]
    b = stack_estimate(stacks[-1], usage_file)[1]
    result = diff.run(a, b)
    if chosen == "json":
        options.emit(json.dumps(report.diff_json(result), indent=2, ensure_ascii=False) + "\n", output)
    elif chosen == "markdown":
        options.emit(report.diff_markdown(result), output)
    elif output is not None:
        options.emit(lambda buf: report.diff_table(result, console(file=buf, width=100)), output)
    else:
        report.diff_table(result, _console())


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

    Example:
      gpufleet cost commit --stack alicloud-cn-hangzhou-prod
    """
    from gpufleet.cost import commitment, report

    chosen = options.chosen_format(fmt, as_json, COMMIT_FORMATS, output)
    plan = commitment.plan_stack(stack)
    if chosen == "json":
        options.emit(json.dumps(commitment.as_json(plan), indent=2, ensure_ascii=False) + "\n", output)
    elif output is not None:
        options.emit(lambda buf: report.commit_table(plan, console(file=buf, width=100)), output)
    else:
        report.commit_table(plan, _console())


@catalog_app.command("build")
def build_cmd(
    cloud: str | None = typer.Option(None, "--cloud", help="alicloud | tencentcloud (default: both)"),
    today: str | None = typer.Option(None, "--date", help="build date written to the files (default: today)"),
) -> None:
    """Rewrite cost/data/<cloud>-<region>.yaml from the sourced facts (keeps vendor API rows)."""
    from datetime import date

    from gpufleet.cost import catalog as pricecat
    from gpufleet.cost import derive
    from gpufleet.errors import did_you_mean
    from gpufleet.stacks.catalog import CLOUDS

    if cloud is not None and cloud not in CLOUDS:
        raise UserError([Problem("--cloud", "", f"unknown cloud {cloud!r}" + did_you_mean(cloud, CLOUDS))])
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
    for c in clouds:
        written = derive.build(c, today or date.today().isoformat())
        for p in written:
            typer.echo(f"wrote {p}")
        if not written:
            typer.echo(f"{c}: every catalog already says these prices; nothing written")


@catalog_app.command("refresh")
def refresh_cmd(
    cloud: str = typer.Option(..., "--cloud", help="alicloud | tencentcloud"),
    region: str = typer.Option(..., "--region"),
    endpoint: str | None = typer.Option(None, "--endpoint", help="API endpoint host[:port] (default: the vendor's)"),
    protocol: str = typer.Option("https", "--protocol", hidden=True),
    image_id: str | None = typer.Option(None, "--image-id", help="Tencent: image to price with (default: from images/lock.json)"),
) -> None:
    """Fetch GPU instance prices from the vendor's pricing API with your credentials (ALIBABA_CLOUD_ACCESS_KEY_ID/SECRET
    or TENCENTCLOUD_SECRET_ID/KEY) and write them to the catalog with quality `vendor API`."""
    from gpufleet.cost import refresh

    res = refresh.refresh(cloud, region, endpoint, protocol, image_id)
    typer.echo(f"wrote {len(res.written)} vendor API rows to {res.path}")
    for f in res.failed:
        typer.echo(f"  not priced: {f}", err=True)
    if not res.written:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(cost_app, name="cost")
    app.add_typer(catalog_app, name="catalog")
