"""`gpufleet region new`: render a stack for a new region from a template (the package's or a file), checked before
writing."""

from __future__ import annotations

import typer

from gpufleet import registry
from gpufleet.cli import options

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.


def register(app: typer.Typer) -> None:
    sub = typer.Typer(
        rich_markup_mode=None,
        help="Open regions: render new stacks from templates (docs/environments.md).\n\n"
        "\b\nExamples:\n"
        "  gpufleet region new --cloud alicloud --region cn-beijing --env dev --dry-run",
        no_args_is_help=True,
    )
    sub.command("new")(new)
    app.add_typer(sub, name="region")


def new(
    cloud: str = typer.Option(..., "--cloud", autocompletion=options.complete_cloud, help=registry.spoken(registry.names())),
    region: str = typer.Option(..., "--region", help="e.g. cn-beijing"),
    env: str = typer.Option(..., "--env", help="dev, staging or prod"),
    gpu: str | None = typer.Option(
        None,
        "--gpu",
        autocompletion=options.complete_gpu,
        help="GPU kind; default per environment (defaults.yaml of the package's stacks/templates/)",
    ),
    template: str = typer.Option(
        "stack.yaml.j2",
        "--from",
        help="a template of the package's stacks/templates/ by name (its *.j2: stack.yaml.j2), or the path of a template "
        "file of your own (a value with a '/', or a file when the package has no template of that name), e.g. a copy of it",
        metavar="TEMPLATE",
    ),
    name: str | None = typer.Option(None, "--name", help="stack name; default <cloud>-<region>-<env>[-<fleet>]"),
    fleet: str = typer.Option(
        "llm", "--fleet", help="fleet name: starts every cloud-side name; another one for a second fleet of one env in one region"
    ),
    zone: list[str] = typer.Option([], "--zone", help="zones to use instead of the first ones selling the GPU (repeatable)"),
    cidr: str | None = typer.Option(None, "--cidr", help="VPC CIDR instead of the first free /16"),
    contact_group: str | None = typer.Option(
        None,
        "--contact-group",
        help="whom the alarms notify (alarms.contact_group), in the cloud's form: Alibaba a CloudMonitor contact "
        "group's name, Tencent a notification template id (notice-...); default: an example value of that form",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="print the file (and on standard error what was chosen) instead of writing it"
    ),
) -> None:
    """Write stacks/Pulumi.<cloud>-<region>-<env>.yaml (never overwriting) and say what was chosen and why. Exit 2
    when a check refuses (unknown region, too few zones selling the GPU, an existing stack), writing nothing.

    \b
    Examples:
      gpufleet region new --cloud alicloud --region cn-beijing --env dev --dry-run
      gpufleet region new --cloud tencentcloud --region ap-shanghai --env prod
      gpufleet region new --cloud tencentcloud --region ap-shanghai --env prod --contact-group notice-prod-llmoncall --dry-run
      gpufleet region new --cloud alicloud --region cn-beijing --env prod --zone cn-beijing-h --zone cn-beijing-i
      gpufleet region new --cloud alicloud --region cn-hangzhou --env prod --fleet qwen
    """
    from gpufleet import regions
    from gpufleet.errors import Problem, UserError

    p = regions.plan(
        cloud,
        region,
        env,
        gpu=gpu,
        template=template,
        name=name,
        zones=zone or None,
        cidr=cidr,
        fleet=fleet,
        contact_group=contact_group,
    )
    if dry_run and p.path.exists():  # what the real run would refuse, the dry run refuses too
        raise UserError([Problem(f"stacks/{p.path.name}", "", regions.EXISTS)])
    if dry_run:
        typer.echo(p.text, nl=False)
        for r in p.reasons:
            typer.echo(f"# chose {r}", err=True)
        return
    path = regions.write(p)
    typer.echo(f"wrote stacks/{path.name}")
    for r in p.reasons:
        typer.echo(f"  chose {r}")
    typer.echo(f"next: gpufleet preview --stack {p.stack}; gpufleet cost estimate --stack {p.stack}")
