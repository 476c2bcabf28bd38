"""The commands of cost/catalog/loadtest follow the CLI conventions (issue 20): an example in each help, every option
described, --format with --json as its alias where JSON exists, help that fits 100 columns."""

import pytest
import typer
from typer.testing import CliRunner

from gpufleet.cli import cost as cost_cli
from gpufleet.cli import loadtest as loadtest_cli

COMMANDS = [
    ("cost", "estimate"),
    ("cost", "compare"),
    ("cost", "tokens"),
    ("cost", "report"),
    ("catalog", "build"),
    ("catalog", "refresh"),
    ("loadtest",),
]


@pytest.fixture(scope="module")
def root():
    app = typer.Typer()
    cost_cli.register(app)
    loadtest_cli.register(app)
    return app


def command(app, path: tuple[str, ...]):
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return cmd


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help_has_an_example_and_describes_every_option(root, path):
    cmd = command(root, path)
    options = [p for p in cmd.params if p.param_type_name == "option" and not p.hidden]
    undescribed = [p.name for p in options if not (p.help or "").strip()]
    assert undescribed == []
    text = CliRunner().invoke(root, [*path, "--help"], terminal_width=100).output
    assert "Examples:" in text and f"gpufleet {' '.join(path)}" in text.split("Examples:")[1]
    names = {o for p in cmd.params for o in getattr(p, "opts", [])}
    if "--json" in names:
        assert "--format" in names
        json_opt = next(p for p in cmd.params if "--json" in p.opts)
        assert json_opt.is_flag  # shown as a flag, not as taking a value
    assert max(len(line) for line in text.splitlines()) <= 100
