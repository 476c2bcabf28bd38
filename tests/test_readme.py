"""The README's offline commands run as printed (the lines marked `# offline` in its bash blocks)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
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


@pytest.mark.parametrize("command", offline_commands())
def test_offline_command_runs_as_printed(command):
    argv = shlex.split(command)
    assert argv[0] == ".venv/bin/gpufleet", "README commands call the project's venv"
    argv[0] = str(Path(sys.executable).parent / "gpufleet")  # this interpreter's venv: the one the README installs
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not re.search(r"\[/?(green|red|yellow|bold|dim)\]", result.stdout), "rich markup printed literally"
