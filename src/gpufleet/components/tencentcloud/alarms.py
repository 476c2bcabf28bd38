"""Cloud Monitor alarm policies bound by the fleet tag: GPU utilisation and memory with the spec's thresholds,
and GPU hardware health (uncorrectable ECC errors, retired pages pending).

Metric names are those of namespace QCE/CVM (Cloud Monitor basic metrics, as listed by
data.tencentcloud_monitor_alarm_basic_metric): Gpuutil, Gpumemusage (%), Gpueccterminateapp and
Gpuretiredpagepending (0 / 1 per GPU). Policies of namespace cvm_device bind every CVM carrying the tag.
"""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from gpufleet.components.shared_args import AlarmsArgs
from gpufleet.components.tencentcloud import checks
from gpufleet.stacks.spec import Alarms as AlarmsSpec

METRICS = {"gpu_utilization": "Gpuutil", "gpu_memory": "Gpumemusage"}
HARDWARE = {
    "Gpueccterminateapp": "uncorrectable ECC error: the GPU stopped an application",
    "Gpuretiredpagepending": "GPU memory pages are waiting to be retired: reboot the node",
}


def _rule(metric: str, description: str, value: str, minutes: int, unit: str) -> dict:
    return {
        "metric_name": metric,
        "description": description,
        "operator": "ge" if unit == "%" else "gt",
        "value": value,
        "period": 60,
        "continue_period": minutes,
        "notice_frequency": 3600,
        "is_power_notice": 0,
        "rule_type": "STATIC",
        "unit": unit,
    }


def policy_args(alarms: AlarmsSpec) -> list[dict]:
    usage = [
        _rule(metric, key, f"{getattr(alarms, key).threshold_percent:g}", getattr(alarms, key).minutes, "%")
        for key, metric in METRICS.items()
    ]
    health = [_rule(metric, why, "0", 1, "None") for metric, why in HARDWARE.items()]
    return [
        # CreateAlarmPolicy Remark: "仅支持中英文、数字、下划线、-" (letters, digits, _ and -: no space; rules.py)
        {"key": "gpu-usage", "rules": usage, "remark": "GPU-utilisation-and-memory-above-the-spec-thresholds"},
        {"key": "gpu-health", "rules": health, "remark": "GPU-hardware-health-replace-or-reboot-the-node"},
    ]


class Alarms(pulumi.ComponentResource):
    def __init__(self, name: str, args: AlarmsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:tencentcloud:Alarms", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        contact = args.alarms.contact_group
        notice_ids = [contact] if checks.notifies(contact) else None  # otherwise a preview note (checks.notes)
        for policy in policy_args(args.alarms):
            key = policy["key"]
            tencentcloud.monitor.AlarmPolicy(
                f"{name}-{key}",
                policy_name=args.names(f"{name}-{key}"),
                monitor_type="MT_QCE",
                namespace="cvm_device",
                enable=1,
                project_id=0,
                conditions={"is_union_rule": 0, "rules": policy["rules"]},
                remark=policy["remark"],
                notice_ids=notice_ids,
                policy_tags=[{"key": "gpufleet:fleet", "value": args.fleet_tag}],
                opts=child,
            )
        self.register_outputs({})
