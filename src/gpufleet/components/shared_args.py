"""The component arguments every cloud's components take alike, and their builders from the Fleet: the network and the
alarms read the same spec fields on both clouds (each cloud's program builds the rest of its `…Args` itself)."""

from __future__ import annotations

from msgspec import Struct

from gpufleet import naming
from gpufleet.naming import Names
from gpufleet.stacks.loader import Fleet
from gpufleet.stacks.spec import Alarms as AlarmsSpec


class NetworkArgs(Struct, frozen=True):
    """What a cloud's network uses (built by network_args)."""

    names: Names
    vpc_cidr: str
    zones: tuple[str, ...]
    subnets: tuple[str, ...]  # one CIDR per zone
    bandwidth_mbps: int  # the NAT EIP's
    charge: str  # the NAT EIP's: "traffic" or "bandwidth"
    prod: bool  # deletion protection / Pulumi protect of prod's NAT gateway and EIP
    tags: dict[str, str]


class AlarmsArgs(Struct, frozen=True):
    """What a cloud's alarms use (built by alarms_args)."""

    names: Names
    alarms: AlarmsSpec  # thresholds and the contact group
    fleet_tag: str  # the value of the gpufleet:fleet tag every node carries (naming.base)


def network_args(fleet: Fleet, tags: dict[str, str]) -> NetworkArgs:
    spec = fleet.spec
    return NetworkArgs(
        names=naming.names(fleet),
        vpc_cidr=spec.network.vpc_cidr,
        zones=tuple(spec.zones),
        subnets=tuple(fleet.subnets),
        bandwidth_mbps=spec.egress.bandwidth_mbps,
        charge=spec.egress.charge,
        prod=spec.environment == "prod",
        tags=tags,
    )


def alarms_args(fleet: Fleet) -> AlarmsArgs:
    return AlarmsArgs(names=naming.names(fleet), alarms=fleet.spec.alarms, fleet_tag=naming.base(fleet.spec))
