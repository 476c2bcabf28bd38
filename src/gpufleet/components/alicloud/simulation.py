"""How the fleet simulation (gpufleet.simulate) reads what the Alibaba program declares: ESS scaling groups and their
scaling configurations, the event-triggered tasks (ess.Alarm) and the rules they execute, lifecycle hooks, scheduled
tasks, the subscription nodes attached to the group, the CLB listener's health check; and Alibaba's timings
(simulation.yaml)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Literal

from gpufleet.behaviour import timings as timing_data
from gpufleet.behaviour.model import Alarm, Behaviour, Group, HealthCheck, Hook, Schedule
from gpufleet.components.alicloud import node_agent, rules
from gpufleet.images import scaling_signals

TIMINGS = Path(__file__).parent / "simulation.yaml"
OPERATORS = {">": ">", ">=": ">=", "<": "<", "<=": "<="}
# ESS starts the cooldown only after a scaling activity an event-triggered task (ess.Alarm) started: "A cooldown
# period is a temporary lockout interval following a successful scaling event initiated by an event-triggered task";
# "Scaling requests from manual execution of scheduled tasks or adjustments to the expected/minimum/maximum instance
# count are unaffected" (https://www.alibabacloud.com/help/en/auto-scaling/user-guide/cooldown-period). A scheduled
# task's activity, the restore of the desired capacity and a spot replacement start none.
COOLDOWN_AFTER: Literal["rule"] = "rule"
# What an ess.Alarm leaves out, as the provider fills it: terraform-provider-alicloud r/ess_alarm
# (website/docs/r/ess_alarm.html.markdown @30c7bd7): `period` "Defaults to 300", `comparison_operator` "Defaults to >="
# (the same for an `expressions` entry), `evaluation_count` "Defaults to 3".
ALARM_PERIOD_S = 300.0
ALARM_OPERATOR = ">="
ALARM_EVALUATION_COUNT = 3
# What a listener's health check leaves out, and the check assumed when no listener declares one: the provider's
# defaults, terraform-provider-alicloud r/slb_listener (website/docs/r/slb_listener.html.markdown @02a0b45):
# `health_check_interval` "Default to 2", `healthy_threshold` and `unhealthy_threshold` "Default to 3".
HEALTH_DEFAULTS = HealthCheck(2, 3, 3)


def _ref(value) -> str:
    """The resource a mock-engine id or output reference names: 'x_id' and '<x.ari>' -> 'x'."""
    text = str(value)
    if text.startswith("<") and "." in text:
        return text[1:].split(".", 1)[0]
    return text.removesuffix("_id")


def _signal(metric_name: str) -> str:
    if metric_name == "CpuUtilization":
        return "cpu"
    names = {v: k for k, v in scaling_signals.load().names.items()}
    return names.get(metric_name, metric_name)


def _conditions(alarm: dict) -> list[dict]:
    """An ess.Alarm's conditions: its `expressions` (a multi-metric alarm), else the alarm's own metric."""
    return alarm.get("expressions") or [alarm]


def _condition(e: dict) -> tuple[str, str, float]:
    """(signal, operator, threshold) of one condition; the operator the provider's default when left out."""
    return _signal(e["metricName"]), OPERATORS[e.get("comparisonOperator") or ALARM_OPERATOR], float(e["threshold"])


def _health(listener: dict) -> HealthCheck:
    """The CLB listener's health check; what it leaves out, the provider's defaults (HEALTH_DEFAULTS)."""
    return HEALTH_DEFAULTS.filled(
        listener.get("healthCheckInterval"), listener.get("healthyThreshold"), listener.get("unhealthyThreshold")
    )


def _rule_cooldown(rule: dict) -> float | None:
    """A scaling rule's own cooldown, which ESS applies after the activity the rule starts instead of the group's
    default: "You can configure the Default Cooldown Time (Seconds) and Cooldown Time parameters at the same time. In
    this case, the value of the Cooldown Time parameter takes priority" (the cooldown-period page, COOLDOWN_AFTER).
    None: not set (the group's defaultCooldown)."""
    value = rule.get("cooldown")
    return None if value is None else float(value)


def node_completes_launch_hook() -> tuple[bool, str]:
    """Does the node itself end a SCALE_OUT wait (CompleteLifecycleAction once vLLM serves)? Read from the node
    agent the image runs (Alibaba's part of it, components/alicloud/node_agent.py, shipped beside images/node_agent.py),
    since the hook names no notification target that would."""
    try:
        text = inspect.getsource(node_agent)
    except (ImportError, OSError):
        return False, "the node agent could not be read"
    if "CompleteLifecycleAction" in text:
        return True, "the node agent calls CompleteLifecycleAction once vLLM serves (components/alicloud/node_agent.py)"
    return False, "nothing calls CompleteLifecycleAction: no notification target, and the node agent does not"


