"""A stack's simulation: its plan's declared resources read by its cloud, the node's timings, a capacity, a trace."""

from __future__ import annotations

from datetime import datetime

from gpufleet.simulate import engine, timings
from gpufleet.simulate.capacity import NodeCapacity
from gpufleet.simulate.model import Behaviour
from gpufleet.simulate.trace import Trace


def behaviour(fleet, resources: list[dict], node_completes: bool | None = None) -> Behaviour:
    """The Behaviour of a fleet's declared resources, read by its cloud's simulation module."""
    from gpufleet.components import registry

    mod = registry.module(fleet.spec.cloud, "simulation")
    return mod.behaviour(resources, timings.node(fleet), node_completes)


def step_low(b: Behaviour, cap: NodeCapacity) -> float:
    """The `low` of the step and spike profiles: a quarter of what the floor serves (the floor: the groups' min)."""
    return 0.25 * cap.requests_per_s * max(1, sum(g.min for g in b.groups))


def day_shape(b: Behaviour) -> list[tuple[int, float]]:
    """A business day in UTC hours as multiples of `low`: quiet at night, a morning ramp, a busy afternoon."""
    return [(0, 1.0), (1, 2.0), (3, 4.0), (6, 5.0), (9, 4.0), (13, 1.5), (16, 1.0), (24, 1.0)]


def default_trace(name: str, b: Behaviour, cap: NodeCapacity, start: datetime, step_s: float = 10.0) -> Trace:
    from gpufleet.simulate import trace

    return trace.profile(name, step_low(b, cap), start, step_s, day_shape(b))


def simulate(b: Behaviour, cap: NodeCapacity, tr: Trace, reclaim_at=(), reclaim_per_hour: float = 0.0) -> engine.Result:
    return engine.simulate(b, cap, tr, tuple(reclaim_at), reclaim_per_hour)
