"""Writing user-visible files so that a reader never sees half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gpufleet.errors import Problem, UserError


def output_problems(path: Path, flag: str = "-o") -> list[Problem]:
    """Why `path` cannot be written as an output file (checked before any work starts)."""
    if path.is_dir():
        return [Problem(flag, str(path), "is a folder: give a file name")]
    if not path.parent.is_dir():
        return [Problem(flag, str(path), f"folder {path.parent} does not exist: create it or write elsewhere")]
    return []


def write_atomic(path: Path, text: str, flag: str = "-o") -> None:
    """Write `text` to a temporary file in the same folder, then rename it over `path`.

    A crash or a full disk leaves the old file (or none), never a partial one."""
    if problems := output_problems(path, flag):
        raise UserError(problems)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
