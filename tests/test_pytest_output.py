"""The README's test command (`.venv/bin/pytest`) shows each skip with its reason, and no test writes into the middle
of the progress line: what a test wants shown goes to the `gpufleet` section at the end (tests/conftest.py `summary`).
Issue 27 item 6."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pytest(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_skip_reasons_are_shown_with_the_projects_options(tmp_path):
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n\ndef test_needs_a_tool():\n    pytest.skip('shellcheck not installed: apt-get install shellcheck')\n"
    )
    out = _pytest("-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(tmp_path / "test_skips.py"))
    assert "SKIPPED [1]" in out and "shellcheck not installed: apt-get install shellcheck" in out, out


def test_the_progress_line_is_only_progress_and_the_calibration_table_comes_at_the_end():
    out = _pytest("tests/sizing/test_calibration.py")
    lines = out.splitlines()
    progress = [l for l in lines if re.fullmatch(r"[.sFEx]+\s+\[\s*\d+%\]", l)]
    assert progress and lines.index(progress[-1]) < lines.index(next(l for l in lines if "gpufleet" in l and "=" in l))
    first = lines.index(progress[0])
    assert all(re.fullmatch(r"[.sFEx]+\s+\[\s*\d+%\]", l) for l in lines[first : lines.index(progress[-1]) + 1]), out
    assert "median |error|" in out.split(progress[-1], 1)[1]  # the table is still shown, after the dots


def test_no_test_writes_past_pytests_capture():
    """capsys.disabled() (or printing to sys.__stdout__) is what put a table in the middle of the dots."""
    offenders = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in (ROOT / "tests").rglob("*.py")
        if p.name != Path(__file__).name
        for i, line in enumerate(p.read_text().splitlines(), start=1)
        if "capsys.disabled()" in line or "sys.__stdout__" in line
    ]
    assert offenders == []
