"""VPC, one vSwitch per zone, and an enhanced Internet NAT gateway with an EIP and SNAT per vSwitch."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.naming import physical
from gpufleet.stacks.loader import Fleet


def eip_args(fleet: Fleet) -> dict:
    egress = fleet.spec.egress
    return {
        "bandwidth": str(egress.bandwidth_mbps),
        "internet_charge_type": "PayByTraffic" if egress.charge == "traffic" else "PayByBandwidth",
        "payment_type": "PayAsYouGo",
    }


def protection_args(fleet: Fleet) -> dict:
    """Prod's NAT gateway and EIP refuse deletion (deletion_protection on vpc.NatGateway and ecs.EipAddress)."""
    return {"deletion_protection": fleet.spec.environment == "prod"}


class Network(pulumi.ComponentResource):
    def __init__(self, name: str, fleet: Fleet, tags: dict, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:alicloud:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.vpc = alicloud.vpc.Network(
            f"{name}-vpc", vpc_name=physical(fleet, f"{name}-vpc"), cidr_block=fleet.spec.network.vpc_cidr, tags=tags, opts=child
        )
        self.switches = [
            alicloud.vpc.Switch(
                f"{name}-{zone}",
                vswitch_name=physical(fleet, f"{name}-{zone}"),
                vpc_id=self.vpc.id,
                cidr_block=cidr,
                zone_id=zone,
                tags=tags,
                opts=child,
            )
            for zone, cidr in zip(fleet.spec.zones, fleet.subnets)
        ]
        self.nat = alicloud.vpc.NatGateway(
            f"{name}-nat",
            nat_gateway_name=physical(fleet, f"{name}-nat"),
            vpc_id=self.vpc.id,
            vswitch_id=self.switches[0].id,
            nat_type="Enhanced",
            network_type="internet",
            payment_type="PayAsYouGo",
            internet_charge_type="PayByLcu",
            tags=tags,
            **protection_args(fleet),
            opts=child,
        )
        self.eip = alicloud.ecs.EipAddress(
            f"{name}-nat-eip",
            address_name=physical(fleet, f"{name}-nat-eip"),
            tags=tags,
            opts=child,
            **eip_args(fleet),
            **protection_args(fleet),
        )
        association = alicloud.ecs.EipAssociation(
            f"{name}-nat-eip-assoc", allocation_id=self.eip.id, instance_id=self.nat.id, instance_type="Nat", opts=child
        )
        for zone, switch in zip(fleet.spec.zones, self.switches):
            alicloud.vpc.SnatEntry(
                f"{name}-snat-{zone}",
                snat_table_id=self.nat.snat_table_ids,
                source_vswitch_id=switch.id,
                snat_ip=self.eip.ip_address,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[association]),
            )
        self.register_outputs({"vpc_id": self.vpc.id})
