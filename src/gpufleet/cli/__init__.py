"""The `gpufleet` command. Each command group lives in its own module of this package."""

from __future__ import annotations

import os
import sys

import typer

from gpufleet import collector
from gpufleet.errors import Problem, UserError, console, one_line, print_problems

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command and group inherits -h (docs/cli.md)
    help="GPU inference fleets for vLLM on Alibaba Cloud and Tencent Cloud.\n\n"
    "Exit codes: 0 done, 1 a check failed (does not fit, over budget, ...), 2 bad input. NO_COLOR turns colour off. "
    "Conventions: docs/cli.md.\n\n"
    "\b\nExamples:\n"
    "  gpufleet preview --stack alicloud-cn-hangzhou-prod\n"
    "  gpufleet cost estimate --stack alicloud-cn-hangzhou-prod\n"
    "  gpufleet plan fit --stack alicloud-cn-hangzhou-prod\n"
    "  gpufleet region new --cloud tencentcloud --region ap-shanghai --env prod --dry-run",
)


def versioned() -> tuple[str, ...]:
    """The distributions `--version` shows: gpufleet, the Pulumi SDK and each registered cloud's provider (its profile's
    provider_package), in the registry's order."""
    from gpufleet import registry

    providers = (registry.profile(cloud).provider_package for cloud in registry.names())
    return ("gpufleet", "pulumi", *dict.fromkeys(p for p in providers if p))


def versions() -> dict[str, str | None]:
    """gpufleet's version and the installed Pulumi SDK and providers (None: not installed)."""
    from importlib import metadata

    found: dict[str, str | None] = {}
    for dist in versioned():
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = None
    return found


def _print_version(value: bool) -> None:
    if value:
        v = versions()
        typer.echo(f"gpufleet {v.pop('gpufleet')}")
        for dist, version in v.items():
            typer.echo(f"  {dist} {version or 'not installed'}")
        raise typer.Exit()


@app.callback()
def _group(
    version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        callback=_print_version,
        help="print gpufleet's version and the Pulumi SDK and provider versions",
    ),
) -> None:
    """Keeps `gpufleet` a group of commands when only the invoked command is registered (typer would run a lone
    command as the whole program)."""


# command -> the module of this package that registers it (in the order `gpufleet --help` lists them)
COMMANDS = {
    "init": "init",
    "preview": "preview",
    "check": "check",
    "loadtest": "loadtest",
    "image": "image",
    "plan": "plan",
    "cost": "cost",
    "catalog": "cost",
    "region": "region",
    "rollout": "rollout",
    "monitoring": "monitoring",
    "completion": "completion",
}


_REGISTERED: set[str] = set()


def _register(argv: list[str]) -> None:
    """Register the invoked command's module only (building every command's options costs ~0.1 s); all of them for
    help, an unknown command or none."""
    import importlib

    first = next((a for a in argv if not a.startswith("-")), None)
    modules = [COMMANDS[first]] if first in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        if name not in _REGISTERED:  # main() may run many times in one process (tests): each module registers once
            _REGISTERED.add(name)
            importlib.import_module(f"gpufleet.cli.{name}").register(app)


def main(argv: list[str] | None = None) -> None:
    if argv is None:
        collector.one_shot()
        # The spec's and recipes' pydantic models run without pydantic plugins: looking for them reads the entry points
        # of every installed distribution at the first model (20M instructions a preview with 135 installed; more in a
        # larger environment). A value already set (e.g. empty, to load plugins) is kept.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        _main(argv)
    finally:
        if argv is None:
            collector.exiting()


def argv_problems(args: list[str]) -> list[Problem]:
    """Arguments that are not UTF-8 text: a byte the terminal's encoding did not decode (a Latin-1 `é`) is kept by
    Python as a lone surrogate, which no output, file or request can carry. Refused up front, naming the option."""
    out = []
    for i, arg in enumerate(args):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            if arg.startswith("-") and "=" in arg:
                name = arg.split("=", 1)[0]
            else:
                name = args[i - 1] if i and args[i - 1].startswith("-") else f"argument {i + 1}"
            out.append(Problem(one_line(name), "", "holds bytes that are not UTF-8 text: write it in UTF-8"))
    return out


def _main(argv: list[str] | None) -> None:
    _register(sys.argv[1:] if argv is None else argv)
    if "_GPUFLEET_COMPLETE" in os.environ:  # the shell asks for completions (gpufleet completion SHELL installs the ask)
        from typer._completion_classes import completion_init

        completion_init()  # typer's bash/zsh/fish answerers (typer registers them only with add_completion)
    try:
        if problems := argv_problems(sys.argv[1:] if argv is None else argv):
            raise UserError(problems)
        code = app(args=argv, standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)  # typer.Exit(code) comes back as a return value outside standalone mode
    except UserError as exc:
        print_problems(exc.problems, console(stderr=True))
        sys.exit(2)
    # typer.Exit never gets here: typer's main returns its code outside standalone mode (handled above), and a Ctrl-C in
    # a command comes back the same way, as 130. This takes a Ctrl-C before typer's handler (while the command is
    # built) and typer.Abort, which typer re-raises outside standalone mode (an EOFError in a command).
    except (typer.Abort, KeyboardInterrupt):
        console(stderr=True).print("aborted")
        sys.exit(130)
    except Exception as exc:  # usage errors (click's ClickException) come here in non-standalone mode
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group given no command: its help, as `--help` (stdout, 0)
            typer.echo(exc.ctx.get_help())  # type: ignore[attr-defined]
            sys.exit(0)
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            sys.exit(exc.exit_code)
        raise
