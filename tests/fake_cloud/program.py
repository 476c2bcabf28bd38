"""The fake cloud's fleet: VPC, a subnet per zone, NAT with a public address, firewall, load balancer, node group.

Resources are plain pulumi.CustomResource of the fake provider's type tokens: the mock engine records them like any
provider's, so preview, cost and the policy tests run over them.
"""

from __future__ import annotations

import pulumi

from gpufleet import naming
from gpufleet.components import userdata


def _res(token: str, name: str, props: dict, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    return pulumi.CustomResource(token, name, props, opts)


def declare(fleet, parent: pulumi.Resource) -> dict:
    spec, name = fleet.spec, fleet.prefix
    tags = {**spec.tags, "gpufleet:fleet": naming.base(spec), "gpufleet:env": spec.environment}  # as the shipped clouds
    opts = pulumi.ResourceOptions(parent=parent)
    vpc = _res("fakecloud:net/vpc:Vpc", f"{name}-vpc", {"cidr": spec.network.vpc_cidr, "tags": tags}, opts)
    subnets = [
        _res(
            "fakecloud:net/subnet:Subnet", f"{name}-subnet-{i}", {"vpcId": vpc.id, "zone": z, "cidr": c, "routeToNat": True}, opts
        )
        for i, (z, c) in enumerate(zip(spec.zones, fleet.subnets))
    ]
    _res("fakecloud:net/nat:Nat", f"{name}-nat", {"vpcId": vpc.id, "publicAddress": True, "tags": tags}, opts)
    ingress = [{"cidr": c, "port": "22"} for c in spec.network.ssh_cidrs]
    ingress.append({"cidr": spec.network.vpc_cidr, "port": str(spec.serving.port)})
    firewall = _res("fakecloud:net/firewall:Firewall", f"{name}-fw", {"vpcId": vpc.id, "ingress": ingress, "tags": tags}, opts)
    lb = _res(
        "fakecloud:lb/balancer:Balancer",
        f"{name}-lb",
        {
            "subnetId": subnets[0].id,
            "healthCheckPath": spec.load_balancer.health_check.path,
            "public": True,
            # TLS at the balancer with the certificate the spec names (prod from the internet must have it)
            "certificateId": spec.load_balancer.tls.certificate_id if spec.load_balancer.tls else None,
            "tags": tags,
            "address": None,
        },
        opts,
    )
    role = f"{name}-node-role"
    group = _res(
        "fakecloud:compute/group:Group",
        f"{name}-group",
        {
            "instanceType": fleet.instance_type.type,
            "imageId": fleet.image_id,
            "subnetIds": [s.id for s in subnets],
            "firewallId": firewall.id,
            "balancerId": lb.id,
            "replaceUnhealthy": True,
            "minSize": spec.replicas.min,
            "maxSize": spec.replicas.max,
            "publicBandwidth": 0,
            "diskGib": spec.disks.system.size_gib + spec.disks.data.size_gib,
            "userData": userdata.render(fleet, role),
            "tags": tags,
        },
        opts,
    )
    return {
        "endpoint": _endpoint(spec, lb),
        "vpc_id": vpc.id,
        "scaling_group_id": group.id,
        "security_group_ids": [firewall.id],
    }


def _endpoint(spec, lb):
    tls = spec.load_balancer.tls
    if tls is None:
        return lb.address.apply(lambda a: f"http://{a}:{spec.serving.port}")
    port = "" if spec.load_balancer.listener_port == 443 else f":{spec.load_balancer.listener_port}"
    return f"https://{tls.domain}{port}"
