"""Fixtures of tests/inputs: a temp copy of the project; the generated-case count in the summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from .inputs_helpers import GENERATED


@pytest.fixture
def project(project, monkeypatch) -> Path:
    """tests/conftest.py's copy of the project, printed 200 columns wide (the messages checked are on one line)."""
    monkeypatch.setenv("COLUMNS", "200")
    return project


def pytest_terminal_summary(terminalreporter):
    if GENERATED["cases"]:
        terminalreporter.write_line(f"tests/inputs: {GENERATED['cases']} generated (Hypothesis) cases run, no traceback")
