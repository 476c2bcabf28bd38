"""`gpufleet init`: a new project (Pulumi.yaml, the program in stacks/, images/lock.json, the images program in
images/program/) for an installed gpufleet."""

from __future__ import annotations

from pathlib import Path

import typer

# Engines are imported inside the functions that use them, not at the top (issue 25's rule, measured): `gpufleet`
# imports every command module to parse its arguments and build its help.


def register(app: typer.Typer) -> None:
    app.command("init")(init)


def _folder(value: str | Path) -> Path:
    """DIR, not empty: Path("") is ".", and `gpufleet init "$DIR"` with DIR unset made the project in the current folder."""
    if not str(value).strip():
        raise typer.BadParameter("is empty: give the project's folder (a new path, or . for the current folder)")
    return Path(value)


def init(
    folder: Path = typer.Argument(
        Path("."), parser=_folder, metavar="DIR", help="the project's folder: a new path, or one without a project"
    ),
    name: str = typer.Option("gpufleet", "--name", help="the Pulumi project's name (Pulumi.yaml name:)"),
    placeholder_images: bool = typer.Option(
        False,
        "--placeholder-images",
        help="lock a placeholder image for every shipped recipe and region, to preview, cost and size stacks offline "
        "before any image is built (a placeholder is never deployed)",
    ),
    examples: bool = typer.Option(
        False,
        "--examples",
        help="also copy the example inputs the help and the docs name into examples/ (a load test, team budgets, bills "
        "of both clouds, prod stacks with a rollout in progress)",
    ),
) -> None:
    """Make a project: Pulumi.yaml (Python, in the virtual environment gpufleet runs in), stacks/__main__.py (the
    program every stack runs), images/lock.json, images/program/ (the images program, for your images stacks) and
    policy/ (the policy pack: `pulumi preview --policy-pack policy`). Overwrites nothing: exit 2, writing nothing, if DIR
    holds any of them (or examples/, with --examples), or lies in another project's stacks/. Then `gpufleet region new`
    writes a stack there.

    \b
    Examples:
      gpufleet init llm-fleet --placeholder-images --examples
      gpufleet init llm-fleet --name llm-fleet
    """
    import os
    import sys

    from gpufleet import scaffold
    from gpufleet.errors import Problem, UserError
    from gpufleet.stacks.lock import BUILD_AND_LOCK

    if why := scaffold.name_problem(name):
        raise UserError([Problem("--name", "", why)])
    venv = scaffold.venv_for(folder)
    scaffold.create(folder, scaffold.project_files(name, venv, placeholder_images, examples))
    runtime = f"the venv {venv}" if venv else f"the python3 on PATH: make it the one gpufleet runs in ({sys.executable})"
    lines = [
        f"wrote {folder / 'Pulumi.yaml'} (runtime: {runtime}), {folder / 'stacks' / '__main__.py'}, "
        f"{folder / 'images' / 'lock.json'}"
        + (" with placeholder images" if placeholder_images else "")
        + f", {folder / scaffold.PROGRAM_DIR}/ (the images program), {folder / scaffold.POLICY_DIR}/ (the policy "
        "pack)" + (f", {folder / 'examples'}/" if examples else ""),
        "next:",
        f"  cd {folder}",
        *([] if placeholder_images else [f"  # first {BUILD_AND_LOCK}"]),
        "  gpufleet region new --cloud alicloud --region cn-hangzhou --env dev   # a stack",
        "  gpufleet preview --stack alicloud-cn-hangzhou-dev",
    ]
    if os.environ.get("GPUFLEET_PROJECT"):
        lines.append(
            f"note: GPUFLEET_PROJECT is set ({os.environ['GPUFLEET_PROJECT']}): commands use that project, not this one; "
            "unset it, or set it to this folder"
        )
    typer.echo("\n".join(lines))
