"""CloudMonitor alarms on every node of the fleet: a monitor group filled by the fleet tag, GPU rules on it."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud
from gpufleet.stacks.loader import Fleet

# CloudMonitor metric names in namespace acs_ecs_dashboard (instance-level GPU metrics, reported by the agent).
METRICS = {"gpu_utilization": "instance_gpu_gpu_usedutilization", "gpu_memory": "instance_gpu_memory_usedutilization"}


def rule_args(fleet: Fleet) -> list[dict]:
    alarms = fleet.spec.alarms
    out = []
    for key, metric in METRICS.items():
        t = getattr(alarms, key)
        out.append(
            {
                "key": key,
                "metric_name": metric,
                "namespace": "acs_ecs_dashboard",
                "category": "ecs",
                "period": 60,
                "escalations": {
                    "critical": {
                        "comparison_operator": "GreaterThanOrEqualToThreshold",
                        "statistics": "Average",
                        "threshold": str(t.threshold_percent),
                        "times": t.minutes,
                    }
                },
            }
        )
    return out


class Alarms(pulumi.ComponentResource):
    def __init__(self, name: str, fleet: Fleet, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:alicloud:Alarms", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        contact = fleet.spec.alarms.contact_group
        group = alicloud.cms.MonitorGroup(
            f"{name}-nodes", monitor_group_name=f"{name}-nodes", contact_groups=[contact], opts=child
        )
        alicloud.cms.DynamicTagGroup(
            f"{name}-nodes",
            tag_key="gpufleet:fleet",
            contact_group_lists=[contact],
            match_express_filter_relation="and",
            match_expresses=[{"tag_value": fleet.prefix, "tag_value_match_function": "equals"}],
            opts=child,
        )
        for args in rule_args(fleet):
            key = args.pop("key")
            alicloud.cms.GroupMetricRule(
                f"{name}-{key}",
                group_id=group.id,
                group_metric_rule_name=f"{name}-{key}",
                rule_id=f"{name}-{key}",
                contact_groups=contact,
                opts=child,
                **args,
            )
        self.register_outputs({})
