"""Benchmarks of the offline commands, as ratios against a floor (not timed tests).

    .venv/bin/python scripts/bench.py [--runs 5] [--only preview,cost]

Each case is a whole `gpufleet` process, timed `--runs` times, each run paired with (interleaved with) a run
of its floor. The ratio is the median of the case over the median of its floor from the same pairs; the absolute
seconds depend on the machine (and its load), the ratio much less.

Before timing, gpufleet's modules are compiled to bytecode as installing the wheel does (compiled_as_installed).

Floors (issue 25): what the command cannot avoid, and nothing of gpufleet.
- `typer+pydantic`: the interpreter importing typer and pydantic (the CLI and pure computation).
- `<stack> registered`: scripts/bench_floor.py registering, under the SDK's mock engine, exactly the resources that
  stack's preview recorded (same type tokens, names, parents, inputs) through the same provider classes, each waiting
  for what the program made it wait for (an input taken from another resource is that resource's Output; the rest
  through depends_on; recorded from the SDK's registrations by with_dependencies), and exiting as the CLI exits. It
  imports nothing of gpufleet; the recording is made once before timing.
- `8 programs registered`: the same for the eight options `cost compare` previews (2 clouds x 4 billing models), one
  mock run each in one process.
Targets (issue 25): preview <= 1.3 on both clouds, cost compare <= 1.5, plan fit <= 2, --help <= 1.6 (`plan fit
--stack` is shown against the same floor: loading a stack imports pydantic's model machinery, about 0.8 of it; the
row `ref: the floor + 1 pydantic model` measures that share on this machine: the floor plus one one-field model).

`--instructions`: the same cases and floors, each run once under valgrind's callgrind, as instructions executed (user
space, the whole process). Deterministic to about 0.5 % (hash seeds), so a change of 1 % shows; wall-clock ratios on a
shared 2-core machine move by 0.1-0.2 between runs. Slower (about 15 s a run) and needs valgrind (apt-get install
valgrind). It adds a reference row: a typer command with four options that does nothing, against `import typer,
pydantic` (what typer itself costs a command; typer is pinned below 0.29, which builds a pydantic TypeAdapter for each
option of the invoked command and so imports all of pydantic at every parse: pyproject.toml).
Per resource (warm, in one process after every import): a prod stack's whole preview (validation, the program,
recording, the provider contract) over its resource count, against the floor's registration of the same recorded
resources over the same count; target <= 1.3. Before the floor waited for what the program waits for (it passed
ids as plain strings), Alibaba's ratio in seconds ran about 0.15 above its instruction ratio: a program whose inputs
chain on other resources' outputs makes the event loop wait on the SDK's executor threads more often (strace -f -c:
258 epoll waits and 1206 futex calls against 172 and 914), which is the SDK's work for any real program, not gpufleet's.

Group `simulate` (issue 28) runs in this process: a 7-day trace at 10-second resolution (60,480 rows, CSV) through a
fleet of up to 50 nodes (Alibaba prod's declared scaling with the group at 10-50 nodes), read and simulated; its
floor is reading the trace alone. Target: <= 2 s. Then 1, 2, 4 and 7 days, to show the cost grows linearly.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
GF = [str(Path(PY).parent / "gpufleet")]  # the console script of the interpreter's environment

FLOOR = [PY, str(ROOT / "scripts" / "bench_floor.py")]
PROD = {"alicloud": "alicloud-cn-hangzhou-prod", "tencentcloud": "tencentcloud-ap-guangzhou-prod"}

# The reference row of group plan: the floor, then one pydantic model with one constrained field, validated once.
# The first model a process builds imports pydantic's schema machinery (fields, types, annotated_types, the schema
# generator, the plugin loader with importlib.metadata) and scans the installed distributions for plugins; that alone is
# about 1.8x the floor, so a stack validated by pydantic models cannot reach 2x of `import typer, pydantic`.
ONE_MODEL = (
    "import typer, pydantic\nclass A(pydantic.BaseModel):\n    x: int = pydantic.Field(1, ge=0)\nA.model_validate({'x': 2})"
)

CASES = [  # (group, name, command, floor): a floor is a name of floors() below
    ("cli", "gpufleet --help", [*GF, "--help"], "typer+pydantic"),
    ("preview", "preview alicloud prod", [*GF, "preview", "--stack", PROD["alicloud"], "--json"], "alicloud registered"),
    (
        "preview",
        "preview tencentcloud prod",
        [*GF, "preview", "--stack", PROD["tencentcloud"], "--json"],
        "tencentcloud registered",
    ),
    (
        "cost",
        "cost estimate alicloud prod",
        [*GF, "cost", "estimate", "--stack", PROD["alicloud"], "--json"],
        "alicloud registered",
    ),
    (
        "cost",
        "cost compare 2 clouds x 4 billing",
        [*GF, "cost", "compare", "--stack", PROD["alicloud"], "--format", "json"],
        "8 programs registered",
    ),
    (
        "plan",
        "plan fit Qwen2.5-7B on A10",
        [*GF, "plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10", "--json"],
        "typer+pydantic",
    ),
    (  # a stack: its validation builds the pydantic spec models, whose machinery that floor does not import
        "plan",
        "plan fit --stack alicloud prod",
        [*GF, "plan", "fit", "--stack", PROD["alicloud"], "--json"],
        "typer+pydantic",
    ),
    (  # a reference, not gpufleet: what validating anything with one pydantic model adds to the same floor
        "plan",
        "ref: the floor + 1 pydantic model",
        [PY, "-c", ONE_MODEL],
        "typer+pydantic",
    ),
]


def with_dependencies(declare: Callable[[], list[dict]]) -> list[dict]:
    """The resources `declare()` records (one mock run), each with what the program made it wait for, from the
    registrations the SDK sent: "dependsOn", [type, name] pairs. bench_floor waits for the same."""
    from gpufleet import mockengine

    waits: dict[tuple[str, str], list[list[str]]] = {}
    register = mockengine._Recorder.RegisterResource

    def recording(self, request):  # noqa: ANN001, ANN202 -- the SDK's monitor method, wrapped
        waits[request.type, request.name] = [
            [u.rsplit("::", 2)[1].split("$")[-1], u.rsplit("::", 1)[1]] for u in request.dependencies
        ]
        return register(self, request)

    mockengine._Recorder.RegisterResource = recording  # type: ignore[method-assign]
    try:
        resources = declare()
    finally:
        mockengine._Recorder.RegisterResource = register  # type: ignore[method-assign]
    return [{**r, "dependsOn": waits.get((r["type"], r["name"]), [])} for r in resources]


def _recorded(tmp: Path, name: str, stack: str, resources: list[dict]) -> str:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps({"stack": stack, "resources": resources}))
    return str(path)


TYPER_NOOP = """
import typer

