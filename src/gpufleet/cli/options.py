"""The options every command spells the same way (issue 20), and what they mean.

- `--stack NAME|PATH` (`-s`): a stack name (`stacks/Pulumi.<name>.yaml` of the project) or the path of a stack file
  named `Pulumi.<name>.yaml`. A file outside the project's `stacks/` folder is read from where it is; the stack is
  still called `<name>`, so its usage profile (`usage:` key, else `cost/usage/<name>.yaml`) and the image lock
  (`images/lock.json`) are the current project's.
- `--format F`: how the result is printed (`table` for people; `json` for programs; some commands add csv, xlsx,
  html, markdown). `--json` is an alias of `--format json` wherever it exists. `chosen_format` checks it; the
  command then prints through the one table of renderers, `renderers.render(chosen, out, json=..., table=...)`
  (gpufleet/cli/renderers.py), never by testing the format name itself (tests/test_renderers.py).
- `-o FILE` / `--output FILE`: write the `--format` output to FILE instead of standard output (atomically; `-` is
  standard output). Binary formats (xlsx) need it. Other files a command writes have their own option names.
- Exit codes: 0 done; 1 a check failed (over budget, does not fit, capacity short, a recipe that does not hold
  together, a build step or a load test that failed); 2 bad input (a usage error, a bad file or value).
- Colour: none when NO_COLOR is set or the output is not a terminal (gpufleet/errors.py console()).
- Help: `-h` is `--help` everywhere; `gpufleet` or a group without a command prints its help and exits 0 (cli/__init__.py).
- Numbers: every float option is declared with `real()`: nan and inf are refused (exit 2), which click's float and
  float range are not (nan passes every min/max comparison).
- Figures: a lower bound reads `≥ X`, a spread `X (low–high)`, a change with an unpriced side `at most +X`, in every
  text format (gpufleet/cost/figures.py).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer

from gpufleet.errors import Problem, UserError, did_you_mean, one_line

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

BINARY_FORMATS = frozenset({"xlsx"})


def stack(
    required: bool = True, help: str = "stack name (e.g. alicloud-cn-hangzhou-prod) or path of a Pulumi.<name>.yaml file"
) -> Any:
    return typer.Option(
        ... if required else None,
        "--stack",
        "-s",
        help=help,
        callback=resolve_stack,
        metavar="NAME|PATH",
        autocompletion=complete_stack,
    )


def complete_stack(incomplete: str) -> list[str]:
    """Shell completion of --stack: the project's stack names (a path is left to the shell's file completion)."""
    if "/" in incomplete:
        return []
    from gpufleet.errors import UserError as NoProject
    from gpufleet.stacks import loader

    try:
        names = loader.stack_names()
    except NoProject:  # not inside a project
        return []
    return [n for n in names if n.startswith(incomplete)]


def resolve_stack(value: str | None) -> str | None:
    """The stack name for a name or a stack file path (registered with the loader so every reader finds the file).
    The name, given or the file's, must be a stack name (loader.bad_stack_name) before any file is looked up by it."""
    if value is None:
        return value
    from gpufleet.stacks import loader

    if "/" in value or value.endswith(".yaml"):
        return loader.use_stack_file(Path(value))  # checks the name in the file's name
    if why := loader.bad_stack_name(value):
        raise UserError([Problem("--stack", "", why)])
    return value


def complete_gpu(incomplete: str) -> list[str]:
    """Shell completion of --gpu: the catalog's GPU kinds."""
    from gpufleet.stacks.catalog import gpu_kinds

    return [k for k in gpu_kinds() if k.startswith(incomplete)]


def complete_recipe(incomplete: str) -> list[str]:
    """Shell completion of --recipe: the recipes in images/recipes/."""
    from gpufleet.images.recipes import recipe_names

    return [n for n in recipe_names() if n.startswith(incomplete)]


def complete_cloud(incomplete: str) -> list[str]:
    from gpufleet import registry

    return [n for n in registry.names() if n.startswith(incomplete)]


def known_cloud(value: str | None) -> str | None:
    """The callback of a `--cloud` option: a registered cloud (gpufleet/registry.py), else a UserError listing them."""
    if value is None:
        return value
    from gpufleet import registry

    if why := registry.unknown(value):
        raise UserError([Problem("--cloud", "", why)])
    return value


def real(default: Any, *names: str, **kwargs: Any) -> Any:
    """A float option (typer.Option's arguments, min and max included) that refuses nan and inf: click's float and
    float range take them, and nan passes every range check (each comparison with nan is false)."""
    return typer.Option(default, *names, callback=finite, **kwargs)


