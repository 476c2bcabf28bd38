"""Write a stack's Prometheus rule file and Grafana dashboard (components/monitoring.py) into a folder.

python scripts/monitoring_files.py --stack alicloud-cn-hangzhou-prod -o monitoring/

The folder is checked before the stack is read (a file in its place, a folder that cannot be made), and the two files
are written all or nothing (gpufleet.files.write_folder): a full disk, or a folder where a file goes, leaves both old
files as they were. Bad input is exit 2 with the message, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpufleet import files, validation
from gpufleet.components import monitoring
from gpufleet.errors import Problem, UserError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("-o", "--out", default=".", help="the folder to write the two files into (made if missing)")
    args = parser.parse_args(argv)
    try:
        out = Path(args.out)
        if args.out in ("", files.STDOUT):
            why = "is empty: give a folder" if not args.out else "is standard output, which two files cannot share: give a folder"
            raise UserError([Problem("-o", args.out, why)])
        if problems := files.folder_problems(out, (), "-o"):  # before the stack is read
            raise UserError(problems)
        fleet = validation.load_fleet(args.stack, sizing=False)
        unknown = monitoring.unknown_metrics(fleet)
        if unknown:
            print(f"metric names the pinned software does not export: {', '.join(unknown)}", file=sys.stderr)
            return 1
        written = monitoring.files(fleet)
        files.write_folder(out, written, flag="-o")  # every target checked, then all or nothing
    except UserError as exc:
        print("\n".join(str(p) for p in exc.problems), file=sys.stderr)
        return 2
    for name in written:
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
