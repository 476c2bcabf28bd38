"""System tools the tests run for real: found on PATH or in this interpreter's own bin folder (the `[test]` extra
installs shellcheck there), else the test skips and says what to install. Under CI=true a missing tool fails the
test instead: CI installs every tool (scripts/install-system-tools.sh), so a skip there would hide a missing check.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

INSTALL = "sudo bash scripts/install-system-tools.sh"


def find(name: str) -> str | None:
    """The tool's path: PATH, this interpreter's bin folder, then /usr/sbin and /sbin (sshd lives there)."""
    here = Path(sys.executable).parent
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join([str(here), "/usr/sbin", "/sbin"]))


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(name: str, package: str | None = None) -> str:
    """The tool's path, or skip (fail under CI=true) naming the Debian package that brings it."""
    path = find(name)
    if path:
        return path
    why = f"{name} not installed (Debian package {package or name}; {INSTALL})"
    if in_ci():
        pytest.fail(f"CI=true: {why}")
    pytest.skip(why)


def rename_fails_at(monkeypatch, nth: int) -> list[str]:
    """os.replace fails with EPERM on its nth call inside gpufleet.files (a file made immutable, or a folder's
    permission changed, between the stage and the rename); the names of the targets asked for are recorded."""
    import errno

    from gpufleet import files

    real, asked = os.replace, []

    def replace(src, dst):
        asked.append(os.path.basename(dst))
        if len(asked) == nth:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return real(src, dst)

    monkeypatch.setattr(files.os, "replace", replace)
    return asked
