"""Where the user's project is: the folder whose user state (stacks/, images/lock.json, cost/usage/) gpufleet reads."""

from __future__ import annotations

import os
from pathlib import Path

from gpufleet.errors import Problem, UserError


def is_project(folder: Path) -> bool:
    """A gpufleet project: Pulumi.yaml beside stacks/ (what project_root looks for, and `gpufleet init` writes)."""
    return (folder / "Pulumi.yaml").exists() and (folder / "stacks").is_dir()


def project_root(start: Path | None = None) -> Path:
    """The folder holding Pulumi.yaml and stacks/: $GPUFLEET_PROJECT, else up from the cwd.

    User state (stacks, images/lock.json, cost/usage/) is read from here only; outside a project this is a
    UserError, never the package's own folder (an installed gpufleet would otherwise read and write site-packages).
    """
    if os.environ.get("GPUFLEET_PROJECT"):
        given = Path(os.environ["GPUFLEET_PROJECT"])
        if not os.path.isdir(given):  # else its stacks read as missing and its lock as empty (os.path: False on OSError)
            what = "is a file" if os.path.lexists(given) else "does not exist"
            raise UserError(
                [
                    Problem(
                        "GPUFLEET_PROJECT",
                        "",
                        f"{given}: {what}: set it to the project's folder (the one holding Pulumi.yaml and stacks/), "
                        "or unset it to find the project from the current folder",
                    )
                ]
            )
        return given
    try:
        cwd = start or Path.cwd()
    except OSError:  # the shell's current folder was removed (getcwd fails)
        raise UserError(
            [Problem("current folder", "", "no longer exists: cd into the project folder, or set GPUFLEET_PROJECT")]
        ) from None
    here = cwd.resolve()
    for folder in (here, *here.parents):
        if is_project(folder):
            return folder
    raise UserError(
        [
            Problem(
                str(cwd),
                "",
                f"no Pulumi.yaml with stacks/ found from {cwd}; run inside a gpufleet project or set GPUFLEET_PROJECT "
                "(`gpufleet init DIR` makes a new one)",
            )
        ]
    )
