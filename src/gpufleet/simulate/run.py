"""A stack's simulation: its plan's declared resources read by its cloud, the node's timings, a capacity, a trace."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from msgspec.structs import replace

from gpufleet import clock, cron, plan, registry
from gpufleet.behaviour import timings
from gpufleet.behaviour.model import Behaviour
from gpufleet.errors import Problem, UserError
from gpufleet.simulate import cost, engine, report, summary, trace
from gpufleet.simulate.capacity import NodeCapacity
from gpufleet.simulate.trace import PROFILE_STEP_S, Trace


def behaviour(fleet, resources: list[dict], node_completes: bool | None = None) -> Behaviour:
    """The Behaviour of a fleet's declared resources, read by its cloud's simulation module."""

    mod = registry.module(fleet.spec.cloud, "simulation")
    b = mod.behaviour(resources, timings.node(fleet), node_completes)
    candidate = getattr(fleet, "candidate", None)
    if candidate is not None:  # a rollout: the candidate's nodes fetch and load its own model
        own = timings.node(candidate)
        loading = ("weights_fetch_s", "cuda_graphs_s")
        ready = sum(b.timing(n) for n in READY) - sum(b.timing(n) for n in loading) + sum(own[n].seconds for n in loading)
        prefix = candidate.group_prefix + "-"
        b.groups = [replace(g, ready_s=ready) if g.name.startswith(prefix) else g for g in b.groups]
        b.notes.append(
            f"the candidate group's nodes ({candidate.group_prefix}) are ready {ready:g} s after they are in service: "
            f"{own['weights_fetch_s'].source}"
        )
    return b


READY = ("os_boot_s", "weights_fetch_s", "vllm_load_s", "cuda_graphs_s")  # in service -> vLLM serving (engine.py)


def step_low(b: Behaviour, cap: NodeCapacity) -> float:
    """The `low` of the step and spike profiles: a quarter of what the floor serves (the floor: the groups' min)."""
    return 0.25 * cap.requests_per_s * max(1, sum(g.min for g in b.groups))


def day_shape(b: Behaviour) -> list[tuple[float, float]]:
    """A business day in UTC hours as multiples of `low`, shaped by the declared schedules: the load is 5x low while
    the schedule with the most desired nodes holds, low while the one with the fewest does (a weekday's firings).
    Without schedules: quiet at night, a morning ramp, a busy day, quiet again (UTC hours, a China business day)."""

    monday = datetime(2026, 12, 7, tzinfo=UTC)
    firings = []
    for s in b.schedules:
        try:
            at = cron.next_firing(s.cron, monday - timedelta(minutes=1), cron.zone(s.zone_hours)).astimezone(UTC)
        except cron.CronError:
            continue
        if at < monday + timedelta(days=1):
            firings.append((at.hour + at.minute / 60, s.desired))
    if len(firings) >= 2 and len({d for _, d in firings}) > 1:
        lo, hi = min(d for _, d in firings), max(d for _, d in firings)
        firings.sort()

        def level(h: float) -> float:
            held = [d for at, d in firings if at <= h] or [firings[-1][1]]  # before the first firing: yesterday's last
            return 1.0 + 4.0 * (held[-1] - lo) / (hi - lo)

        points: list[tuple[float, float]] = []
        # the load rises in the 30 minutes after a schedule adds nodes, falls in the 30 before one removes them
        for hour, _ in firings:
            before, after = level(hour - 1e-6), level(hour)
            points += (
                [(hour, before), (min(24.0, hour + 0.5), after)]
                if after >= before
                else [(max(0.0, hour - 0.5), before), (hour, after)]
            )
        points = [(0.0, level(0.0)), *points, (24.0, level(24.0))]
        return sorted(points)
    return [(0, 1.0), (1, 2.0), (3, 4.0), (6, 5.0), (9, 4.0), (13, 1.5), (16, 1.0), (24, 1.0)]


def default_trace(name: str, b: Behaviour, cap: NodeCapacity, start: datetime, step_s: float = PROFILE_STEP_S) -> Trace:
    return trace.profile(name, step_low(b, cap), start, step_s, day_shape(b))


def simulate(b: Behaviour, cap: NodeCapacity, tr: Trace, reclaim_at=(), reclaim_per_hour: float = 0.0) -> engine.Result:
    return engine.simulate(b, cap, tr, tuple(reclaim_at), reclaim_per_hour)


def trace_problems(tr: Trace, start: datetime | None, reclaim_at: tuple[float, ...], trace_file=None) -> list[Problem]:
    """What plan scaling's options say that the trace makes moot: a --start for a trace with its own ISO times (they
    win), a --reclaim-at at or after the trace's end (the reclaim never happens, and the run looks as if the fleet
    coped, as a reclaim on a fleet without spot nodes would: both refused)."""
    problems = []
    if start is not None and tr.timed:
        problems.append(
            Problem(
                "--start",
                "",
                f"not used with --trace {trace_file}, whose rows carry their own ISO times (the trace starts at "
                f"{tr.start.isoformat()}): drop --start, or write the trace's times as seconds from the start",
            )
        )
    if late := [a for a in reclaim_at if a >= tr.duration_s]:
        problems.append(
            Problem(
                "--reclaim-at",
                "",
                f"{', '.join(f'{a:g}' for a in late)} s: the trace lasts {tr.duration_s:g} s ({tr.duration_s / 3600:.4g} h), "
                f"a reclaim at or after its end takes nothing: give seconds below {tr.duration_s:g}, or a longer trace",
            )
        )
    return problems


# Longer than this, `plan scaling` says before it starts how long the simulation will take: the work grows with the
# simulated time (about S_PER_DAY a simulated day, docs/simulation.md "Speed"), whatever the trace's rows.
LONG_SPAN_S = 7 * 86400
S_PER_DAY = 0.2


def for_stack(
    stack: str,
    cap: NodeCapacity,
    trace_file=None,
    profile: str = "day",
    slo_ttft_ms: float | None = None,
    reclaim_at: tuple[float, ...] = (),
    reclaim_per_hour: float = 0.0,
    start: datetime | None = None,
    priced: bool = True,
    warnings: tuple[str, ...] = (),
    say=None,
) -> dict:
    """The plan scaling document of a stack (gpufleet.simulate.report.document): timeline, summary, cost, notes
    (`warnings` first: the load test measured another configuration). `say(line)`, when given, is told before a long
    simulation starts how long it will take (LONG_SPAN_S)."""

    p = plan.for_stack(stack)
    b = behaviour(p.fleet, p.resources)
    if (reclaim_at or reclaim_per_hour) and not any(g.billing == "spot" for g in b.groups):
        # a reclaim takes a spot node: on a fleet without one they did nothing, and the day ran as if it had coped
        flag = "--reclaim-at" if reclaim_at else "--reclaim-per-hour"
        billed = ", ".join(sorted({g.billing for g in b.groups}))
        raise UserError(
            [
                Problem(
                    flag,
                    "",
                    f"{stack} launches no spot node (its groups are billed {billed}): a reclaim would take nothing; drop "
                    f"{flag}, or simulate a stack with billing spot",
                )
            ]
        )
    when = start or trace.next_start(clock.now())
    tr = trace.read(trace_file, when) if trace_file is not None else default_trace(profile, b, cap, when)
    if problems := trace_problems(tr, start, reclaim_at, trace_file):
        raise UserError(problems)
    if say is not None and tr.duration_s > LONG_SPAN_S:  # a 44-byte trace ran 51 s without a word (review F12)
        days = tr.duration_s / 86400
        say(
            f"simulating {days:.4g} days of {tr.source or 'trace'} (about {S_PER_DAY:g} s a simulated day, "
            f"so about {days * S_PER_DAY:.0f} s; docs/simulation.md)"
        )
    r = simulate(b, cap, tr, reclaim_at, reclaim_per_hour)
    slo_s = None if slo_ttft_ms is None else slo_ttft_ms / 1000
    summ = summary.summary(r, slo_s)
    notes = [f"WARNING {w}" for w in warnings] + list(b.notes)
    notes += [f"{h.transition} hook on {h.group}: {h.why}" for h in b.hooks]
    notes += [
        f"at the start {e.group} is where its schedule {e.detail} left it {-e.time_s / 3600:.4g} h before (desired {e.desired})"
        for e in r.at_start
    ]
    if cap.ttft_curve == ():
        notes.append("no load test: the TTFT estimate is the queue wait only (give --from-loadtest for the prefill's own TTFT)")
    estimates = sorted(k for k, v in b.timings.items() if v.quality == "estimate")
    notes.append("estimated timings (no source found; see the JSON's timings): " + ", ".join(estimates))
    c = None
    if priced:
        node_hours = {k: v / 3600 for k, v in r.billing_node_s.items()}
        c = cost.trace_cost(stack, r, node_hours, summ["output_tokens_served"])
    return report.document(stack, r, summ, c, notes)
