"""The `gpufleet` command. Each command group lives in its own module of this package."""

from __future__ import annotations

import sys

import typer

from gpufleet.errors import UserError, console, print_problems

app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="GPU inference fleets for vLLM on Alibaba Cloud and Tencent Cloud."
)
err = console(stderr=True)


def _register() -> None:
    if getattr(app, "_gpufleet_registered", False):  # main() may run many times in one process (tests)
        return
    app._gpufleet_registered = True
    from gpufleet.cli import cost, image, loadtest, plan, preview, region

    preview.register(app)
    image.register(app)
    plan.register(app)
    loadtest.register(app)
    cost.register(app)
    region.register(app)


def main(argv: list[str] | None = None) -> None:
    _register()
    try:
        code = app(args=argv, standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)  # typer.Exit(code) comes back as a return value outside standalone mode
    except UserError as exc:
        print_problems(exc.problems, err)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("aborted")
        sys.exit(130)
    except Exception as exc:  # usage errors (click's ClickException) come here in non-standalone mode
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            sys.exit(exc.exit_code)
        raise
