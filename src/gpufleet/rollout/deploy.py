"""Deploying a step: `pulumi up` of the changed stack file.

With the Pulumi CLI on PATH the step runs it through Pulumi's Automation API (pulumi.automation: select the stack in
the project folder, `up`), and the rollout goes on. Without it (this machine, and any operator without the CLI) the
rollout prints the exact commands, records that the deploy is awaited, and the next `gpufleet rollout step` (or
abort / promote / finish) continues from there once they have been run.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path


def pulumi_cli(environ: Mapping[str, str]) -> str | None:
    """The Pulumi CLI's path when it is on PATH (the Automation API drives that binary), else None."""
    return shutil.which("pulumi", path=environ.get("PATH", ""))


def commands(stack: str, project: Path, stack_file: Path) -> list[str]:
    """The commands that deploy the stack file as it now is (run from anywhere)."""
    cmd = ["pulumi", "up", "--cwd", str(project), "--stack", stack, "--yes"]
    if stack_file.resolve().parent != (project / "stacks").resolve():
        cmd += ["--config-file", str(stack_file)]  # a stack file outside the project's stacks/ folder
    return [shlex.join(cmd)]


class DeployFailed(Exception):
    """`pulumi up` ran and failed: the stack file holds the change, the state records it as in progress, and the next
    rollout command makes it again (exit 1: a step that ran and failed, not bad input)."""


def automation_up(stack: str, project: Path, stack_file: Path, say: Callable[[str], None]) -> None:
    """`pulumi up` through the Automation API; a failed update raises DeployFailed."""
    # deferred: the Pulumi SDK and providers (~100 ms): only the program and the image pipeline need them
    from pulumi import automation as auto

    try:
        s = auto.select_stack(stack_name=stack, work_dir=str(project))
        outside = stack_file.resolve().parent != (project / "stacks").resolve()
        # show_secrets=False: the SDK's default (True) would print the stack's secrets in the update's output
        result = s.up(on_output=say, show_secrets=False, config_file=str(stack_file) if outside else None)
    except (auto.errors.CommandError, OSError, ValueError) as exc:  # a failed update, or a CLI that answered oddly
        last = [ln for ln in str(exc).strip().splitlines() if ln.strip()][-1:] or [type(exc).__name__]
        raise DeployFailed(f"pulumi up -s {stack} failed: {last[0]}") from None
    if result.summary.result != "succeeded":
        raise DeployFailed(f"pulumi up -s {stack} ended {result.summary.result}")
