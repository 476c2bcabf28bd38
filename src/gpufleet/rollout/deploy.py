"""Deploying a step: `pulumi up` of the changed stack file.

With the Pulumi CLI on PATH the step runs it through Pulumi's Automation API (pulumi.automation: select the stack in
the project folder, `up`), and the rollout goes on. Without it (this machine, and any operator without the CLI) the
rollout prints the exact commands, records that the deploy is awaited, and the next `gpufleet rollout step` (or
abort / promote / finish) continues from there once they have been run.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from gpufleet.stacks.loader import STACK_FILE_ENV


def pulumi_cli(environ: Mapping[str, str]) -> str | None:
    """The Pulumi CLI's path when it is on PATH (the Automation API drives that binary), else None."""
    return shutil.which("pulumi", path=environ.get("PATH", ""))


def outside(project: Path, stack_file: Path) -> dict[str, str] | None:
    """The environment the program needs for a stack file outside the project's stacks/ folder (loader.STACK_FILE_ENV:
    its absolute path, as the program runs in the project's folder); None for a file of stacks/."""
    if stack_file.resolve().parent == (project / "stacks").resolve():
        return None
    return {STACK_FILE_ENV: str(stack_file.absolute())}


def commands(stack: str, project: Path, stack_file: Path) -> list[str]:
    """The commands that deploy the stack file as it now is (run from anywhere). A stack file outside the project's
    stacks/ folder: Pulumi reads its config (--config-file) and the program the file itself (the environment)."""
    cmd = ["pulumi", "up", "--cwd", str(project), "--stack", stack, "--yes"]
    env = outside(project, stack_file)
    if env is None:
        return [shlex.join(cmd)]
    cmd += ["--config-file", str(stack_file)]
    return [" ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + shlex.join(cmd)]


UPGRADE = "https://www.pulumi.com/docs/iac/download-install/"


def require_usable_cli(cli: str, environ: Mapping[str, str]) -> None:
    """Refuse (UserError, before anything is changed) a Pulumi CLI the Automation API will not drive. The API checks
    the CLI's version on each use (`pulumi version`, at least its minimum) and raised InvalidVersionError: a traceback
    (exit 1) after the stack file was already rewritten. The same check, made here on the CLI found on PATH."""
    from pulumi import automation as auto

    from gpufleet.errors import Problem, UserError

    try:  # the SDK's own check and minimum (private names of the pinned SDK: without them, the deploy's own check)
        from pulumi.automation._cmd import _SKIP_VERSION_CHECK_VAR, _parse_and_validate_pulumi_version
        from pulumi.automation._minimum_version import _MINIMUM_VERSION
    except ImportError:
        return
    env = {**environ, "PULUMI_SKIP_UPDATE_CHECK": "true"}
    try:
        out = subprocess.run([cli, "version"], env=env, capture_output=True, check=True, timeout=60).stdout
        current = out.decode("utf-8", "replace").strip().removeprefix("v")
        _parse_and_validate_pulumi_version(_MINIMUM_VERSION, current, _SKIP_VERSION_CHECK_VAR in environ)
        return
    except auto.errors.InvalidVersionError as exc:
        why = str(exc).strip()
    except (subprocess.SubprocessError, OSError) as exc:
        why = f"`pulumi version` failed ({type(exc).__name__})."
        current = ""
    newer_major = current.split(".")[0].isdigit() and int(current.split(".")[0]) > _MINIMUM_VERSION.major
    fix = (  # the SDK refuses a CLI of a later major version too ("Major version mismatch ... update the SDK")
        f"install a {_MINIMUM_VERSION.major}.x CLI ({UPGRADE}) or a gpufleet whose Pulumi SDK drives it"
        if newer_major
        else f"upgrade it ({UPGRADE}, e.g. `curl -fsSL https://get.pulumi.com | sh` or `brew upgrade pulumi`)"
    )
    raise UserError(
        [
            Problem(
                cli,
                "version",
                f"the Pulumi CLI on PATH cannot be driven by the Automation API (it takes {_MINIMUM_VERSION.major}.x from "
                f"{_MINIMUM_VERSION}): {why} To fix: {fix}, or take it off PATH to have the `pulumi up` commands printed "
                "instead; nothing was changed",
            )
        ]
    )


class DeployFailed(Exception):
    """`pulumi up` ran and failed: the stack file holds the change, the state records it as in progress, and the next
    rollout command makes it again (exit 1: a step that ran and failed, not bad input). `report`: the command's report
    as far as it got, set when it leaves the runner (runner.Run), for the CLI to print before it exits 1."""

    report: dict | None = None


def automation_up(stack: str, project: Path, stack_file: Path, say: Callable[[str], None]) -> None:
    """`pulumi up` through the Automation API; a failed update raises DeployFailed."""
    # deferred: the Pulumi SDK and providers (~100 ms): only the program and the image pipeline need them
    from pulumi import automation as auto

    env = outside(project, stack_file)
    try:
        s = auto.select_stack(stack_name=stack, work_dir=str(project), opts=auto.LocalWorkspaceOptions(env_vars=env))
        # show_secrets=False: the SDK's default (True) would print the stack's secrets in the update's output
        result = s.up(on_output=say, show_secrets=False, config_file=None if env is None else str(stack_file))
    except (
        auto.errors.CommandError,
        auto.errors.InvalidVersionError,
        OSError,
        ValueError,
    ) as exc:  # a failed update, or a CLI that answered oddly
        last = [ln for ln in str(exc).strip().splitlines() if ln.strip()][-1:] or [type(exc).__name__]
        raise DeployFailed(f"pulumi up -s {stack} failed: {last[0]}") from None
    if result.summary.result != "succeeded":
        raise DeployFailed(f"pulumi up -s {stack} ended {result.summary.result}")
