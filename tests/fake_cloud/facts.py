"""What the policy tests read from the fake cloud's inventory (the same keys as every cloud's facts.view)."""

from __future__ import annotations


def of(inv, token):
    return [r["inputs"] for r in inv.resources if r["type"] == token]


def view(inv) -> dict:
    (group,) = of(inv, "fakecloud:compute/group:Group")
    (firewall,) = of(inv, "fakecloud:net/firewall:Firewall")
    (lb,) = of(inv, "fakecloud:lb/balancer:Balancer")
    nats = of(inv, "fakecloud:net/nat:Nat")
    subnets = of(inv, "fakecloud:net/subnet:Subnet")
    return {
        "node_ingress": [(r["cidr"], r["port"]) for r in firewall["ingress"]],
        "node_public_bandwidth": [group["publicBandwidth"]],
        "node_public_ip": [],
        "nat_with_eip": len(nats) == 1 and nats[0]["publicAddress"],
        "subnets_routed_to_nat": sum(1 for s in subnets if s["routeToNat"]),
        "subnets": len(subnets),
        "health_check_path": lb["healthCheckPath"],
        "group_replaces_lb_unhealthy": group["replaceUnhealthy"] and bool(group["balancerId"]),
        "group_zones": len(group["subnetIds"]),
        "group_min": group["minSize"],
        "user_data": [group["userData"]],
    }
