"""What the simulation reads: the scaling behaviour of a fleet as its program declares it, and the timings it runs on.

A cloud's simulation module (components/<cloud>/simulation.py) turns the preview's recorded resources into a
Behaviour; the engine (gpufleet.simulate.engine) runs it. Nothing here knows a cloud.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from msgspec import Struct, field

QUALITIES = ("measured", "documented", "estimate")


class Timing(Struct, frozen=True):
    """One duration the fleet takes, with where the number comes from."""

    name: str
    seconds: float
    quality: str  # measured (here, by a named test) | documented (by the vendor, with source) | estimate
    source: str

    def to_json(self) -> dict:
        return {"name": self.name, "seconds": self.seconds, "quality": self.quality, "source": self.source}


class Group(Struct, frozen=True):
    """A scaling group as declared: its bounds and what a node it launches is billed as."""

    name: str
    min: int
    max: int
    desired: int
    cooldown_s: float
    billing: str  # payg | spot: what the group launches (above any on-demand base)
    on_demand_base: int = 0  # of the group's nodes, this many are pay-as-you-go (a mixed group)
    on_demand_above_base_percent: int = 0
    attached: tuple[str, ...] = ()  # billing of nodes attached to the group at creation (subscription baseline)
    attached_protected: bool = False  # attached nodes are protected from scale-in
    spot_remedy: bool = False  # a replacement is launched when a spot node gets its reclaim notice
    health_check_grace_s: float = 0.0
    # the per-node backend weight its nodes carry at the load balancer (a rollout's groups, 0 = no requests); None:
    # not declared (every serving node takes an equal share)
    weight: int | None = None
    # seconds from in service to vLLM serving when the group's nodes load another model than the fleet's (a rollout's
    # candidate: its weights' fetch and CUDA graphs); None: the fleet's node timings
    ready_s: float | None = None
    # which scaling activities start the cooldown when they end: "any" (every one: a rule's, a schedule's, the
    # restore of the desired capacity, a spot replacement) | "rule" (only one an executed scaling rule started: an
    # alarm's or a scaler's). The cloud's reader sets it, with its vendor source
    cooldown_after: Literal["any", "rule"] = "any"


class Hook(Struct, frozen=True):
    """A lifecycle hook: a launching (out) or leaving (in) node waits until it is completed or times out."""

    group: str
    transition: str  # out | in
    timeout_s: float
    completed_by: str  # "ready" (the node, once vLLM serves), "drain" (the drain command), "" (nothing)
    why: str


class Alarm(Struct, frozen=True):
    """A cloud-side alarm on the nodes' reports (one value per node per publish period), averaged over the group:
    breaching for `evaluation_count` periods in a row executes the rule on `group` (adjustment nodes)."""

    name: str
    group: str
    adjustment: int
    conditions: tuple[tuple[str, str, float], ...]  # (signal, operator, threshold), all must hold
    period_s: float
    evaluation_count: int
    accepted: bool = True  # the vendor would create it (else: never executes)
    why: str = ""
    cooldown_s: float | None = None  # the cooldown after the activity its rule starts (None: the group's cooldown_s)


class Poller(Struct, frozen=True):
    """A scaler that reads every answering node's value each period and decides (the Tencent SCF function):
    decide({node: value | None}) -> "out" | "in" | "hold"; out/in execute the named policies."""

    name: str
    period_s: float
    signal: str
    decide: Callable[[dict[str, float | None]], str]
    groups: tuple[str, ...]  # whose in-service nodes it reads
    policies: dict[str, tuple[str, int, bool, str]]  # out|in -> (group, adjustment, accepted, why)


class Schedule(Struct, frozen=True):
    name: str
    group: str
    cron: str
    zone_hours: int  # the zone the provider reads the cron in
    min: int
    max: int
    desired: int


class HealthCheck(Struct, frozen=True):
    interval_s: float
    healthy_threshold: int
    unhealthy_threshold: int

    def filled(self, interval_s, healthy, unhealthy) -> HealthCheck:  # noqa: ANN001 -- a listener's raw inputs
        """A listener's health check as declared (interval, healthy and unhealthy thresholds); what it leaves out
        (missing, null or 0), this check's values: a reader calls it on its cloud's defaults."""
        return HealthCheck(
            float(interval_s or self.interval_s),
            int(healthy or self.healthy_threshold),
            int(unhealthy or self.unhealthy_threshold),
        )


class Behaviour(Struct):
    """Everything the engine needs to run one fleet: groups, what scales them, the hooks, the schedules, timings."""

    cloud: str
    groups: list[Group]
    alarms: list[Alarm] = field(default_factory=list)
    pollers: list[Poller] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    schedules: list[Schedule] = field(default_factory=list)
    health: HealthCheck = HealthCheck(5, 2, 3)
    timings: dict[str, Timing] = field(default_factory=dict)
    drain_timeout_s: float = 0.0
    reaction_s: float = 0.0  # declared reaction: from a signal over its threshold to the scale-out executing
    reaction_how: str = ""
    notes: list[str] = field(default_factory=list)

    def timing(self, name: str) -> float:
        return self.timings[name].seconds

    def group(self, name: str) -> Group:
        return next(g for g in self.groups if g.name == name)