app = typer.Typer()


@app.command()
def fit(model: str = typer.Option(None), gpu: str = typer.Option(None), gpus: int = typer.Option(1, min=1, max=64),
        share: float = typer.Option(0.9)):
    pass


@app.command()
def other():
    pass


app(["fit", "--model", "m", "--gpu", "A10"], standalone_mode=False)
"""


def floors(tmp: Path, groups: set[str]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """The floor commands, and the resource count of each registered floor (recorded here, before any timing)."""
    out = {"typer+pydantic": [PY, "-c", "import typer, pydantic"]}
    counts: dict[str, int] = {}
    if groups and not groups & {"preview", "cost"}:
        return out, counts
    from gpufleet import plan
    from gpufleet.finance import compare
    from gpufleet.stacks import catalog

    for cloud, stack in PROD.items():
        resources = with_dependencies(lambda: plan.for_stack(stack).resources)  # noqa: B023 -- called at once
        out[f"{cloud} registered"] = [*FLOOR, _recorded(tmp, cloud, stack, resources)]
        counts[f"{cloud} registered"] = len(resources)
    base = plan.for_stack(PROD["alicloud"])
    files = []
    for cloud in catalog.clouds():
        for billing in ("payg", "monthly", "yearly", "spot"):
            new, _, _, _ = compare.redeclare(base.raw, base.fleet, cloud, billing)
            if new is not None:
                option = with_dependencies(lambda: plan.for_spec(new, PROD["alicloud"], file=f"({cloud} {billing})").resources)  # noqa: B023
                files.append(_recorded(tmp, f"{cloud}-{billing}", PROD["alicloud"], option))
    out["8 programs registered"] = [*FLOOR, *files]
    counts["8 programs registered"] = len(files)
    return out, counts


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


def compiled_as_installed() -> None:
    """Bytecode for every gpufleet module, as `pip install` of the wheel writes it. Without it, under
    PYTHONDONTWRITEBYTECODE=1 (set on some machines and CI images) an editable install recompiles each module edited
    since its .pyc was written on every run: ~20 modules, ~0.1 s of a preview the floors (site-packages, compiled at
    install) never pay."""
    import compileall

    import gpufleet

    compileall.compile_dir(Path(gpufleet.__file__).parent, quiet=1)


def instructions(cmd: list[str]) -> int | None:
    """Instructions the command executes (valgrind --tool=callgrind, user space), None if it failed."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], cwd=ROOT, capture_output=True, text=True
    )
    found = [line.split()[-1] for line in done.stderr.splitlines() if "Collected :" in line]
    return int(found[-1]) if done.returncode == 0 and found else None


