"""Write a stack's Prometheus rule file and Grafana dashboard (components/monitoring.py) into a folder.

python scripts/monitoring_files.py --stack alicloud-cn-hangzhou-prod -o monitoring/
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpufleet import validation
from gpufleet.components import monitoring
from gpufleet.errors import UserError


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("-o", "--out", default=".")
    args = parser.parse_args()
    try:
        fleet = validation.load_fleet(args.stack, sizing=False)
    except UserError as exc:
        print("\n".join(str(p) for p in exc.problems), file=sys.stderr)
        return 2
    unknown = monitoring.unknown_metrics(fleet)
    if unknown:
        print(f"metric names the pinned software does not export: {', '.join(unknown)}", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in monitoring.files(fleet).items():
        (out / name).write_text(text)
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
