"""`gpufleet monitoring --stack S --out-dir DIR`: the stack's Prometheus alert rules and Grafana dashboard
(components/monitoring.py), written into a folder."""

from __future__ import annotations

from pathlib import Path

import typer

from gpufleet.cli import options

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.


def register(app: typer.Typer) -> None:
    app.command("monitoring")(monitoring)


def monitoring(
    stack: str = options.stack(),
    out_dir: Path = typer.Option(
        ...,
        "--out-dir",
        parser=options.path,
        metavar="DIR",
        help="the folder to write gpufleet-<fleet>-<env>-<cloud>-<region>.rules.yml and .dashboard.json into (created)",
    ),
) -> None:
    """Write the stack's Prometheus alerting rules (from its alarms) and Grafana dashboard into a folder, and print
    their paths. Every expression selects the labels the scrape config puts on the fleet's nodes, gpufleet_fleet,
    gpufleet_cloud and gpufleet_region (the rule file's first line names them), so stacks of one fleet name in other
    regions never mix. The folder is checked before the stack is read, and both files are written or neither (an old
    file stays as it was). Exit 1 when the rules or the dashboard use a metric name the pinned vLLM, dcgm-exporter or
    node_exporter does not export.

    \b
    Examples:
      gpufleet monitoring --stack alicloud-cn-hangzhou-prod --out-dir monitoring
      gpufleet monitoring -s stacks/Pulumi.tencentcloud-ap-guangzhou-prod.yaml --out-dir monitoring
    """
    from gpufleet import files, validation
    from gpufleet.components import monitoring as rendered
    from gpufleet.errors import UserError, one_line

    if problems := files.folder_problems(out_dir, (), "--out-dir"):  # before the stack is read (`-` included)
        raise UserError(problems)
    fleet = validation.load_fleet(stack, sizing=False)
    if unknown := rendered.unknown_metrics(fleet):
        typer.echo(f"metric names the pinned software does not export: {', '.join(unknown)}", err=True)
        raise typer.Exit(1)
    written = rendered.files(fleet)
    files.write_folder(out_dir, written, flag="--out-dir")  # every target checked, then all or nothing
    for name in written:
        typer.echo(one_line(str(out_dir / name)))
