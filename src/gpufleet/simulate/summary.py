"""What a simulated trace comes to: the nodes the peak needs (even beyond the groups' max) and the time to them,
seconds over the SLO, peak queue, scale events, node-hours by billing model."""

from __future__ import annotations

import math

from gpufleet.simulate.engine import Result


def needed_nodes(rate: float, per_node: float) -> int:
    """What plan capacity says a rate needs, without spare: ceil(rate / per-node knee)."""
    return max(0, math.ceil(rate / per_node - 1e-9))


def summary(r: Result, slo_ttft_s: float | None) -> dict:
    dt = r.trace.step_s
    serving = r.counts["serving"]
    peak_rate = max(r.arrivals, default=0.0)
    top = sum(g.max for g in r.behaviour.groups)
    need = needed_nodes(peak_rate, r.capacity.requests_per_s)  # what the peak needs, even beyond what the groups may hold
    # from the first step the load is above what is serving to the first step enough nodes serve
    first_short = next((i for i, (a, s) in enumerate(zip(r.arrivals, serving)) if a > s * r.capacity.requests_per_s), None)
    reached = None
    if first_short is not None:
        reached = next((i for i in range(first_short, len(serving)) if serving[i] >= min(need, top)), None)
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
