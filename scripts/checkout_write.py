"""The scripts' one file writer when they run in another Python than gpufleet's (the vLLM snapshots run where vLLM is
installed): gpufleet's own, src/gpufleet/files.py of this checkout."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_atomic(path: Path, text: str, **how: str) -> int:
    """Write through gpufleet's one file writer (src/gpufleet/files.py of this checkout: checked, a temporary file,
    fsync'ed, renamed; a full disk leaves the old file whole), whichever Python runs this script; 0, or 2 with the
    message."""
    sys.path.insert(0, str(ROOT / "src"))
    try:
        from gpufleet import files
        from gpufleet.errors import UserError
    except ImportError as exc:  # msgspec, which gpufleet's errors need
        print(
            f"{path}: not written: src/gpufleet/files.py needs {exc.name} in this Python (pip install {exc.name})",
            file=sys.stderr,
        )
        return 2
    try:
        files.write_atomic(path, text, **how)
    except UserError as exc:
        print("\n".join(str(p) for p in exc.problems), file=sys.stderr)
        return 2
    return 0
