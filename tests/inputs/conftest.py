"""Fixtures of tests/inputs: a temp copy of the project; the generated-case count in the summary."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .inputs_helpers import GENERATED, ROOT


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A copy of the project's stacks/, the usage files they name (cost/usage/) and images/lock.json (the user state
    commands read and `region new` writes), used via GPUFLEET_PROJECT."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", root / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "cost" / "usage", root / "cost" / "usage")  # a stack's `gpufleet:usage` path is the project's
    (root / "images").mkdir()
    shutil.copy(ROOT / "images" / "lock.json", root / "images" / "lock.json")  # user state: read from the project root
    monkeypatch.setenv("GPUFLEET_PROJECT", str(root))
    monkeypatch.setenv("COLUMNS", "200")
    return root


def pytest_terminal_summary(terminalreporter):
    if GENERATED["cases"]:
        terminalreporter.write_line(f"tests/inputs: {GENERATED['cases']} generated (Hypothesis) cases run, no traceback")
