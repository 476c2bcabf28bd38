"""VPC, one vSwitch per zone, and an enhanced Internet NAT gateway with an EIP and SNAT per vSwitch."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.components.shared_args import NetworkArgs


def eip_args(args: NetworkArgs) -> dict:
    return {
        "bandwidth": str(args.bandwidth_mbps),
        "internet_charge_type": "PayByTraffic" if args.charge == "traffic" else "PayByBandwidth",
        "payment_type": "PayAsYouGo",
    }


def protection_args(args: NetworkArgs) -> dict:
    """Prod's NAT gateway and EIP refuse deletion (deletion_protection on vpc.NatGateway and ecs.EipAddress)."""
    return {"deletion_protection": args.prod}


class Network(pulumi.ComponentResource):
    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:alicloud:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        physical, tags = args.names, args.tags
        self.vpc = alicloud.vpc.Network(
            f"{name}-vpc", vpc_name=physical(f"{name}-vpc"), cidr_block=args.vpc_cidr, tags=tags, opts=child
        )
        self.switches = [
            alicloud.vpc.Switch(
                f"{name}-{zone}",
                vswitch_name=physical(f"{name}-{zone}"),
                vpc_id=self.vpc.id,
                cidr_block=cidr,
                zone_id=zone,
                tags=tags,
                opts=child,
            )
            for zone, cidr in zip(args.zones, args.subnets)
        ]
        self.nat = alicloud.vpc.NatGateway(
            f"{name}-nat",
            nat_gateway_name=physical(f"{name}-nat"),
            vpc_id=self.vpc.id,
            vswitch_id=self.switches[0].id,
            nat_type="Enhanced",
            network_type="internet",
            payment_type="PayAsYouGo",
            internet_charge_type="PayByLcu",
            tags=tags,
            **protection_args(args),
            opts=child,
        )
        self.eip = alicloud.ecs.EipAddress(
            f"{name}-nat-eip",
            address_name=physical(f"{name}-nat-eip"),
            tags=tags,
            opts=child,
            **eip_args(args),
            **protection_args(args),
        )
        association = alicloud.ecs.EipAssociation(
            f"{name}-nat-eip-assoc", allocation_id=self.eip.id, instance_id=self.nat.id, instance_type="Nat", opts=child
        )
        for zone, switch in zip(args.zones, self.switches):
            alicloud.vpc.SnatEntry(
                f"{name}-snat-{zone}",
                snat_table_id=self.nat.snat_table_ids,
                source_vswitch_id=switch.id,
                snat_ip=self.eip.ip_address,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[association]),
            )
        self.register_outputs({"vpc_id": self.vpc.id})
