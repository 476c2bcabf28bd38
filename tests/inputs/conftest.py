"""Fixtures of tests/inputs: a temp copy of the project; the generated-case count in the summary."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .inputs_helpers import GENERATED, ROOT


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A copy of the project's stacks/ (the folder commands read and `region new` writes), used via GPUFLEET_PROJECT."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", root / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("GPUFLEET_PROJECT", str(root))
    monkeypatch.setenv("COLUMNS", "200")
    return root


def pytest_terminal_summary(terminalreporter):
    if GENERATED["cases"]:
        terminalreporter.write_line(f"tests/inputs: {GENERATED['cases']} generated (Hypothesis) cases run, no traceback")
