"""How the fleet simulation (gpufleet.simulate) reads what the Tencent program declares: AS groups and launch
configurations, the scaling policies (their CPU alarms, executed by AS; or executed by the SCF scaler, whose
environment holds the thresholds), lifecycle hooks, schedules, attached and protected subscription nodes, the CLB
health check; and Tencent's timings (simulation.yaml).

The scaler's decision is the deployed function's own: `decide` of components/tencentcloud/scaler/index.py."""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import Literal

from gpufleet.behaviour import timings as timing_data
from gpufleet.behaviour.model import Alarm, Behaviour, Group, HealthCheck, Hook, Poller, Schedule
from gpufleet.components.tencentcloud import rules

TIMINGS = Path(__file__).parent / "simulation.yaml"
SCALER = Path(__file__).parent / "scaler" / "index.py"
OPERATORS = {"GREATER_THAN": ">", "GREATER_THAN_OR_EQUAL_TO": ">=", "LESS_THAN": "<", "LESS_THAN_OR_EQUAL_TO": "<="}
SIGNALS = {"CPU_UTILIZATION": "cpu"}
# MetricAlarm.Threshold of a CPU_UTILIZATION alarm: the AS API takes 1-100 (%), as issue 26 reads the AS API reference
# (CreateScalingPolicy, tencentcloud.com/document/api/377/33210; data type MetricAlarm). A policy outside it is refused
# at create, so nothing can execute it.
CPU_THRESHOLD_RANGE = (1.0, 100.0)
# AS locks the group for the cooldown after any scaling activity: "The cooldown period refers to the locking duration
# after one scaling activity ... During which, the scaling group will not perform any scaling activities"
# (intl.cloud.tencent.com/document/product/377/4166, the AS FAQ).
COOLDOWN_AFTER: Literal["any"] = "any"
# What a listener's or rule's health check leaves out, and the check assumed when none declares one: the provider's
# defaults, terraform-provider-tencentcloud r/clb_listener_rule (website/docs/r/clb_listener_rule.html.markdown
# @089ac50): `health_check_interval_time` "the default is `5` sec", `health_check_health_num` and
# `health_check_unhealth_num` "the default is `3`".
HEALTH_DEFAULTS = HealthCheck(5, 3, 3)


