"""The README's offline commands run as printed (the lines marked `# offline` in its bash blocks), and the output
the README shows after them (its ```text block) is what they print."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def offline_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    return [
        line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines() if line.rstrip().endswith("# offline")
    ]


def test_the_readme_marks_its_offline_commands():
    assert len(offline_commands()) >= 3


@cache
def run(command: str) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert argv[0] == ".venv/bin/gpufleet", "README commands call the project's venv"
    argv[0] = str(Path(sys.executable).parent / "gpufleet")  # this interpreter's venv: the one the README installs
    env = {**os.environ, "COLUMNS": "200"}  # tables as wide as the README shows them, not wrapped at 80
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("command", offline_commands())
def test_offline_command_runs_as_printed(command):
    result = run(command)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not re.search(r"\[/?(green|red|yellow|bold|dim)\]", result.stdout), "rich markup printed literally"


def shown_outputs() -> list[tuple[list[str], str]]:
    """(the offline commands of a bash block, the text block printed right after it as their output)."""
    pairs = re.findall(r"```bash\n(.*?)```\s*\n```text\n(.*?)```", README, re.S)
    out = []
    for bash, text in pairs:
        commands = [line.split("#", 1)[0].strip() for line in bash.splitlines() if line.rstrip().endswith("# offline")]
        if commands:
            out.append((commands, text))
    return out


def test_the_readme_shows_the_output_of_its_offline_commands():
    assert len(shown_outputs()) >= 3


@pytest.mark.parametrize("commands,text", shown_outputs(), ids=lambda v: v[0] if isinstance(v, list) else "")
def test_the_output_shown_is_what_the_commands_print(commands, text):
    """Each piece of a shown line between its elisions (…) is in what the commands printed, spaces aside: a figure
    the README quotes goes stale with the model it comes from (the plan fit line said 80816 KV tokens after the
    sizing printed 79792)."""
    printed = " ".join(" ".join(run(c).stdout + run(c).stderr for c in commands).split())
    missing = [
        piece
        for line in text.splitlines()
        for piece in (" ".join(p.split()) for p in line.split("…"))
        if piece and piece not in printed
    ]
    assert not missing, f"{commands}: the README shows what they do not print: {missing}"
