"""`gpufleet init`: a new project (Pulumi.yaml, the program in stacks/, images/lock.json) for an installed gpufleet."""

from __future__ import annotations

from pathlib import Path

import typer

# Engines are imported inside the functions that use them, not at the top (issue 25's rule, measured): `gpufleet`
# imports every command module to parse its arguments and build its help.


def register(app: typer.Typer) -> None:
    app.command("init")(init)


def init(
    folder: Path = typer.Argument(Path("."), metavar="DIR", help="the project's folder: a new path, or one without a project"),
    name: str = typer.Option("gpufleet", "--name", help="the Pulumi project's name (Pulumi.yaml name:)"),
    placeholder_images: bool = typer.Option(
        False,
        "--placeholder-images",
        help="lock a placeholder image for every shipped recipe and region, to preview, cost and size stacks offline "
        "before any image is built (a placeholder is never deployed)",
    ),
) -> None:
    """Make a project: Pulumi.yaml (Python, in the virtual environment gpufleet runs in), stacks/__main__.py (the
    program every stack runs) and images/lock.json. Overwrites nothing: exit 2 if DIR holds any of them, writing nothing.
    Then `gpufleet region new` writes a stack there.

    \b
    Examples:
      gpufleet init llm-fleet --placeholder-images
      gpufleet init llm-fleet --name llm-fleet
    """
    from gpufleet import scaffold
    from gpufleet.errors import Problem, UserError

    if why := scaffold.name_problem(name):
        raise UserError([Problem("--name", "", why)])
    venv = scaffold.running_venv()
    scaffold.create(folder, scaffold.project_files(name, venv, placeholder_images))
    lines = [
        f"wrote {folder / 'Pulumi.yaml'} (runtime: python in {venv or 'the python3 on PATH'}), "
        f"{folder / 'stacks' / '__main__.py'}, {folder / 'images' / 'lock.json'}"
        + (" with placeholder images" if placeholder_images else ""),
        "next, in that folder:",
        "  gpufleet region new --cloud alicloud --region cn-hangzhou --env dev   # a stack",
        "  gpufleet preview --stack alicloud-cn-hangzhou-dev",
    ]
    if not placeholder_images:
        lines.insert(2, "  gpufleet image build ... and gpufleet image lock record ...   # an image first (docs/images.md)")
    typer.echo("\n".join(lines))