def finite(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def given(ctx: typer.Context, but: Sequence[str] = ()) -> list[str]:
    """The options of the command given on the command line (not left at their default), but the ones named (by
    parameter name), as their first flag: for options another one makes meaningless (plan fit --stack)."""
    # by name: typer ships its own copy of click (typer._click), whose ParameterSource is not click's
    return [
        p.opts[0]
        for p in ctx.command.params
        if p.name and p.name not in but and p.opts and getattr(ctx.get_parameter_source(p.name), "name", "") == "COMMANDLINE"
    ]


def fmt(choices: Sequence[str]) -> Any:
    return typer.Option(
        None,
        "--format",
        help=f"how to print the result: {' | '.join(choices)} (default: what -o FILE's extension names, else table)",
        metavar="FORMAT",
        autocompletion=lambda incomplete: [c for c in choices if c.startswith(incomplete)],
    )


def json_alias() -> Any:
    return typer.Option(False, "--json", help="same as --format json", show_default=False)


def output(help: str = "write the --format output to this file instead of standard output ('-' = standard output)") -> Any:
    return typer.Option(None, "-o", "--output", help=help, metavar="FILE", parser=path)


def path(value: str | Path) -> Path:
    """The parser of every file and folder option: a path, but not an empty one (Path("") is ".", the current folder,
    which -o would refuse as "a folder" and a file option would read as one)."""
    return Path(file_name(str(value)))


def file_name(value: str) -> str:
    """The parser of a file option kept as text (--usage, --discounts): not empty, which read as "not given"."""
    if not value.strip():
        raise typer.BadParameter("is empty: give a path")
    return value


def inputs(out: Path | None, stacks: Sequence[str | None], *files: Path | str | None) -> tuple[Path | str | None, ...]:
    """What a command reads, which its -o must not replace (chosen_format's `reads`): each stack's file and usage file,
    images/lock.json (a stack's image is resolved from it), and `files` (its --usage, --bill, --trace, ...). Looked
    up only when there is an -o FILE."""
    from gpufleet.files import is_stdout

    if out is None or is_stdout(out):
        return ()
    from gpufleet.cost.usage import stack_usage_file  # here: a command without -o FILE does not import cost
    from gpufleet.stacks.loader import stack_path

    found: list[Path | str | None] = list(files)
    if any(stacks):
        from gpufleet.stacks.lock import lock_path

        try:
            found.append(lock_path())
        except UserError:
            pass  # no project: the command reports it when it looks for the stack
    for s in filter(None, stacks):
        found.append(stack_path(s))
        try:
            found.append(stack_usage_file(s)[0])
        except UserError:
            pass  # a bad stack file or usage key: the command reports it when it reads them
    return tuple(found)


def chosen_format(
    value: str | None,
    as_json: bool,
    choices: Sequence[str],
    out: Path | None = None,
    reads: Sequence[Path | str | None] = (),
) -> str:
    """The format asked for (no --format: the one -o FILE's extension names, else table), or a UserError: an unknown
    name, --json with another --format, binary without -o, an -o whose extension names another format (a text table
    in q3.xlsx), an -o that cannot be written or is one of `reads` (the command's input files: its stack file, a usage
    file, ...)."""
    from gpufleet.files import output_problems

    named = out.suffix.lower().lstrip(".") if out is not None and str(out) != "-" else ""
    problems: list[Problem] = []
    if as_json and value not in (None, "json"):
        problems.append(Problem("--json", "", f"is --format json; it cannot be combined with --format {value}"))
    if value is None:
        value = named if named in choices and not as_json else "table"
    chosen = "json" if as_json else value
    if chosen not in choices:
        problems.append(Problem("--format", "", f"unknown format {value!r}" + did_you_mean(value, list(choices))))
    elif chosen in BINARY_FORMATS and (out is None or str(out) == "-"):
        problems.append(Problem("--format", chosen, f"is a binary file: give -o FILE.{chosen}"))
    elif named in choices and named != chosen:
        problems.append(
            Problem(
                "-o", str(out), f"names a .{named} file but the output is {chosen}: give --format {named}, or another file name"
            )
        )
    if out is not None:
        problems += output_problems(out, reads=tuple(reads))
    if problems:
        raise UserError(problems)
    return chosen


def show(draw: Callable[[Any], None], out: Path | None) -> None:
    """Print what `draw(console)` prints (a table, a tree): on standard output with colour when it is a terminal, or
    into `out` as plain text (-o FILE with --format table)."""
    from gpufleet.errors import console

    if out is None:
        draw(console())
        return
    emit(lambda buf: draw(console(file=buf)), out)


def emit(content: str | bytes | Callable[[io.StringIO], None], out: Path | None, say_written: bool = True) -> None:
    """Print `content` (text, bytes, or a function writing text to a buffer) or write it to `out` atomically."""
    from gpufleet.files import is_stdout, write_atomic

    if callable(content):
        buf = io.StringIO()
        content(buf)
        content = buf.getvalue()
    if isinstance(content, str) and not content.endswith("\n"):
        content += "\n"  # a text file ends with a newline, on standard output or in a file
    if out is None:
        if isinstance(content, bytes):
            raise UserError([Problem("-o", "", "a binary format needs -o FILE")])
        typer.echo(content, nl=not content.endswith("\n"))
        return
    write_atomic(out, content)
    if say_written and not is_stdout(out):
        typer.echo(f"wrote {one_line(str(out))}", err=True)  # a newline or escape in the name printed as such