@functools.cache
def scaler_module():
    spec = importlib.util.spec_from_file_location("gpufleet_scf_scaler_index", SCALER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _ref(value) -> str:
    text = str(value)
    if text.startswith("<") and "." in text:
        return text[1:].split(".", 1)[0]
    return text.removesuffix("_id")


def _accepted(inputs: dict) -> tuple[bool, str]:
    lo, hi = CPU_THRESHOLD_RANGE
    t = float(inputs.get("threshold", 0))
    if inputs.get("metricName") == "CPU_UTILIZATION" and not lo <= t <= hi:
        return False, f"threshold {t:g} is outside the {lo:g}-{hi:g} the AS API accepts: the policy is refused at create"
    return True, ""


def _decision(decide, out_above: float, in_below: float, values: dict) -> str:
    """The scaler's action for the nodes' values ("out" | "in" | "hold"), by the deployed function's decide()."""
    return decide(values, out_above, in_below)[0]


def _timer_period_s(trigger_desc: str) -> float:
    """An SCF timer's period from its 7-field cron (seconds minutes hours ...): '0 */1 * * * * *' -> 60."""
    fields = trigger_desc.split()
    m = re.fullmatch(r"\*/(\d+)", fields[1]) if len(fields) >= 2 else None
    if fields and fields[1] == "*":
        return 60.0
    if m:
        return 60.0 * int(m.group(1))
    return float(rules.SCF_TIMER_PERIOD_S)


def _health(check: dict) -> HealthCheck:
    """The CLB listener's or rule's health check; what it leaves out, the provider's defaults (HEALTH_DEFAULTS)."""
    return HEALTH_DEFAULTS.filled(
        check.get("healthCheckIntervalTime"), check.get("healthCheckHealthNum"), check.get("healthCheckUnhealthNum")
    )


def _weight(group: dict) -> int | None:
    """The per-node weight the group's nodes carry at the listener (forward_balancer_ids target_attributes weight)."""
    for balancer in group.get("forwardBalancerIds") or []:
        for target in balancer.get("targetAttributes") or []:
            if target.get("weight") is not None:
                return int(target["weight"])
    return None


def behaviour(resources: list[dict], node: dict, node_completes: bool | None = None) -> Behaviour:
    by_type: dict[str, list[dict]] = {}
    for r in resources:
        by_type.setdefault(r["type"], []).append(r)
    of = lambda token: by_type.get(token, [])  # noqa: E731
    configs = {r["name"]: r["inputs"] for r in of("tencentcloud:As/scalingConfig:ScalingConfig")}
    instances = {r["name"]: r["inputs"] for r in of("tencentcloud:Instance/instance:Instance")}
    protected = {_ref(r["inputs"]["autoScalingGroupId"]) for r in of("tencentcloud:As/protectInstances:ProtectInstances")}
    attached: dict[str, list[str]] = {}
    for r in of("tencentcloud:As/attachment:Attachment"):
        for iid in r["inputs"].get("instanceIds", []):
            inst = instances.get(_ref(iid), {})
            months = int(inst.get("instanceChargeTypePrepaidPeriod", 1) or 1)
            prepaid = inst.get("instanceChargeType") == "PREPAID"
            attached.setdefault(_ref(r["inputs"]["scalingGroupId"]), []).append(
                ("yearly" if months >= 12 else "monthly") if prepaid else "payg"
            )
    groups = []
    for r in of("tencentcloud:As/scalingGroup:ScalingGroup"):
        i, name = r["inputs"], r["name"]
        cfg = configs.get(_ref(i.get("configurationId")), {})
        groups.append(
            Group(
                name=name,
                min=int(i["minSize"]),
                max=int(i["maxSize"]),
                desired=int(i.get("desiredCapacity", i["minSize"])),
                cooldown_s=float(i.get("defaultCooldown", 300)),
                billing="spot" if cfg.get("instanceChargeType") == "SPOTPAID" else "payg",
                attached=tuple(attached.get(name, ())),
                attached_protected=name in protected,
                health_check_grace_s=float(i.get("lbHealthCheckGracePeriod", 0) or 0),
                weight=_weight(i),
                cooldown_after=COOLDOWN_AFTER,
                # spot_remedy stays False: AS's CapacityRebalance (replace a spot node at the reclaim notice) "默认取
                # FALSE ... AS 等待竞价实例被销毁后才会去扩容补齐伸缩组期望实例数" (tccli autoscaling 2018-04-19 api.json,
                # CreateAutoScalingGroup), and the provider this program is built on has no argument for it
                spot_remedy=False,
            )
        )
    t = {**node, **timing_data.read(TIMINGS)}
    policies = {}
    alarms = []
    for r in of("tencentcloud:As/scalingPolicy:ScalingPolicy"):
        i = r["inputs"]
        ok, why = _accepted(i)
        policies[r["name"]] = (_ref(i["scalingGroupId"]), int(i["adjustmentValue"]), ok, why)
        alarms.append(
            Alarm(
                name=r["name"],
                group=_ref(i["scalingGroupId"]),
                adjustment=int(i["adjustmentValue"]),
                conditions=(
                    (SIGNALS.get(i["metricName"], i["metricName"]), OPERATORS[i["comparisonOperator"]], float(i["threshold"])),
                ),
                period_s=float(i.get("period", 60)),
                evaluation_count=int(i.get("continuousTime", 1)),
                accepted=ok,
                why=why,
            )
        )
    pollers = []
    reaction, how = 0.0, ""
    for r in of("tencentcloud:Scf/function:Function"):
        env = r["inputs"].get("environment") or {}
        if "GPUFLEET_SCALE_OUT_POLICY" not in env:
            continue
        period = min(
            (_timer_period_s(tr.get("triggerDesc", "")) for tr in r["inputs"].get("triggers", []) if tr.get("type") == "timer"),
            default=60.0,
        )
        out_above, in_below = float(env["GPUFLEET_SCALE_OUT_ABOVE"]), float(env["GPUFLEET_SCALE_IN_BELOW"])
        decide = scaler_module().decide
        pollers.append(
            Poller(
                name=r["name"],
                period_s=period,
                signal=env["GPUFLEET_METRIC"],
                decide=functools.partial(_decision, decide, out_above, in_below),
                groups=tuple(_ref(g) for g in str(env["GPUFLEET_SCALING_GROUP"]).split(",") if g)
                or tuple(g.name for g in groups),
                policies={
                    "out": policies.get(_ref(env["GPUFLEET_SCALE_OUT_POLICY"]), ("", 0, False, "no such policy")),
                    "in": policies.get(_ref(env["GPUFLEET_SCALE_IN_POLICY"]), ("", 0, False, "no such policy")),
                },
            )
        )
        reaction, how = period, f"the SCF scaler's timer period {period:g} s (it acts on the reading it takes)"
    if not pollers:
        outs = [a for a in alarms if a.adjustment > 0]
        reaction = max((a.period_s * a.evaluation_count for a in outs), default=0.0) + t["metric_publish_s"].seconds
        reaction += t["report_lag_s"].seconds
        how = "AS alarm period x continuous periods + one CVM sample period + report lag"
    hooks = []
    for r in of("tencentcloud:As/lifecycleHook:LifecycleHook"):
        i = r["inputs"]
        launching = i["lifecycleTransition"] == "INSTANCE_LAUNCHING"
        command = bool(i.get("lifecycleCommand"))
        if launching:
            by, why = ("command", "its TAT command completes it") if command else ("", "nothing completes it (no command)")
        else:
            by, why = ("drain", "its TAT command runs the drain") if command else ("", "nothing completes it (no command)")
        hooks.append(
            Hook(_ref(i["scalingGroupId"]), "out" if launching else "in", float(i.get("heartbeatTimeout", 300)), by, why)
        )
    schedules = [
        Schedule(
            r["name"],
            _ref(r["inputs"]["scalingGroupId"]),
            r["inputs"]["recurrence"],
            rules.CRON_ZONE_HOURS,
            int(r["inputs"]["minSize"]),
            int(r["inputs"]["maxSize"]),
            int(r["inputs"].get("desiredCapacity", r["inputs"]["minSize"])),
        )
        for r in of("tencentcloud:As/schedule:Schedule")
        if r["inputs"].get("recurrence")
    ]
    health = HEALTH_DEFAULTS
    notes = []
    checks = [r["inputs"] for r in of("tencentcloud:Clb/listenerRule:ListenerRule") + of("tencentcloud:Clb/listener:Listener")]
    hc = next((i for i in checks if i.get("healthCheckSwitch")), None)
    if hc:
        health = _health(hc)
    else:
        notes.append(
            f"no listener health check declared: the provider's defaults ({health.interval_s:g} s, "
            f"{health.healthy_threshold} healthy, {health.unhealthy_threshold} unhealthy) are assumed"
        )
    refused = [f"{a.name}: {a.why}" for a in alarms if not a.accepted]
    notes += refused
    drain = max((h.timeout_s for h in hooks if h.transition == "in"), default=0.0)
    return Behaviour(
        cloud="tencentcloud",
        groups=groups,
        alarms=alarms,
        pollers=pollers,
        hooks=hooks,
        schedules=schedules,
        health=health,
        timings=t,
        drain_timeout_s=drain,
        reaction_s=reaction,
        reaction_how=how,
        notes=notes,
    )
