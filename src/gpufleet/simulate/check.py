"""The step check: low, 5x low for an hour, low again (trace.profile("step")), run through the declared scaling.

What a fleet must show (tests/simulate/test_check.py runs it on every shipped stack and every sweep variant):
- reaction: the first scale-out starts within the declared reaction time of the step;
- peak: the fleet serves with the nodes the peak needs (plan capacity's ceil(peak / per node), at most max);
- back: after the load falls it returns to the floor (the groups' min);
- bounds: it never holds more nodes than max;
- steady: it does not flap (no scale-in while the load is high, no scale-out once it has fallen: one reversal);
- floor: at rest before the step it holds the declared desired nodes, not more;
- hooks: a node ready to serve is not held by a launch hook longer than one metric period.
"""

from __future__ import annotations

import math

from msgspec import Struct

from gpufleet.behaviour.model import Behaviour
from gpufleet.simulate import run, summary
from gpufleet.simulate.capacity import NodeCapacity
from gpufleet.simulate.engine import Result

STEP_AT_S = 3600.0  # the step profile: an hour low, then 5x
HIGH_S = 3600.0


class Finding(Struct, frozen=True):
    name: str
    ok: bool
    detail: str

    def __str__(self) -> str:
        return f"{'ok' if self.ok else 'FAIL'} {self.name}: {self.detail}"


def step_result(b: Behaviour, cap: NodeCapacity, start) -> Result:
    return run.simulate(b, cap, run.default_trace("step", b, cap, start))


def _outside(g) -> int:
    """Attached nodes a group protects from scale-in and leaves out of its own min / desired (Tencent's PREPAID floor)."""
    return len(g.attached) if g.attached_protected else 0


def findings(b: Behaviour, cap: NodeCapacity, r: Result) -> list[Finding]:
    dt = r.trace.step_s
    out: list[Finding] = []
    outs = [e for e in r.events if e.kind == "out" and e.time_s >= STEP_AT_S]
    allowed = b.reaction_s + 2 * dt
    top = sum(g.max for g in b.groups)
    high = [i for i, t in enumerate(r.times) if STEP_AT_S <= t < STEP_AT_S + HIGH_S]
    peak = max(r.arrivals[i] for i in high)
    need = min(summary.needed_nodes(peak, cap.requests_per_s), top)
    resting = sum(g.desired + _outside(g) for g in b.groups)
    if top <= resting:
        out.append(Finding("reaction", True, f"the groups cannot grow (max {top}): no scale-out to wait for"))
    elif need <= resting and not outs:
        out.append(Finding("reaction", True, f"the {resting} nodes at rest serve the peak (needs {need}): no scale-out needed"))
    elif outs:
        took = outs[0].time_s - STEP_AT_S
        out.append(
            Finding(
                "reaction",
                took <= allowed,
                f"first scale-out {took:g} s after the step (declared {b.reaction_s:g} s: {b.reaction_how})",
            )
        )
    else:
        out.append(Finding("reaction", False, f"no scale-out after the step (declared reaction {b.reaction_s:g} s)"))
    got = max(r.counts["serving"][i] for i in high)
    out.append(Finding("peak", got >= need, f"{got} nodes served during the hour at 5x; the peak of {peak:g} req/s needs {need}"))
    floor = sum(g.min + _outside(g) for g in b.groups)
    end = r.counts["serving"][-1]
    members_end = sum(1 for n in r.nodes if n.gone == math.inf)
    out.append(
        Finding(
            "back", end == floor and members_end == floor, f"{end} serving, {members_end} nodes at the end; the floor is {floor}"
        )
    )
    held = [sum(1 for n in r.nodes if n.created <= t < n.leaving) for t in r.times]
    out.append(Finding("bounds", max(held) <= top, f"at most {max(held)} nodes held; max {top}"))
    kinds = [e.kind for e in r.events if e.kind in ("out", "in")]
    reversals = sum(1 for a, c in zip(kinds, kinds[1:]) if a != c)
    ins_high = [e for e in r.events if e.kind == "in" and STEP_AT_S <= e.time_s < STEP_AT_S + HIGH_S]
    out.append(
        Finding(
            "steady",
            reversals <= 1 and not ins_high,
            f"scale events {' '.join(kinds) or 'none'}; {len(ins_high)} scale-in(s) during the high hour",
        )
    )
    desired = sum(g.desired + _outside(g) for g in b.groups)
    at_rest = r.counts["serving"][0] + r.counts["booting"][0] + r.counts["hook"][0]
    out.append(Finding("floor", at_rest <= desired, f"{at_rest} nodes at rest; the groups declare desired {desired}"))
    period = b.timing("metric_publish_s")
    waits = [n.hook_wait_s for n in r.nodes]
    worst = max(waits, default=0.0)
    out.append(
        Finding("hooks", worst <= period, f"a ready node waited {worst:g} s on a launch hook at most (allowed {period:g} s)")
    )
    return out


def failed(found: list[Finding]) -> list[Finding]:
    return [f for f in found if not f.ok]
