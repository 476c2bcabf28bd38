"""Rewrite the per-class calibration table in docs/sizing.md from the calibration test's figures.

    .venv/bin/python scripts/sizing_calibration_table.py

The table sits between the two markers below; tests/sizing/test_calibration.py fails when it differs from what
gpufleet.sizing.calibration.class_table_markdown() computes now.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "sizing.md"
START, END = "<!-- calibration-table:start -->", "<!-- calibration-table:end -->"


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)  # no options: --help prints, any other refused
    from gpufleet.errors import UserError
    from gpufleet.files import write_atomic
    from gpufleet.sizing.calibration import class_table_markdown

    text = DOC.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    try:
        write_atomic(DOC, f"{head}{START}\n{class_table_markdown()}\n{END}{tail}", shown=str(DOC))  # never half the doc
    except UserError as exc:
        print("\n".join(str(p) for p in exc.problems), file=sys.stderr)
        return 2
    print(f"wrote the table into {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
