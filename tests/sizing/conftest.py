"""The calibration table is printed in the terminal summary (after the run), not in the middle of the progress."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    lines = getattr(terminalreporter.config, "sizing_calibration_report", None)  # set by test_calibration.py
    if lines:
        terminalreporter.section("plan fit against published vLLM start-up logs (tests/sizing/test_calibration.py)")
        for line in lines:
            terminalreporter.write_line(line)
