"""What a simulated trace comes to: the nodes the peak needs (even beyond the groups' max) and the time to them,
seconds over the SLO, peak queue, scale events, node-hours by billing model."""

from __future__ import annotations

import math

from gpufleet import cron
from gpufleet.behaviour.model import Schedule
from gpufleet.simulate.engine import Result


def needed_nodes(rate: float, per_node: float) -> int:
    """What plan capacity says a rate needs, without spare: ceil(rate / per-node knee)."""
    return max(0, math.ceil(rate / per_node - 1e-9))


def max_changes(r: Result) -> list[tuple[float, int, tuple[Schedule, ...]]]:
    """The groups' max over the run as the schedules set it: (from time_s, the groups' total max, the schedules then
    holding a group below its own max), from where the schedules left the groups at the start, then at each firing."""
    own = {g.name: g.max for g in r.behaviour.groups}
    declared = {(s.group, s.name): s for s in r.behaviour.schedules}
    holding: dict[str, Schedule] = {}
    out = []
    for e in [*r.at_start, None, *(e for e in r.events if e.kind == "schedule")]:
        if e is not None:
            holding[e.group] = declared[(e.group, e.detail)]
            if e.time_s < 0:  # before the start: the state at the start is recorded once all have been applied
                continue
        total = sum(holding[g].max if g in holding else m for g, m in own.items())
        below = tuple(holding[g] for g, m in own.items() if g in holding and holding[g].max < m)
        out.append((-math.inf if e is None else e.time_s, total, below))
    return out


def max_at_peak(r: Result, peak_rate: float) -> tuple[int, tuple[Schedule, ...]]:
    """The groups' max while the peak arrives (its lowest, when a schedule changes it during the peak), and the schedules
    that hold it below the groups' own: what a schedule's max leaves of the groups' for the peak."""
    changes = max_changes(r)
    lowest: tuple[int, tuple[Schedule, ...]] = (sum(g.max for g in r.behaviour.groups), ())
    j = 0
    for t, rate in zip(r.times, r.arrivals):
        while j + 1 < len(changes) and changes[j + 1][0] <= t:
            j += 1
        if rate == peak_rate and changes[j][1] < lowest[0]:
            lowest = changes[j][1], changes[j][2]
    return lowest


def summary(r: Result, slo_ttft_s: float | None) -> dict:
    dt = r.trace.step_s
    serving = r.counts["serving"]
    peak_rate = max(r.arrivals, default=0.0)
    top = sum(g.max for g in r.behaviour.groups)
    at_peak, held_by = max_at_peak(r, peak_rate)
    need = needed_nodes(peak_rate, r.capacity.requests_per_s)  # what the peak needs, even beyond what the groups may hold
    # from the first step the load is above what is serving to the first step enough nodes serve (at most the max the
    # schedules leave the groups at the peak)
    first_short = next((i for i, (a, s) in enumerate(zip(r.arrivals, serving)) if a > s * r.capacity.requests_per_s), None)
    reached = None
    if first_short is not None:
        reached = next((i for i in range(first_short, len(serving)) if serving[i] >= min(need, at_peak)), None)
    over = 0.0
    if slo_ttft_s is not None:
        over = sum(dt for t in r.ttft_s if t is None or t > slo_ttft_s)
    served = sum(r.served)
    tokens = None
    if r.trace.output_tokens is not None:
        tokens = sum(s * o for s, o in zip(r.served, r.trace.output_tokens))
    elif r.capacity.output_tokens_per_request:
        tokens = served * r.capacity.output_tokens_per_request
    hook_waits = [n.hook_wait_s for n in r.nodes if n.ready < math.inf and n.hook_wait_s > 0]
    return {
        "duration_s": r.trace.duration_s,
        "step_s": dt,
        "peak_requests_per_s": peak_rate,
        "peak_nodes_needed": need,
        "nodes_max": top,
        # the groups' max while the peak arrives, and the schedules that hold it below nodes_max then
        "nodes_max_at_peak": at_peak,
        "max_at_peak_set_by": [
            {"group": s.group, "schedule": s.name, "cron": s.cron, "zone": cron.zone(s.zone_hours).tzname(None), "max": s.max}
            for s in held_by
        ],
        "peak_serving": max(serving, default=0),
        "time_to_peak_nodes_s": None if reached is None or first_short is None else (reached - first_short) * dt,
        "seconds_over_slo": over,
        "slo_ttft_ms": None if slo_ttft_s is None else slo_ttft_s * 1000,
        "peak_queue": max(r.queue, default=0.0),
        "p95_wait_s_max": max((w for w in r.p95_wait_s if w is not None), default=0.0),
        "never_served_s": sum(dt for w in r.p95_wait_s if w is None),
        "scale_events": [
            {"time_s": e.time_s, "group": e.group, "kind": e.kind, "desired": e.desired, "detail": e.detail} for e in r.events
        ],
        # where the schedules left the groups at the start (time_s < 0: when each fired, before the start)
        "schedules_at_start": [
            {"time_s": e.time_s, "group": e.group, "desired": e.desired, "schedule": e.detail} for e in r.at_start
        ],
        "scale_outs": sum(1 for e in r.events if e.kind == "out"),
        "scale_ins": sum(1 for e in r.events if e.kind == "in"),
        "node_hours": {k: round(v / 3600, 3) for k, v in sorted(r.billing_node_s.items())},
        "requests_arrived": round(sum(a * dt for a in r.arrivals), 1),
        "requests_served": round(served, 1),
        "queue_at_end": round(r.queue[-1], 1) if r.queue else 0.0,  # requests the trace leaves waiting: not served, not priced
        "output_tokens_served": None if tokens is None else round(tokens),
        "max_hook_wait_s": max(hook_waits, default=0.0),
        "nodes_at_start": sum(1 for n in r.nodes if n.created == 0 and n.serving == 0),
        "nodes_at_end": serving[-1] if serving else 0,
    }
