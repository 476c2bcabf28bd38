"""Benchmarks of the offline commands, as ratios against a floor (not timed tests).

    .venv/bin/python scripts/bench.py [--runs 5] [--only preview,cost]

Each case is a whole `gpufleet` process, timed `--runs` times; the median is divided by the median of
its floor: the interpreter importing what the command cannot avoid (the cloud programs and the
provider modules they use, for preview and cost; nothing but Python for pure computation). A ratio
near 1 means the command adds little on top of its imports; the absolute seconds depend on the
machine, the ratio much less.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
GF = [str(Path(PY).parent / "gpufleet")]  # the console script of the interpreter's environment

FLOORS = {
    "python": [PY, "-c", "pass"],
    # the cloud programs' modules, i.e. the provider submodules they declare resources of
    "programs": [PY, "-c", "import gpufleet.components.alicloud.program, gpufleet.components.tencentcloud.program"],
}

CASES = [  # (group, name, command, floor)
    ("preview", "preview alicloud prod", [*GF, "preview", "--stack", "alicloud-cn-hangzhou-prod", "--json"], "programs"),
    ("preview", "preview tencentcloud prod", [*GF, "preview", "--stack", "tencentcloud-ap-guangzhou-prod", "--json"], "programs"),
    (
        "cost",
        "cost estimate alicloud prod",
        [*GF, "cost", "estimate", "--stack", "alicloud-cn-hangzhou-prod", "--json"],
        "programs",
    ),
    (
        "cost",
        "cost compare 2 clouds x 4 billing",
        [*GF, "cost", "compare", "--stack", "alicloud-cn-hangzhou-prod", "--format", "json"],
        "programs",
    ),
    (
        "plan",
        "plan fit Qwen2.5-7B on A10",
        [*GF, "plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10", "--json"],
        "python",
    ),
]


def median_seconds(cmd: list[str], runs: int) -> float | None:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            return None
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated groups: preview, cost, plan")
    args = ap.parse_args()
    groups = set(filter(None, args.only.split(",")))
    floors = {name: median_seconds(cmd, args.runs) for name, cmd in FLOORS.items()}
    print(f"{'case':<36} {'median s':>9} {'floor':>10} {'floor s':>8} {'ratio':>6}   (median of {args.runs})")
    for group, name, cmd, floor in CASES:
        if groups and group not in groups:
            continue
        t = median_seconds(cmd, args.runs)
        if floors[floor] is None:
            print(f"{name:<36} floor {floor!r} failed: {' '.join(FLOORS[floor][1:])} exited non-zero")
            continue
        if t is None:
            print(f"{name:<36} {'failed':>9}   ({' '.join(cmd[1:])} exited non-zero)")
            continue
        print(f"{name:<36} {t:>9.2f} {floor:>10} {floors[floor]:>8.2f} {t / floors[floor]:>6.2f}")


if __name__ == "__main__":
    main()