def behaviour(resources: list[dict], node: dict, node_completes: bool | None = None) -> Behaviour:
    """The Behaviour of the declared resources; node: the node's boot timings (gpufleet.behaviour.timings.node).
    node_completes: whether the node ends a SCALE_OUT hook (None: read from the node agent)."""
    by_type: dict[str, list[dict]] = {}
    for r in resources:
        by_type.setdefault(r["type"], []).append(r)
    of = lambda token: by_type.get(token, [])  # noqa: E731
    configs = {
        _ref(r["inputs"].get("scalingGroupId")): r["inputs"] for r in of("alicloud:ess/scalingConfiguration:ScalingConfiguration")
    }
    instances = {r["name"]: r["inputs"] for r in of("alicloud:ecs/instance:Instance")}
    attached: dict[str, list[str]] = {}
    for r in of("alicloud:ess/attachment:Attachment"):
        for iid in r["inputs"].get("instanceIds", []):
            inst = instances.get(_ref(iid), {})
            months = int(inst.get("period", 1) or 1)
            paid = "yearly" if inst.get("instanceChargeType") == "PrePaid" and months >= 12 else "monthly"
            attached.setdefault(_ref(r["inputs"]["scalingGroupId"]), []).append(
                paid if inst.get("instanceChargeType") == "PrePaid" else "payg"
            )
    # a rollout's groups join the listener's VServer group with a per-node weight (scaling.vserver_args)
    weights = {
        _ref(r["inputs"]["scalingGroupId"]): int(attr["weight"])
        for r in of("alicloud:ess/scalingGroupVServerGroups:ScalingGroupVServerGroups")
        for vg in r["inputs"].get("vserverGroups") or []
        for attr in vg.get("vserverAttributes") or []
        if attr.get("weight") is not None
    }
    groups = []
    hooks_in = [r for r in of("alicloud:ess/lifecycleHook:LifecycleHook")]
    for r in of("alicloud:ess/scalingGroup:ScalingGroup"):
        i, name = r["inputs"], r["name"]
        cfg = configs.get(name, {})
        spot = cfg.get("spotStrategy", "NoSpot") != "NoSpot"
        groups.append(
            Group(
                name=name,
                min=int(i["minSize"]),
                max=int(i["maxSize"]),
                desired=int(i.get("desiredCapacity", i["minSize"])),
                cooldown_s=float(i.get("defaultCooldown", 300)),
                billing="spot" if spot else "payg",
                on_demand_base=int(i.get("onDemandBaseCapacity", 0) or 0),
                on_demand_above_base_percent=int(i.get("onDemandPercentageAboveBaseCapacity", 0) or 0),
                attached=tuple(attached.get(name, ())),
                attached_protected=False,
                spot_remedy=bool(i.get("spotInstanceRemedy", False)),
                weight=weights.get(name),
                cooldown_after=COOLDOWN_AFTER,
            )
        )
    scaling_rules = {r["name"]: r["inputs"] for r in of("alicloud:ess/scalingRule:ScalingRule")}
    alarms = []
    for r in of("alicloud:ess/alarm:Alarm"):
        i = r["inputs"]
        rule = scaling_rules.get(_ref((i.get("alarmActions") or [""])[0]), {})
        conditions = _conditions(i)
        alarms.append(
            Alarm(
                name=r["name"],
                group=_ref(i["scalingGroupId"]),
                adjustment=int(rule.get("adjustmentValue", 0)),
                conditions=tuple(_condition(e) for e in conditions),
                period_s=float(conditions[0].get("period") or ALARM_PERIOD_S),
                evaluation_count=int(i.get("evaluationCount") or ALARM_EVALUATION_COUNT),
                cooldown_s=_rule_cooldown(rule),
            )
        )
    completes, completes_why = node_completes_launch_hook() if node_completes is None else (node_completes, "given")
    hooks = []
    for r in hooks_in:
        i = r["inputs"]
        out = i["lifecycleTransition"] == "SCALE_OUT"
        arn = str(i.get("notificationArn") or "")
        if out:
            by, why = ("ready", completes_why) if completes else ("", completes_why)
        elif arn.endswith(f"template/{rules.DRAIN_TEMPLATE}"):
            by, why = "drain", f"OOS {rules.DRAIN_TEMPLATE} runs the drain command, then completes the action"
        else:
            by, why = "", f"nothing completes it (notification target {arn or 'none'})"
        hooks.append(Hook(_ref(i["scalingGroupId"]), "out" if out else "in", float(i["heartbeatTimeout"]), by, why))
    schedules = [
        Schedule(
            r["name"],
            _ref(r["inputs"]["scalingGroupId"]),
            r["inputs"]["recurrenceValue"],
            rules.CRON_ZONE_HOURS,
            int(r["inputs"]["minValue"]),
            int(r["inputs"]["maxValue"]),
            int(r["inputs"].get("desiredCapacity", r["inputs"]["minValue"])),
        )
        for r in of("alicloud:ess/scheduledTask:ScheduledTask")
        if r["inputs"].get("taskEnabled", True)
    ]
    health = HEALTH_DEFAULTS
    notes = []
    for r in of("alicloud:slb/listener:Listener"):
        i = r["inputs"]
        if i.get("healthCheck") == "on" or "healthCheckInterval" in i:
            health = _health(i)
            break
    else:
        notes.append(
            f"no listener health check declared: the provider's defaults ({health.interval_s:g} s, "
            f"{health.healthy_threshold} healthy, {health.unhealthy_threshold} unhealthy) are assumed"
        )
    t = {**node, **timing_data.read(TIMINGS)}
    out_alarms = [a for a in alarms if a.adjustment > 0]
    reaction = max((a.period_s * a.evaluation_count for a in out_alarms), default=0.0)
    reaction += t["metric_publish_s"].seconds + t["report_lag_s"].seconds
    how = (
        "ESS alarm period x evaluation count "
        + ", ".join(f"{a.period_s:g} s x {a.evaluation_count}" for a in out_alarms)
        + f" + the nodes' publish interval {t['metric_publish_s'].seconds:g} s + report lag {t['report_lag_s'].seconds:g} s"
    )
    drain = max((h.timeout_s for h in hooks if h.transition == "in"), default=0.0)
    return Behaviour(
        cloud="alicloud",
        groups=groups,
        alarms=alarms,
        hooks=hooks,
        schedules=schedules,
        health=health,
        timings=t,
        drain_timeout_s=drain,
        reaction_s=reaction,
        reaction_how=how,
        notes=notes,
    )
