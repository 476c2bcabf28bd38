"""A pip hash lock's requirement lines (the python_lock a recipe installs): their form and the versions they pin.

Kept apart from recipes.py (which builds the recipe models when imported) so that `plan fit` reads a lock's
transformers pin without paying for those models."""

from __future__ import annotations

import re

# A requirement line's first word in a pip hash lock: name[extras]==version (the version as pip-compile writes it,
# with a local part such as torch's +cu130 when it came from a CUDA index).
REQUIREMENT = r"(?P<name>[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)(\[[A-Za-z0-9._,-]+\])?==(?P<version>[A-Za-z0-9.!+_-]+)"


def lock_pins(text: str) -> dict[str, str]:
    """name -> version of each requirement of a pip hash lock (names lowercased, `_` and `.` read as `-`, as PEP 503
    compares them); the one reader of a lock's versions (steps.lock_lines_problem says whether it is a lock)."""
    found = (re.match(REQUIREMENT + r"(\s|$)", line) for line in text.splitlines())
    return {re.sub(r"[-_.]+", "-", m["name"]).lower(): m["version"] for m in found if m}