WARM = """
import sys
sys.path.insert(0, {scripts!r})
import bench
import bench_floor
from gpufleet import preview
stack, which, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
recorded = bench.with_dependencies(lambda: preview.preview_stack(stack).resources)
bench_floor.run(recorded, stack)
for _ in range(n):
    preview.preview_stack(stack) if which == "ours" else bench_floor.run(recorded, stack)
"""


def per_resource_instructions(runs: int = 5) -> None:
    """The per-resource figure as instructions: `runs` warm previews (or floor registrations) after one of each, less
    the same process without them, per run and resource."""
    from gpufleet import preview

    code = WARM.format(scripts=str(ROOT / "scripts"))
    for cloud, stack in PROD.items():
        n = len(preview.preview_stack(stack).resources)
        base = instructions([PY, "-c", code, stack, "ours", "0"])
        ours = instructions([PY, "-c", code, stack, "ours", str(runs)])
        sdk = instructions([PY, "-c", code, stack, "floor", str(runs)])
        if base is None or ours is None or sdk is None:
            print(f"per resource {cloud}: failed")
            continue
        o, f = (ours - base) / runs / n, (sdk - base) / runs / n
        label = f"per resource {cloud} prod ({n}), warm"
        print(f"{label:<38} {o:>13,.0f} {'the SDK alone':>23} {f:>13,.0f} {o / f:>6.2f}", flush=True)


def instructions_bench(groups: set[str]) -> None:
    import shutil
    import tempfile

    if shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        floor_cmds, _ = floors(Path(tmp), groups)
        floor_cmds["typer no-op command"] = [PY, "-c", TYPER_NOOP]
        cases = [c for c in CASES if not groups or c[0] in groups]
        if not groups or groups & {"cli", "plan"}:
            cases.append(("plan", "typer: 4 options, no work (reference)", floor_cmds["typer no-op command"], "typer+pydantic"))
        print(f"{'case':<38} {'instructions':>13} {'floor':>23} {'instructions':>13} {'ratio':>6}")
        counted: dict[str, int | None] = {}
        for _, name, cmd, floor in cases:
            if floor not in counted:
                counted[floor] = instructions(floor_cmds[floor])
            n, f = instructions(cmd), counted[floor]
            if n is None or f is None:
                print(f"{name:<38} {'failed':>13}   ({' '.join((cmd if n is None else floor_cmds[floor])[1:])})")
                continue
            print(f"{name:<38} {n:>13,} {floor:>23} {f:>13,} {n / f:>6.2f}", flush=True)
    if not groups or "preview" in groups:
        per_resource_instructions()


def main() -> None:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated groups: cli, preview, cost, plan, simulate")
    ap.add_argument("--instructions", action="store_true", help="instructions executed (valgrind), not seconds")
    args = ap.parse_args()
    groups = set(filter(None, args.only.split(",")))
    compiled_as_installed()
    if args.instructions:
        instructions_bench(groups)
        return
    with tempfile.TemporaryDirectory() as tmp:
        floor_cmds, counts = floors(Path(tmp), groups)
        print(f"{'case':<36} {'median s':>9} {'floor':>22} {'floor s':>8} {'ratio':>6}   (paired, median of {args.runs})")
        for group, name, cmd, floor in CASES:
            if groups and group not in groups:
                continue
            t, f = paired_medians(cmd, floor_cmds[floor], args.runs)
            if f is None:
                print(f"{name:<36} floor {floor!r} failed: {' '.join(floor_cmds[floor][1:])} exited non-zero")
                continue
            if t is None:
                print(f"{name:<36} {'failed':>9}   ({' '.join(cmd[1:])} exited non-zero)")
                continue
            print(f"{name:<36} {t:>9.2f} {floor:>22} {f:>8.2f} {t / f:>6.2f}", flush=True)
    if not groups or "preview" in groups:
        per_resource_bench(max(args.runs, 5))
    if not groups or "simulate" in groups:
        simulate_bench(args.runs)


def per_resource_bench(runs: int) -> None:
    """Per resource, warm, in this process: gpufleet's preview of a stack (validation, the program, recording, the
    contract) against scripts/bench_floor.py registering the same recorded resources, both after all imports."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_floor

    from gpufleet import preview

    for cloud, stack in PROD.items():
        recorded = with_dependencies(lambda: preview.preview_stack(stack).resources)  # noqa: B023 -- warm: every import done
        n = len(recorded)
        bench_floor.run(recorded, stack)
        ours, sdk = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            preview.preview_stack(stack)
            ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            bench_floor.run(recorded, stack)
            sdk.append(time.perf_counter() - t0)
        o, f = statistics.median(ours) / n * 1000, statistics.median(sdk) / n * 1000
        label = f"per resource {cloud} prod ({n}), warm"
        print(f"{label:<36} {o:>7.2f}ms {'the SDK alone':>22} {f:>6.2f}ms {o / f:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
