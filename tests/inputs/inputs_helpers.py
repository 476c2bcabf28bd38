"""Run the `gpufleet` command in-process against a temp copy of the project, and see what changed on disk."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from msgspec import Struct

ROOT = Path(__file__).resolve().parents[2]
GENERATED = {"cases": 0}


class Run(Struct):
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def run_cli(argv: list[str], capsys) -> Run:
    from gpufleet.cli import main

    capsys.readouterr()
    code = 0
    try:
        main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)


def snapshot(*folders: Path) -> dict[str, str]:
    """path -> sha256 (or the link / kind) of everything under the folders."""
    out = {}
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in filenames + dirnames:
                p = Path(dirpath) / name
                if p.is_symlink():
                    out[str(p)] = "-> " + os.readlink(p)
                elif p.is_file():
                    out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
                else:
                    out[str(p)] = "dir"
    return out
