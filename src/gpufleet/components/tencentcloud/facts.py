"""What the policy tests read from Tencent Cloud's inventory: the cloud-neutral facts (tests/test_policy.py states the
invariants once over these keys; every cloud's `view` returns the same keys)."""

from __future__ import annotations

import base64


def of(inv, token):
    return [r["inputs"] for r in inv.resources if r["type"] == token]


def view(inv) -> dict:
    rule_sets = {r["name"]: r["inputs"] for r in inv.resources if r["type"] == "tencentcloud:Security/groupRuleSet:GroupRuleSet"}
    groups = of(inv, "tencentcloud:As/scalingGroup:ScalingGroup")
    # the group that scales (the fleet's; a rollout's candidate group is the second, stacks/rollout.py)
    group, *_ = [g for g in groups if not g["scalingGroupName"].endswith("-base-group")]
    base = [g for g in groups if g["scalingGroupName"].endswith("-base-group")]
    (listener,) = of(inv, "tencentcloud:Clb/listener:Listener")
    listener = ([*of(inv, "tencentcloud:Clb/listenerRule:ListenerRule"), listener])[0]  # HTTPS: the check is on the rule
    configs = [
        c for c in of(inv, "tencentcloud:As/scalingConfig:ScalingConfig") if not c["configurationName"].endswith("-base-config")
    ]
    config = configs[0]
    (node_rules,) = [rs for rs in rule_sets.values() if rs["securityGroupId"] == config["securityGroupIds"][0]]
    subnets = of(inv, "tencentcloud:Subnet/instance:Instance")
    tables = {f"{r['name']}_id" for r in inv.resources if r["type"] == "tencentcloud:Route/table:Table"}
    default_routes = [
        e
        for e in of(inv, "tencentcloud:Route/tableEntry:TableEntry")
        if e["destinationCidrBlock"] == "0.0.0.0/0" and e["nextType"] == "NAT"
    ]
    routed_tables = {e["routeTableId"] for e in default_routes}
    nats = of(inv, "tencentcloud:Nat/gateway:Gateway")
    baseline = of(inv, "tencentcloud:Instance/instance:Instance")
    return {
        "node_ingress": [(r["cidrBlock"], r["port"]) for r in node_rules["ingresses"] if r["action"] == "ACCEPT"],
        "node_public_bandwidth": [c.get("internetMaxBandwidthOut") for c in configs + baseline],
        "node_public_ip": [c.get("publicIpAssigned") for c in configs] + [b.get("allocatePublicIp") for b in baseline],
        "nat_with_eip": len(nats) == 1 and len(nats[0]["assignedEipSets"]) >= 1,
        "subnets_routed_to_nat": sum(1 for s in subnets if s.get("routeTableId") in routed_tables & tables),
        "subnets": len(subnets),
        "health_check_path": listener["healthCheckHttpPath"]
        if listener["healthCheckSwitch"] and listener["healthCheckType"] == "HTTP"
        else None,
        "group_replaces_lb_unhealthy": group["healthCheckType"] == "CLB"
        and group["replaceLoadBalancerUnhealthy"]
        and bool(group["forwardBalancerIds"]),
        "group_zones": len(group["subnetIds"]),
        "group_min": group["minSize"],
        "user_data": [base64.b64decode(c["userData"]).decode() for c in configs + baseline],
        "scales_on": next(
            (f["environment"]["GPUFLEET_METRIC"] for f in of(inv, "tencentcloud:Scf/function:Function")), "cpu_utilization"
        ),
        "drains_on_scale_in": {
            h["scalingGroupId"]
            for h in of(inv, "tencentcloud:As/lifecycleHook:LifecycleHook")
            if h["lifecycleTransition"] == "INSTANCE_TERMINATING"
        }
        == {f"{n}_id" for n in _group_names(inv)},
        "on_demand_base": (base[0]["minSize"] if base else 0) if config.get("instanceChargeType") == "SPOTPAID" else None,
    }


def _group_names(inv) -> list[str]:
    return [r["name"] for r in inv.resources if r["type"] == "tencentcloud:As/scalingGroup:ScalingGroup"]
