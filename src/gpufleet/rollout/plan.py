"""The plan of a rollout: the traffic steps and what each command changes in the stack file.

A canary walks the candidate's weight through `rollout.steps` (default 0, 5, 25, 50, 100 %); blue/green goes 0 -> 100 %
with both groups at full size. Step 0 deploys the candidate group with no traffic, so the gates can measure it on
its own endpoint before any user request reaches it. After the last step, `promote` makes the candidate the fleet's
serving group (phase promoted: the old group at its minimum, weight 0, until retire_after) and `finish` (after the
window) removes the old group. A failed gate or `abort` rolls back: weight 0, then the candidate group to 0 nodes.
"""

from __future__ import annotations

from msgspec import Struct

DEFAULT_STEPS = {"canary": (0, 5, 25, 50, 100), "blue_green": (0, 100)}


class Change(Struct, frozen=True):
    """One change of the stack file, made by gpufleet.stacks.rollout.rollout_step_spec, then deployed.

    kind: `weight` (candidate_weight = value), `promote`, `finish`, `rollback` (candidate replicas to 0)."""

    kind: str
    weight: int | None = None

    def describe(self) -> str:
        if self.kind == "weight":
            return f"candidate weight {self.weight} %"
        return {
            "promote": "promote: the candidate serves 100 %, the old group at its minimum until retire_after",
            "finish": "finish: the fleet takes the candidate's settings, the old group is removed",
            "rollback": "rollback: weight 0 and the candidate group to 0 nodes",
        }[self.kind]

    def as_json(self) -> dict:
        return {"kind": self.kind, "weight": self.weight}

    @staticmethod
    def from_json(raw: dict) -> Change:
        return Change(str(raw["kind"]), None if raw.get("weight") is None else int(raw["weight"]))


def steps_of(strategy: str, steps: list[int] | tuple[int, ...] | None) -> tuple[int, ...]:
    """The weights to walk: the spec's `steps`, else the strategy's default."""
    return tuple(int(s) for s in steps) if steps else DEFAULT_STEPS[strategy]


def next_weight(steps: tuple[int, ...], index: int) -> int | None:
    """The weight after steps[index]; None at the last step (what follows is `promote`)."""
    return steps[index + 1] if index + 1 < len(steps) else None


def rollback_changes(weight_now: int | None) -> list[Change]:
    """Traffic away first, then the nodes: weight 0 (skipped when already 0), then the candidate group to 0."""
    first = [] if weight_now == 0 else [Change("weight", 0)]
    return [*first, Change("rollback")]
