"""The discrete-event simulation (SimPy) of one fleet's Behaviour through a Trace.

Processes: the load (one step of the trace at a time: a fluid queue over the serving nodes, gpufleet.simulate.capacity),
each node's life (created, booting, waiting on a hook, serving, draining, gone), each alarm and scaler (reading what
the nodes report, as the cloud reads it), the schedules and the spot reclaims. A group runs one scaling activity at a
time; the cooldown starts when an activity ends (the new nodes left their launch hook, the old ones are gone), after
the activities the group's `cooldown_after` names (any, or only one an executed rule started: cooldown_after()); an
activity then restores the desired capacity without waiting for the cooldown, as the groups do.
"""

from __future__ import annotations

import math
from datetime import UTC, timedelta

import simpy
from msgspec import Struct, field

from gpufleet import cron
from gpufleet.behaviour.model import Alarm, Behaviour, Group, Poller
from gpufleet.simulate.capacity import NodeCapacity
from gpufleet.simulate.trace import Trace

SIGNALS = ("queue", "kv_cache", "cpu")


class Node(Struct):
    id: int
    group: str
    billing: str
    created: float
    in_service: float = math.inf  # the cloud counts it in service (created)
    ready: float = math.inf  # vLLM serves on the node
    serving: float = math.inf  # in the load balancer and healthy
    leaving: float = math.inf  # started draining
    gone: float = math.inf
    attached: bool = False
    protected: bool = False
    hook_wait_s: float = 0.0  # time it was ready but held by a launch hook
    phase: float = 0.0  # when in each publish period it reports (spread over the nodes)

    def state(self, t: float) -> str:
        if t >= self.gone:
            return "gone"
        if t >= self.leaving:
            return "draining"
        if t >= self.serving:
            return "serving"
        if t >= self.ready:
            return "hook"
        return "booting"


class Event(Struct):
    time_s: float
    group: str
    kind: str  # out | in | schedule | reclaim | refused
    detail: str
    desired: int


class GroupState(Struct):
    spec: Group
    min: int
    max: int
    desired: int
    busy: bool = False
    cooldown_until: float = -math.inf


class Result(Struct):
    trace: Trace
    behaviour: Behaviour
    capacity: NodeCapacity
    times: list[float] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    served: list[float] = field(default_factory=list)  # requests started in the step
    counts: dict[str, list[int]] = field(default_factory=dict)  # state -> per step
    queue: list[float] = field(default_factory=list)
    queue_per_node: list[float] = field(default_factory=list)
    p95_wait_s: list[float | None] = field(default_factory=list)
    ttft_s: list[float | None] = field(default_factory=list)
    signals: dict[str, list[float]] = field(default_factory=dict)
    seen: dict[str, list[float | None]] = field(default_factory=dict)  # rule -> the value it last read, per step
    billing_node_s: dict[str, float] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    # each group's last schedule firing before the start, applied there (time_s < 0: seconds before the start)
    at_start: list[Event] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    # a scaler's runs: (time, poller, {node id: value | None} of the in-service nodes, decision, executed)
    decisions: list[tuple[float, str, dict, str, bool]] = field(default_factory=list)
    # an alarm's evaluations: (time, alarm, {node id: report time} of the reports it averaged, averages, held, executed)
    evaluations: list[tuple[float, str, dict, list, bool, bool]] = field(default_factory=list)
    # groups with different backend weights (a rollout): each group's own series per step, keyed by group then by
    # arrivals | serving | queue_per_node | ttft_s | queue | kv_cache | cpu (the signals its alarms and scaler read)
    groups: dict[str, dict[str, list]] = field(default_factory=dict)


