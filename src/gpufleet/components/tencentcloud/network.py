"""VPC, one subnet per zone on the fleet's own route table, and a NAT gateway with an EIP as its default route."""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from gpufleet.components.shared_args import NetworkArgs

# Traditional NAT gateway: the bandwidth caps it sells (provider docs of nat.Gateway `bandwidth`).
NAT_BANDWIDTHS_MBPS = (20, 50, 100, 200, 500, 1000, 2000, 5000)
NAT_MAX_CONCURRENT = 1_000_000  # the smallest size; priced as nat/small in cost/data


def nat_bandwidth(mbps: int) -> int:
    """The smallest NAT bandwidth cap that is at least the spec's egress bandwidth."""
    return next(b for b in NAT_BANDWIDTHS_MBPS if b >= mbps)


def eip_args(args: NetworkArgs) -> dict:
    return {
        "internet_charge_type": "TRAFFIC_POSTPAID_BY_HOUR" if args.charge == "traffic" else "BANDWIDTH_POSTPAID_BY_HOUR",
        "internet_max_bandwidth_out": args.bandwidth_mbps,
    }


class Network(pulumi.ComponentResource):
    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:tencentcloud:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        physical, tags = args.names, args.tags
        self.vpc = tencentcloud.vpc.Instance(
            f"{name}-vpc", name=physical(f"{name}-vpc"), cidr_block=args.vpc_cidr, tags=tags, opts=child
        )
        self.route_table = tencentcloud.route.Table(
            f"{name}-rt", name=physical(f"{name}-rt"), vpc_id=self.vpc.id, tags=tags, opts=child
        )
        self.subnets = [
            tencentcloud.subnet.Instance(
                f"{name}-{zone}",
                name=physical(f"{name}-{zone}"),
                vpc_id=self.vpc.id,
                availability_zone=zone,
                cidr_block=cidr,
                route_table_id=self.route_table.id,
                tags=tags,
                opts=child,
            )
            for zone, cidr in zip(args.zones, args.subnets)
        ]
        # NAT gateways and EIPs have no deletion-protection argument in provider v1.82.42 (rules.GAPS): Pulumi protects prod's
        kept = pulumi.ResourceOptions(parent=self, protect=args.prod)
        self.eip = tencentcloud.eip.Instance(
            f"{name}-nat-eip", name=physical(f"{name}-nat-eip"), tags=tags, opts=kept, **eip_args(args)
        )
        self.nat = tencentcloud.nat.Gateway(
            f"{name}-nat",
            name=physical(f"{name}-nat"),
            vpc_id=self.vpc.id,
            assigned_eip_sets=[self.eip.public_ip],
            bandwidth=nat_bandwidth(args.bandwidth_mbps),
            max_concurrent=NAT_MAX_CONCURRENT,
            nat_product_version=1,
            tags=tags,
            opts=kept,
        )
        # One default route for every subnet of the fleet (they share the route table): node egress through the NAT.
        tencentcloud.route.TableEntry(
            f"{name}-default-via-nat",
            route_table_id=self.route_table.id,
            destination_cidr_block="0.0.0.0/0",
            next_type="NAT",
            next_hub=self.nat.id,
            description="node egress through the NAT gateway",
            opts=child,
        )
        self.register_outputs({"vpc_id": self.vpc.id})
