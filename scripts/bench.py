"""Benchmarks of the offline commands, as ratios against a floor (not timed tests).

    .venv/bin/python scripts/bench.py [--runs 5] [--only preview,cost]

Each case is a whole `gpufleet` process, timed `--runs` times, each run paired with (interleaved with) a run
of its floor: the interpreter importing what the command cannot avoid (the cloud programs and the provider
modules they use, for preview and cost; typer and pydantic for the CLI and pure computation). The ratio is
the median of the case over the median of its floor from the same pairs. A ratio near 1 means the command
adds little on top of its imports; the absolute seconds depend on the machine, the ratio much less.
Targets (issue 19): preview <= 1.2, --help <= 1.6, plan fit <= 2.5.

Group `simulate` (issue 28) runs in this process: a 7-day trace at 10-second resolution (60,480 rows, CSV) through a
fleet of up to 50 nodes (Alibaba prod's declared scaling with the group at 10-50 nodes), read and simulated; its
floor is reading the trace alone. Target: <= 2 s. Then 1, 2, 4 and 7 days, to show the cost grows linearly.
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
    "typer+pydantic": [PY, "-c", "import typer, pydantic"],
    # the cloud programs' modules, i.e. the provider submodules they declare resources of
    "programs": [PY, "-c", "import gpufleet.components.alicloud.program, gpufleet.components.tencentcloud.program"],
    # one cloud's program and the provider submodules its prod stack declares resources of, loaded (asking a lazy
    # provider module for an attribute loads it; the modules are those the type tokens of `preview --json` name)
    "alicloud classes": [
        PY,
        "-c",
        "import gpufleet.components.alicloud.program, pulumi_alicloud as p\n"
        "for m in ('cms', 'ecs', 'ess', 'ram', 'slb', 'vpc'): hasattr(getattr(p, m), '_')",
    ],
    "tencentcloud classes": [
        PY,
        "-c",
        "import gpufleet.components.tencentcloud.program, tencentcloud_iac_pulumi as p\n"
        "for m in ('as_', 'cam', 'clb', 'eip', 'monitor', 'nat', 'route', 'security', 'subnet', 'vpc'): hasattr(getattr(p, m), '_')",
    ],
}

CASES = [  # (group, name, command, floor)
    ("cli", "gpufleet --help", [*GF, "--help"], "typer+pydantic"),
    ("preview", "preview alicloud prod", [*GF, "preview", "--stack", "alicloud-cn-hangzhou-prod", "--json"], "alicloud classes"),
    (
        "preview",
        "preview tencentcloud prod",
        [*GF, "preview", "--stack", "tencentcloud-ap-guangzhou-prod", "--json"],
        "tencentcloud classes",
    ),
    (
        "cost",
        "cost estimate alicloud prod",
        [*GF, "cost", "estimate", "--stack", "alicloud-cn-hangzhou-prod", "--json"],
        "alicloud classes",
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
        "typer+pydantic",
    ),
]


def seconds(cmd: list[str]) -> float | None:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True)
    return time.perf_counter() - start if done.returncode == 0 else None


def paired_medians(cmd: list[str], floor: list[str], runs: int) -> tuple[float | None, float | None]:
    """(median seconds of cmd, of floor), the two run alternately so that machine load hits both alike."""
    case_t, floor_t = [], []
    for _ in range(runs):
        for out, c in ((case_t, cmd), (floor_t, floor)):
            t = seconds(c)
            if t is None:
                return (None, 0.0) if c is cmd else (0.0, None)
            out.append(t)
    return statistics.median(case_t), statistics.median(floor_t)


def _fifty_node_fleet():
    """Alibaba prod's declared resources with the group at 10-50 nodes and no schedules; its behaviour and a capacity."""
    import copy

    from gpufleet import plan
    from gpufleet.simulate import capacity, run

    p = plan.for_stack("alicloud-cn-hangzhou-prod")
    res = [copy.deepcopy(r) for r in p.resources if r["type"] != "alicloud:ess/scheduledTask:ScheduledTask"]
    for r in res:
        if r["type"] == "alicloud:ess/scalingGroup:ScalingGroup":
            r["inputs"].update(minSize=10, maxSize=50, desiredCapacity=10)
    return run.behaviour(p.fleet, res, node_completes=True), capacity.given(13.768)


def simulate_bench(runs: int) -> None:
    import tempfile
    from datetime import UTC, datetime

    from gpufleet.simulate import run, trace

    b, cap = _fifty_node_fleet()
    start = datetime(2026, 12, 7, tzinfo=UTC)
    day = trace.profile("day", 10 * cap.requests_per_s * 0.95, start, 10.0, run.day_shape(b)).rates  # peaks at 48 nodes
    with tempfile.TemporaryDirectory() as tmp:
        per_day = {}
        for days in (1, 2, 4, 7):
            path = Path(tmp) / f"trace-{days}d.csv"
            path.write_text("time,requests_per_s\n" + "".join(f"{i * 10},{v:.4f}\n" for i, v in enumerate(day * days)))
            case_t, floor_t, peak = [], [], 0
            for _ in range(runs):
                t0 = time.perf_counter()
                trace.read(path, start)
                floor_t.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                r = run.simulate(b, cap, trace.read(path, start))
                case_t.append(time.perf_counter() - t0)
                peak = max(r.counts["serving"])
            t, f = statistics.median(case_t), statistics.median(floor_t)
            per_day[days] = t / days
            name = f"simulate {days} d x 10 s, {peak} nodes"
            print(f"{name:<36} {t:>9.2f} {'read the trace':>20} {f:>8.2f} {t / f:>6.2f}", flush=True)
        lo, hi = min(per_day.values()), max(per_day.values())
        print(
            f"{'  seconds per simulated day':<36} "
            + ", ".join(f"{d} d: {v:.3f}" for d, v in per_day.items())
            + f"  (max/min {hi / lo:.2f})"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated groups: cli, preview, cost, plan, simulate")
    args = ap.parse_args()
    groups = set(filter(None, args.only.split(",")))
    print(f"{'case':<36} {'median s':>9} {'floor':>20} {'floor s':>8} {'ratio':>6}   (paired, median of {args.runs})")
    for group, name, cmd, floor in CASES:
        if groups and group not in groups:
            continue
        t, f = paired_medians(cmd, FLOORS[floor], args.runs)
        if f is None:
            print(f"{name:<36} floor {floor!r} failed: {' '.join(FLOORS[floor][1:])} exited non-zero")
            continue
        if t is None:
            print(f"{name:<36} {'failed':>9}   ({' '.join(cmd[1:])} exited non-zero)")
            continue
        print(f"{name:<36} {t:>9.2f} {floor:>20} {f:>8.2f} {t / f:>6.2f}", flush=True)
    if not groups or "simulate" in groups:
        simulate_bench(args.runs)


if __name__ == "__main__":
    main()