class Simulation:
    def __init__(self, behaviour: Behaviour, capacity: NodeCapacity, trace: Trace, reclaim_at: tuple[float, ...] = ()):
        self.b, self.cap, self.trace = behaviour, capacity, trace
        self.env = simpy.Environment()
        self.dt = trace.step_s
        self.nodes: list[Node] = []
        self.groups = {g.name: GroupState(g, g.min, g.max, g.desired) for g in behaviour.groups}
        self.r = Result(trace, behaviour, capacity)
        self.r.counts = {s: [] for s in ("booting", "hook", "serving", "draining")}
        self.r.signals = {s: [] for s in SIGNALS}
        self.r.seen = {name: [] for name in [a.name for a in behaviour.alarms] + [p.name for p in behaviour.pollers]}
        self._last_seen: dict[str, float | None] = dict.fromkeys(self.r.seen)
        self.reclaim_at = sorted(reclaim_at)
        self.record_evaluations = False  # keep each alarm evaluation's reports (the fidelity test reads them)
        self.ready_s = sum(behaviour.timing(n) for n in ("os_boot_s", "weights_fetch_s", "vllm_load_s", "cuda_graphs_s"))
        self.health_s = behaviour.health.interval_s * behaviour.health.healthy_threshold
        self._queue = 0.0
        self.live: list[Node] = []  # nodes not gone (the load and the alarms look at these only)
        self._next_change = 0.0
        self._serving_now = 0
        self._launch_hooks = {h.group: h for h in behaviour.hooks if h.transition == "out"}
        self._leave_hooks = {h.group: h for h in behaviour.hooks if h.transition == "in"}
        # weighted: the load balancer splits the requests by the groups' per-node weights (load_split), each group
        # queues and reports on its own share; else one queue over all serving nodes (as before weights existed)
        self.weighted = len({g.weight for g in behaviour.groups}) > 1
        self._queues: dict[str, float] = dict.fromkeys(self.groups, 0.0)
        self._held = 0.0  # requests no backend takes (every serving node at weight 0): they wait at the fleet
        if self.weighted:
            self.r.groups = {
                g: {k: [] for k in ("arrivals", "serving", "queue_per_node", "ttft_s", *SIGNALS)} for g in self.groups
            }

    # --- nodes --------------------------------------------------------------------------------------------------

    def _billing(self, g: GroupState) -> str:
        spec = g.spec
        if spec.billing != "spot":
            return spec.billing
        mine = [n for n in self.nodes if n.group == spec.name and n.leaving == math.inf and not n.attached]
        od = sum(1 for n in mine if n.billing == "payg")
        if od < spec.on_demand_base:
            return "payg"
        above = len(mine) - spec.on_demand_base
        od_above = od - spec.on_demand_base
        if od_above < math.ceil(spec.on_demand_above_base_percent / 100 * (above + 1) - 1e-9):
            return "payg"
        return "spot"

    def _start_node(self, g: GroupState, at_start: bool = False, billing: str | None = None, attached: bool = False) -> Node:
        n = Node(len(self.nodes), g.spec.name, billing or self._billing(g), self.env.now, attached=attached)
        n.protected = attached and g.spec.attached_protected
        n.phase = (n.id * 7.0) % self.b.timing("metric_publish_s")
        self.nodes.append(n)
        self.live.append(n)
        self._next_change = self.env.now
        if at_start:  # running before the trace begins
            n.in_service = n.ready = n.serving = self.env.now
        return n

    def _launch(self, n: Node):
        """A new node: created, boots (image, weights, vLLM), may wait on a launch hook, joins once healthy.
        Returns (as the process value) when the launch hook, if any, let it go: the scaling activity's end."""
        b = self.b
        yield self.env.timeout(b.timing("instance_create_s"))
        n.in_service = self.env.now
        ready_s = self.groups[n.group].spec.ready_s
        n.ready = n.in_service + (self.ready_s if ready_s is None else ready_s)
        hook = self._launch_hooks.get(n.group)
        released = n.in_service
        if hook is not None:
            released = n.in_service + hook.timeout_s
            if hook.completed_by == "ready":
                released = min(released, n.ready)
            elif hook.completed_by == "command":
                released = n.in_service
            n.hook_wait_s = max(0.0, released - n.ready)
        n.serving = max(n.ready, released) + self.health_s
        self._next_change = min(self._next_change, n.in_service)
        yield self.env.timeout(released - self.env.now)

    def _drain_s(self, n: Node) -> float:
        """How long a leaving node drains: out of the load balancer (unhealthy checks), then its running requests;
        held by the leaving hook (its timeout when nothing completes it); 0 without a hook (cut off)."""
        hook = self._leave_hooks.get(n.group)
        if hook is None:
            return 0.0
        if hook.completed_by != "drain":
            return hook.timeout_s
        work = self.b.health.interval_s * self.b.health.unhealthy_threshold + (self.cap.latency_p95_s or 0.0)
        return min(hook.timeout_s, work)

    def _leave(self, n: Node, within_s: float | None = None):
        n.leaving = self.env.now
        self._next_change = self.env.now
        d = self._drain_s(n)
        if within_s is not None:
            d = min(d, within_s)
        n.gone = self.env.now + d  # known now: the load counts it draining until then
        yield self.env.timeout(d)

    def members(self, group: str) -> list[Node]:
        return [n for n in self.nodes if n.group == group and n.leaving == math.inf]

    # --- scaling activities --------------------------------------------------------------------------------------

    def execute(
        self, group: str, adjustment: int, why: str, honor_cooldown: bool = True, cooldown_s: float | None = None
    ) -> bool:
        """A rule's execution (an alarm's, a scaler's): refused while an activity runs or in the cooldown; its
        activity starts the rule's own cooldown (cooldown_s) when it has one, else the group's."""
        g = self.groups[group]
        now = self.env.now
        if g.busy:
            return False
        if honor_cooldown and now < g.cooldown_until:
            return False
        desired = max(g.min, min(g.max, g.desired + adjustment))
        if desired == g.desired:
            return False
        g.desired = desired
        self.r.events.append(Event(now, group, "out" if adjustment > 0 else "in", why, desired))
        self.env.process(self._activity(g, cooldown_after(g.spec, by_rule=True, rule_cooldown_s=cooldown_s)))
        return True

    def _activity(self, g: GroupState, cooldown_s: float | None):
        """One scaling activity to the group's desired capacity; when it ends, the cooldown (cooldown_s; None: none)."""
        g.busy = True
        members = self.members(g.spec.name)
        if len(members) < g.desired:
            procs = [self.env.process(self._launch(self._start_node(g))) for _ in range(g.desired - len(members))]
            yield self.env.all_of(procs)
        elif len(members) > g.desired:
            order = sorted(
                (n for n in members if not n.protected),
                key=lambda n: (n.attached, n.billing != "spot", n.created, n.id),
            )
            victims = order[: len(members) - g.desired]
            if victims:
                yield self.env.all_of([self.env.process(self._leave(n)) for n in victims])
        g.busy = False
        if cooldown_s is not None:
            g.cooldown_until = self.env.now + cooldown_s
        members = self.members(g.spec.name)
        if len(members) < g.desired or (len(members) > g.desired and any(not n.protected for n in members)):
            self.env.process(self._activity(g, cooldown_after(g.spec, by_rule=False)))

    def reconcile(self, group: str) -> None:
        """An activity no rule started (a schedule's new bounds, a spot replacement) when the group is off its desired."""
        g = self.groups[group]
        if not g.busy and len(self.members(group)) != g.desired:
            self.env.process(self._activity(g, cooldown_after(g.spec, by_rule=False)))

    # --- the load ------------------------------------------------------------------------------------------------

    def _load(self):
        cap, dt, tr = self.cap, self.dt, self.trace
        mu = cap.requests_per_s
        r = self.r
        counts: dict[str, int] = dict.fromkeys(r.counts, 0)
        billing: dict[str, int] = {}
        times, arrivals, served, queue, per_node = (
            r.times.append,
            r.arrivals.append,
            r.served.append,
            r.queue.append,
            r.queue_per_node.append,
        )
        p95, ttft, timeout = r.p95_wait_s.append, r.ttft_s.append, self.env.timeout
        sig_q, sig_kv, sig_cpu = r.signals["queue"].append, r.signals["kv_cache"].append, r.signals["cpu"].append
        count_lists = {k: v.append for k, v in r.counts.items()}
        seen = [(name, v.append) for name, v in r.seen.items()]
        last_seen = self._last_seen
        last_load: tuple = ()
        base = 0.0
        for rate in tr.rates:
            now = self.env.now
            if now >= self._next_change:  # a node changed state since the last count: count again
                counts = dict.fromkeys(r.counts, 0)
                billing = {}
                upcoming = math.inf
                self.live = [n for n in self.live if n.gone > now]
                for n in self.live:
                    counts[n.state(now)] += 1
                    billing[n.billing] = billing.get(n.billing, 0) + 1
                    for t in (n.in_service, n.ready, n.serving, n.leaving, n.gone):
                        if now < t < upcoming:
                            upcoming = t
                self._next_change = upcoming
            for k, v in billing.items():
                r.billing_node_s[k] = r.billing_node_s.get(k, 0.0) + v * dt
            serving = counts["serving"]
            self._serving_now = serving
            c = serving * mu
            q = self._queue + rate * dt
            started = min(q, c * dt)
            q -= started
            self._queue = q
            rho = min(1.0, (started / dt) / c) if c > 0 else 0.0
            qpn = q / serving if serving else q
            wait = q / c if c > 0 else (math.inf if q > 0 else 0.0)
            if (rate, serving) != last_load:  # the prefill's own TTFT at this load (the load test's curve)
                last_load = (rate, serving)
                base = cap.ttft_s(min(rate / serving, mu) if serving else mu) or 0.0
            times(now)
            arrivals(rate)
            served(started)
            for s, v in counts.items():
                count_lists[s](v)
            queue(q)
            per_node(qpn)
            finite = not math.isinf(wait)
            p95(wait if finite else None)
            ttft(wait + base if finite else None)
            kv = 100.0 if q > 0 and serving else 100.0 * rho
            sig_q(qpn if serving else 0.0)
            sig_kv(kv)
            sig_cpu(kv)  # no CPU model: the node's busy share (docs/scaling.md)
            for name, add in seen:
                add(last_seen[name])
            yield timeout(dt)

    def _load_weighted(self):
        """The load when the groups carry different backend weights: each step the requests are split over the groups
        by load_split (weighted round robin over the serving nodes), each group serves its own queue as the single
        queue does; the fleet's series are the sums (queue, served) and the worst group (wait, TTFT, signals)."""
        cap, dt, tr, r = self.cap, self.dt, self.trace, self.r
        mu = cap.requests_per_s
        weights = {name: g.spec.weight or 0 for name, g in self.groups.items()}
        for rate in tr.rates:
            now = self.env.now
            self.live = [n for n in self.live if n.gone > now]
            counts = dict.fromkeys(r.counts, 0)
            serving: dict[str, int] = dict.fromkeys(self.groups, 0)
            for n in self.live:
                state = n.state(now)
                counts[state] += 1
                if state == "serving":
                    serving[n.group] += 1
                r.billing_node_s[n.billing] = r.billing_node_s.get(n.billing, 0.0) + dt
            self._serving_now = sum(serving.values())
            shares = load_split(serving, weights)
            arriving = rate * dt + self._held
            self._held = 0.0 if shares else arriving
            total_q, started_all, waits, ttfts, sig = 0.0, 0.0, [], [], dict.fromkeys(SIGNALS, 0.0)
            for name in self.groups:
                series = r.groups[name]
                share = shares.get(name, 0.0)
                sv = serving[name]
                c = sv * mu
                q = self._queues[name] + (arriving * share if shares else 0.0)
                started = min(q, c * dt)
                q -= started
                self._queues[name] = q
                rho = min(1.0, (started / dt) / c) if c > 0 else 0.0
                qpn = q / sv if sv else q
                wait = q / c if c > 0 else (math.inf if q > 0 else 0.0)
                group_rate = rate * share
                base = (cap.ttft_s(min(group_rate / sv, mu)) or 0.0) if sv else 0.0
                kv = 100.0 if q > 0 and sv else 100.0 * rho
                series["arrivals"].append(group_rate)
                series["serving"].append(sv)
                series["queue_per_node"].append(qpn)
                series["ttft_s"].append(None if math.isinf(wait) else wait + base)
                series["queue"].append(qpn if sv else 0.0)
                series["kv_cache"].append(kv)
                series["cpu"].append(kv)
                total_q += q
                started_all += started
                if share > 0 or q > 0:
                    waits.append(wait)
                    ttfts.append(wait + base)
                for k in SIGNALS:
                    sig[k] = max(sig[k], series[k][-1])
            total_q += self._held
            worst = max(waits, default=math.inf if self._held else 0.0)
            r.times.append(now)
            r.arrivals.append(rate)
            r.served.append(started_all)
            for k, v in counts.items():
                r.counts[k].append(v)
            r.queue.append(total_q)
            r.queue_per_node.append(total_q / self._serving_now if self._serving_now else total_q)
            finite = not math.isinf(worst)
            r.p95_wait_s.append(worst if finite else None)
            r.ttft_s.append(max(ttfts) if finite and ttfts else (0.0 if finite else None))
            for k in SIGNALS:
                r.signals[k].append(sig[k])
            for name, values in r.seen.items():
                values.append(self._last_seen[name])
            yield self.env.timeout(dt)

    def _series(self, signal: str, group: str | None = None) -> list[float]:
        """The per-step values of a signal the nodes of `group` report: their group's share when weighted."""
        if self.weighted and group is not None:
            return self.r.groups[group][signal]
        return self.r.signals[signal]

    def _signal_at(self, signal: str, t: float, group: str | None = None) -> float:
        values = self._series(signal, group)
        k = min(max(int(t / self.dt), 0), len(values) - 1)
        if k < 0 or not values:
            return 0.0
        return values[k]

    def report(self, n: Node, signal: str, t: float) -> float | None:
        """What node n reported for `signal` at time t: its share when serving, 0 when up but taking no traffic
        (held by a hook, draining), nothing before vLLM is up or after it is gone."""
        if t < n.ready or t >= n.gone:
            return None
        if n.serving <= t < n.leaving:
            return self._signal_at(signal, t, n.group)
        return 0.0

    # --- what scales -------------------------------------------------------------------------------------------

    def _alarm(self, a: Alarm):
        """Every period: the average over the group's nodes of each one's last report in the period, as it arrived
        (report lag); a node publishes every metric_publish_s at its own phase (report(): what it publishes)."""
        publish = self.b.timing("metric_publish_s")
        lag = self.b.timing("report_lag_s")
        dt = self.dt
        lists = [self._series(signal, a.group) for signal, _, _ in a.conditions]
        record = self.record_evaluations
        streak = 0
        while True:
            yield self.env.timeout(a.period_s)
            tl = self.env.now - lag
            lo = tl - a.period_s
            sums = [0.0] * len(lists)
            count = 0
            reports: dict[int, float] = {}
            group = a.group
            for n in self.live:
                if n.group != group:
                    continue
                last = tl - (tl - n.phase) % publish
                if last <= lo or last < n.ready or last >= n.gone or last < 0:
                    continue  # no report in the period (not up yet, or gone)
                count += 1
                if record:
                    reports[n.id] = last
                if n.serving <= last < n.leaving:  # serving: its share; else (hook, draining) it reports 0
                    k = int(last / dt)  # a step the load has recorded: last < now
                    for j, values in enumerate(lists):
                        sums[j] += values[k]
            ok = count > 0  # an alarm without data does not fire
            seen = sums[0] / count if count else None
            if ok:
                for (_, op, threshold), total in zip(a.conditions, sums):
                    if not _holds(total / count, op, threshold):
                        ok = False
                        break
            self._last_seen[a.name] = seen
            streak = streak + 1 if ok else 0
            executed = False
            if streak >= a.evaluation_count and a.accepted:
                executed = self.execute(a.group, a.adjustment, f"{a.name}: {streak} periods", cooldown_s=a.cooldown_s)
            if record:
                self.r.evaluations.append(
                    (self.env.now, a.name, reports, [x / count for x in sums] if count else [], ok, executed)
                )

    def _poller(self, p: Poller):
        while True:
            yield self.env.timeout(p.period_s)
            t = self.env.now
            values: dict[str, float | None] = {}
            for n in self.live:
                if n.group in p.groups and n.in_service <= t < n.leaving:
                    values[str(n.id)] = self.report(n, p.signal, t) if t >= n.serving else None
            answered = [v for v in values.values() if v is not None]
            self._last_seen[p.name] = sum(answered) / len(answered) if answered else None
            action = p.decide(values)
            executed = False
            if action in ("out", "in"):
                group, adjustment, accepted, why = p.policies[action]
                if accepted:
                    executed = self.execute(group, adjustment, f"{p.name}: {action}")
            self.r.decisions.append((t, p.name, values, action, executed))

    def _schedules(self):
        start = self.trace.start
        firings = []
        end = start + timedelta(seconds=self.trace.duration_s)
        for s in self.b.schedules:
            firings += [((t - start).total_seconds(), s) for t in cron.firings(s.cron, start, end, cron.zone(s.zone_hours))]
        for at, s in sorted(firings, key=lambda x: x[0]):
            yield self.env.timeout(max(0.0, at - self.env.now))
            self._apply_schedule(s, self.env.now, self.r.events)
            self.reconcile(s.group)

    def _apply_schedule(self, s, at: float, into: list[Event]) -> None:
        g = self.groups[s.group]
        g.min, g.max = s.min, s.max
        g.desired = max(s.min, min(s.max, s.desired))
        into.append(Event(at, s.group, "schedule", s.name, g.desired))

    def _schedules_before_start(self) -> set[str]:
        """Where the declared schedules left the groups when the trace starts: each schedule's last firing before the
        first minute _schedules fires in, applied in the order they fired, as the cloud applied them (a run starting
        at 03:00 UTC on a weekday began at the group's base min below the business-day schedule's). The groups set."""
        start = self.trace.start
        first_minute = start.astimezone(UTC).replace(second=0, microsecond=0)
        fired = []
        for s in self.b.schedules:
            when = cron.last_firing(s.cron, first_minute, cron.zone(s.zone_hours))
            if when is not None:
                fired.append(((when - start).total_seconds(), s))
        applied: list[Event] = []
        for at, s in sorted(fired, key=lambda x: x[0]):
            self._apply_schedule(s, at, applied)
        last = {e.group: e for e in applied}  # a schedule sets min, max and desired: the group's last one holds
        self.r.at_start = sorted(last.values(), key=lambda e: e.time_s)
        return set(last)

    def _reclaims(self):
        notice = self.b.timing("spot_notice_s")
        for at in self.reclaim_at:
            yield self.env.timeout(max(0.0, at - self.env.now))
            spot = [n for n in self.nodes if n.billing == "spot" and n.leaving == math.inf and n.in_service <= self.env.now]
            if not spot:
                continue
            n = min(spot, key=lambda n: n.created)
            g = self.groups[n.group]
            self.r.events.append(Event(self.env.now, n.group, "reclaim", f"node {n.id}", g.desired))
            # leaving from now, before the replacement below counts the members (the process starts at the next event)
            n.leaving = self.env.now
            self.env.process(self._leave(n, within_s=notice))
            if g.spec.spot_remedy:  # a replacement at the notice
                self.reconcile(n.group)
            else:  # the group restores its desired capacity once the node is gone
                self.env.process(self._after(notice, n.group))

    def _after(self, delay: float, group: str):
        yield self.env.timeout(delay)
        self.reconcile(group)

    # --- run -----------------------------------------------------------------------------------------------------

    def run(self) -> Result:
        scheduled = self._schedules_before_start()
        for g in self.groups.values():
            for billing in g.spec.attached:
                self._start_node(g, at_start=True, billing=billing, attached=True)
            if g.spec.name in scheduled:  # a schedule's desired counts the attached nodes, which it does not remove
                for _ in range(g.desired - len(g.spec.attached)):
                    self._start_node(g, at_start=True)
                g.desired = max(g.desired, len(self.members(g.spec.name)))
                continue
            for _ in range(g.desired):
                self._start_node(g, at_start=True)
            # the group counts the attached nodes: its desired capacity is what it launched plus them
            g.desired = len(self.members(g.spec.name))
        self.env.process(self._load_weighted() if self.weighted else self._load())
        for a in self.b.alarms:
            self.env.process(self._alarm(a))
        for p in self.b.pollers:
            self.env.process(self._poller(p))
        if self.b.schedules:
            self.env.process(self._schedules())
        if self.reclaim_at:
            self.env.process(self._reclaims())
        self.env.run(until=self.trace.duration_s)
        self.r.nodes = self.nodes
        return self.r


