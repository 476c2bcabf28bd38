"""CloudMonitor alarms on every node of the fleet.

A dynamic tag group (cms.DynamicTagGroup) creates and keeps filling an application group with every instance
that carries the fleet tag (the ESS scaling configuration tags each node it starts), and applies the alert
templates listed in `template_id_lists` to that group (website/docs/r/cms_dynamic_tag_group.html.markdown).
The GPU rules are one alert template (cms.MetricRuleTemplate). A cms.GroupMetricRule on a hand-made
cms.MonitorGroup would watch a group nothing fills: the dynamic tag group makes its own groups.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.components.shared_args import AlarmsArgs
from gpufleet.stacks.spec import Alarms as AlarmsSpec

# CloudMonitor metric names in namespace acs_ecs_dashboard (instance-level GPU metrics, reported by the agent).
METRICS = {"gpu_utilization": "instance_gpu_gpu_usedutilization", "gpu_memory": "instance_gpu_memory_usedutilization"}


def alert_templates(alarms: AlarmsSpec) -> list[dict]:
    out = []
    for key, metric in METRICS.items():
        t = getattr(alarms, key)
        out.append(
            {
                "rule_name": key,
                "metric_name": metric,
                "namespace": "acs_ecs_dashboard",
                "category": "ecs",
                "escalations": {
                    "critical": {
                        "comparison_operator": "GreaterThanOrEqualToThreshold",
                        "statistics": "Average",
                        "threshold": f"{t.threshold_percent:g}",
                        "times": t.minutes,
                    }
                },
            }
        )
    return out


class Alarms(pulumi.ComponentResource):
    def __init__(self, name: str, args: AlarmsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:alicloud:Alarms", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        physical = args.names
        contact = args.alarms.contact_group
        template = alicloud.cms.MetricRuleTemplate(
            f"{name}-gpu",
            metric_rule_template_name=physical(f"{name}-gpu"),
            description="GPU utilisation and memory above the spec's thresholds",
            alert_templates=alert_templates(args.alarms),
            opts=child,
        )
        alicloud.cms.DynamicTagGroup(
            f"{name}-nodes",
            tag_key="gpufleet:fleet",
            contact_group_lists=[contact],
            match_express_filter_relation="and",
            match_expresses=[{"tag_value": args.fleet_tag, "tag_value_match_function": "equals"}],
            template_id_lists=[template.id],
            opts=child,
        )
        # The application group the nodes publish their scaling metrics into (cms:PutCustomMetric with this GroupId,
        # GPUFLEET_METRICS_GROUP); the ESS event-triggered tasks read the custom metrics there (scaling.py).
        self.metrics_group = alicloud.cms.MonitorGroup(
            f"{name}-metrics",
            monitor_group_name=physical(f"{physical.prefix}-scaling-metrics"),
            contact_groups=[contact],
            opts=child,
        )
        self.register_outputs({"metrics_group_id": self.metrics_group.id})
