"""`gpufleet check`: every stack of a cloud previewed together, as in one account, for names used twice in their scope."""

from __future__ import annotations

from pathlib import Path

import typer

from gpufleet.cli import options, renderers

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

FORMATS = ("table", "json")


def register(app: typer.Typer) -> None:
    app.command("check")(check)


def check(
    cloud: str | None = typer.Option(
        None, "--cloud", autocompletion=options.complete_cloud, callback=options.known_cloud, help="only this cloud's stacks"
    ),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
) -> None:
    """Preview every stacks/Pulumi.*.yaml together and refuse a cloud-side name that two stacks of one account use in
    the scope the vendor documents (account, region), or that one stack uses twice or makes longer than its limit
    (components/<cloud>/name_scopes.yaml). Exit 2 naming both stacks and the scope; stacks that do not validate are
    refused as by preview (every one of them), and a usage profile (gpufleet:usage) as by cost estimate.

    \b
    Examples:
      gpufleet check
      gpufleet check --cloud alicloud --json
    """
    from gpufleet import account
    from gpufleet.errors import UserError
    from gpufleet.stacks.loader import stack_names

    chosen = options.chosen_format(fmt, as_json, FORMATS, output, options.inputs(output, stack_names() if output else []))
    report = account.check(cloud=cloud)
    if not report.stacks:  # nothing previewed: this printed an empty line and exited 0, as if every stack had passed
        from gpufleet.errors import Problem
        from gpufleet.stacks.project import project_root

        of = f" of {cloud}" if cloud else ""
        raise UserError(
            [
                Problem(
                    str(project_root() / "stacks"),
                    "",
                    f"no stack{of} (Pulumi.<name>.yaml): nothing to check; run in the project whose stacks you mean (or set "
                    "GPUFLEET_PROJECT to it)" + (", or leave out --cloud" if cloud else ""),
                )
            ]
        )
    problems = report.problems + account.clash_problems(report) + _usage_problems(report.stacks)
    if problems:
        raise UserError(problems)
    counts = {c: len(s) for c, s in report.stacks.items()}
    scoped = [n for n in report.names if n.rule.scope in ("account", "region")]
    body = {
        "stacks": report.stacks,
        "names": len(report.names),
        "account_or_region_scoped": len(scoped),
        "clashes": [],
    }
    lines = [
        f"{cloud_}: {n} stacks previewed together ({', '.join(report.stacks[cloud_])}): "
        f"{sum(1 for x in report.names if x.cloud == cloud_)} names, "
        f"{sum(1 for x in scoped if x.cloud == cloud_)} account- or region-wide; no name used twice in its scope"
        for cloud_, n in counts.items()
    ]
    renderers.render(
        chosen,
        output,
        json=renderers.Json(lambda: body, sort_keys=True),
        table=renderers.Text(lambda: "\n".join(lines) + "\n", say_written=False),
    )


def _usage_problems(stacks: dict[str, list[str]]) -> list:
    """Each stack's usage profile (`gpufleet:usage`: its file, keys and values), as `cost estimate` reads it: the
    preview does not read it, so a broken one would pass every check until the first cost report."""
    from gpufleet.cost import usage
    from gpufleet.errors import UserError

    problems = []
    for stack in (s for names in stacks.values() for s in names):
        try:
            usage.load(stack)
        except UserError as exc:
            problems += exc.problems
    return problems
