"""What the policy tests read from Alibaba Cloud's inventory: the cloud-neutral facts (tests/test_policy.py states the
invariants once over these keys; every cloud's `view` returns the same keys)."""

from __future__ import annotations

import base64

from gpufleet.images import scaling_signals


def of(inv, token):
    return [r["inputs"] for r in inv.resources if r["type"] == token]


def view(inv) -> dict:
    rules = of(inv, "alicloud:ecs/securityGroupRule:SecurityGroupRule")
    # the fleet's serving group first; a rollout's candidate group is the second (stacks/rollout.py)
    group, *_ = of(inv, "alicloud:ess/scalingGroup:ScalingGroup")
    (listener,) = [x for x in of(inv, "alicloud:slb/listener:Listener") if x.get("listenerForward") != "on"]  # not the redirect
    configs = of(inv, "alicloud:ess/scalingConfiguration:ScalingConfiguration")
    config = configs[0]
    # on the CLB's default server group (loadbalancer_ids), or its VServer group with a weight (a rollout's groups)
    attached = bool(group.get("loadbalancerIds")) or bool(
        of(inv, "alicloud:ess/scalingGroupVServerGroups:ScalingGroupVServerGroups")
    )
    nats = of(inv, "alicloud:vpc/natGateway:NatGateway")
    assoc = of(inv, "alicloud:ecs/eipAssociation:EipAssociation")
    return {
        "node_ingress": [
            (r["cidrIp"], r["portRange"].split("/")[0]) for r in rules if r["type"] == "ingress" and r["policy"] == "accept"
        ],
        "node_public_bandwidth": [c.get("internetMaxBandwidthOut") for c in configs + of(inv, "alicloud:ecs/instance:Instance")],
        "node_public_ip": [],  # no flag of its own on Alibaba: bandwidth 0 is no public IP
        "nat_with_eip": len(nats) == 1 and nats[0]["natType"] == "Enhanced" and [a["instanceType"] for a in assoc] == ["Nat"],
        "subnets_routed_to_nat": len(of(inv, "alicloud:vpc/snatEntry:SnatEntry")),
        "subnets": len(of(inv, "alicloud:vpc/switch:Switch")),
        "health_check_path": listener["healthCheckUri"] if listener["healthCheck"] == "on" else None,
        "group_replaces_lb_unhealthy": "LOAD_BALANCER" in group["healthCheckTypes"] and attached,
        "group_zones": len(group["vswitchIds"]),
        "group_min": group["minSize"],
        "user_data": [base64.b64decode(c["userData"]).decode() for c in configs],
        "scales_on": _scales_on(inv),
        "drains_on_scale_in": any(
            h["lifecycleTransition"] == "SCALE_IN" for h in of(inv, "alicloud:ess/lifecycleHook:LifecycleHook")
        ),
        "on_demand_base": group.get("onDemandBaseCapacity", group["minSize"])
        if config.get("spotStrategy", "NoSpot") != "NoSpot"
        else None,
    }


def _scales_on(inv) -> str:
    """The signal of the scale-out task: a scaling_metrics.yaml key, or cpu_utilization."""
    names = {v: k for k, v in scaling_signals.load().names.items()}
    out, *_ = [a for a in of(inv, "alicloud:ess/alarm:Alarm") if a["name"].endswith("-scale-out")]  # the fleet's group
    return names.get(out["metricName"], "cpu_utilization" if out["metricName"] == "CpuUtilization" else out["metricName"])
