"""`gpufleet completion bash|zsh|fish`: the shell script that completes gpufleet's commands, options and stack names."""

from __future__ import annotations

import typer

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

SHELLS = ("bash", "zsh", "fish")


def _shells(incomplete: str) -> list[str]:
    return [name for name in SHELLS if name.startswith(incomplete)]


def register(app: typer.Typer) -> None:
    app.command("completion")(completion)


def completion(
    shell: str = typer.Argument(
        ...,
        help=f"the shell to complete in: {' | '.join(SHELLS)}",
        metavar="SHELL",
        autocompletion=lambda incomplete: _shells(incomplete),
    ),
) -> None:
    """Print the completion script for a shell (commands, options, --format values and --stack names).

    \b
    Examples:
      gpufleet completion bash
      eval "$(gpufleet completion bash)"                 # this bash session
      gpufleet completion zsh > ~/.zfunc/_gpufleet      # zsh, with ~/.zfunc in fpath
      gpufleet completion fish > ~/.config/fish/completions/gpufleet.fish
    """
    from gpufleet.errors import Problem, UserError, did_you_mean

    if shell not in SHELLS:
        raise UserError([Problem("SHELL", "", f"unknown shell {shell!r}" + did_you_mean(shell, SHELLS))])
    from typer._completion_shared import get_completion_script  # typer's scripts, answered by typer's completion

    typer.echo(get_completion_script(prog_name="gpufleet", complete_var="_GPUFLEET_COMPLETE", shell=shell))
