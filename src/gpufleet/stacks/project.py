"""Where the user's project is: the folder whose user state (stacks/, images/lock.json, cost/usage/) gpufleet reads."""

from __future__ import annotations

import os
from pathlib import Path

from gpufleet.errors import Problem, UserError


def project_root(start: Path | None = None) -> Path:
    """The folder holding Pulumi.yaml and stacks/: $GPUFLEET_PROJECT, else up from the cwd.

    User state (stacks, images/lock.json, cost/usage/) is read from here only; outside a project this is a
    UserError, never the package's own folder (an installed gpufleet would otherwise read and write site-packages).
    """
    if os.environ.get("GPUFLEET_PROJECT"):
        return Path(os.environ["GPUFLEET_PROJECT"])
    cwd = start or Path.cwd()
    here = cwd.resolve()
    for folder in (here, *here.parents):
        if (folder / "Pulumi.yaml").exists() and (folder / "stacks").is_dir():
            return folder
    raise UserError(
        [
            Problem(
                str(cwd),
                "",
                f"no Pulumi.yaml with stacks/ found from {cwd}; run inside a gpufleet project or set GPUFLEET_PROJECT",
            )
        ]
    )