def load_split(serving: dict[str, int], weights: dict[str, int]) -> dict[str, float]:
    """Each group's share of the requests when the load balancer weighs every serving node by its group's per-node
    weight (weighted round robin): nodes x weight over the sum. Empty when no serving node has weight (the requests
    find no backend)."""
    total = sum(serving[g] * weights.get(g, 0) for g in serving)
    if total <= 0:
        return {}
    return {g: serving[g] * weights.get(g, 0) / total for g in serving}


def cooldown_after(spec: Group, by_rule: bool, rule_cooldown_s: float | None = None) -> float | None:
    """The cooldown an activity starts when it ends (None: none). One an executed rule (an alarm's, a scaler's)
    started: the rule's own cooldown when it has one, else the group's. Any other: the group's when its
    cooldown_after is "any", none when it is "rule"."""
    if not by_rule:
        return None if spec.cooldown_after == "rule" else spec.cooldown_s
    return spec.cooldown_s if rule_cooldown_s is None else rule_cooldown_s


def _holds(value: float, op: str, threshold: float) -> bool:
    return {">": value > threshold, ">=": value >= threshold, "<": value < threshold, "<=": value <= threshold}[op]


def simulate(
    behaviour: Behaviour, capacity: NodeCapacity, trace: Trace, reclaim_at: tuple[float, ...] = (), reclaim_per_hour: float = 0.0
) -> Result:
    """Run the fleet through the trace. Spot reclaims at the given times (seconds from the start) and/or at a rate
    (reclaims per spot node-hour, spread evenly: deterministic, so a run is reproducible)."""
    times = list(reclaim_at)
    if reclaim_per_hour > 0:
        every = 3600.0 / reclaim_per_hour
        times += [every * (i + 1) for i in range(int(trace.duration_s / every))]
    return Simulation(behaviour, capacity, trace, tuple(times)).run()
