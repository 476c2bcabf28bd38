"""The stack checks that compare two fields, each at its limit (accepted) and one step past it (refused), on prod's
stack file. Every limit is worked out by hand:

- gateway.read_timeout_s >= load_balancer.request_timeout_s (spec.py: "the gateway would cut requests the load balancer
  still waits for"): 180 passes against 180, 179 does not.
- autoscaling.drain_timeout_s >= health_check.interval_s x unhealthy_threshold + gateway.read_timeout_s (spec.py's
  own figure: "660 = 15 + 600 with a minute to spare"): 5 x 3 + 600 = 615 passes, 614 does not.
- prod on spot keeps billing.on_demand_base >= replicas.min (one reclaim must not take every node): 2 of min 2
  passes, 1 does not.
- prod schedules keep min >= 2 at every hour (as replicas.min): 2 passes, 1 does not.
- prod's replicas.max >= the number of zones (nodes spread over zones): prod's 2 zones with max 2 pass, max 1 is
  below them (refused on fleet.replicas.max by the zone check, besides prod's own replicas.min check).
- network.subnet_prefix leaves a subnet per zone: a /16 cut into /17s is 2 ** (17 - 16) = 2 subnets.
"""

import copy
from pathlib import Path

import pytest

from gpufleet import validation
from gpufleet.errors import UserError
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]


def _raw(**changes) -> dict:
    _, config = loader.read_stack_config("alicloud-cn-hangzhou-prod", ROOT)
    raw = copy.deepcopy(config[loader.CONFIG_KEY])
    for dotted, value in changes.items():
        node = raw
        *parents, leaf = dotted.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return raw


def _problems(raw: dict) -> list[tuple[str, str]]:
    try:
        validation.validate(raw, stack="x", file="stacks/Pulumi.x.yaml")
    except UserError as exc:
        return [(p.path, p.message) for p in exc.problems]
    return []


def _at(raw: dict, path: str) -> list[str]:
    return [m for p, m in _problems(raw) if p == path]


def test_the_gateway_may_wait_exactly_as_long_as_the_load_balancer():
    lb = {"load_balancer__request_timeout_s": 180}
    assert _at(_raw(**lb, serving__gateway__read_timeout_s=180), "fleet.serving.gateway.read_timeout_s") == []
    (why,) = _at(_raw(**lb, serving__gateway__read_timeout_s=179), "fleet.serving.gateway.read_timeout_s")
    assert "179 is below load_balancer.request_timeout_s (180)" in why


def test_the_drain_timeout_covers_detection_and_the_longest_read():
    base = {"serving__gateway__read_timeout_s": 600}
    assert _at(_raw(**base, autoscaling__drain_timeout_s=615), "fleet.autoscaling.drain_timeout_s") == []
    (why,) = _at(_raw(**base, autoscaling__drain_timeout_s=614), "fleet.autoscaling.drain_timeout_s")
    assert "at least 615" in why


def test_prod_on_spot_keeps_replicas_min_on_demand():
    at_min = _raw(billing={"model": "spot", "on_demand_base": 2})
    assert _at(at_min, "fleet.billing.on_demand_base") == []
    (why,) = _at(_raw(billing={"model": "spot", "on_demand_base": 1}), "fleet.billing.on_demand_base")
    assert "at least replicas.min (2)" in why


def test_prod_schedules_keep_two_nodes():
    raw = _raw()
    raw["autoscaling"]["schedules"][0]["min"] = 2
    assert _at(raw, "fleet.autoscaling.schedules.0.min") == []
    raw["autoscaling"]["schedules"][0]["min"] = 1
    assert _at(raw, "fleet.autoscaling.schedules.0.min") == ["prod keeps at least 2 nodes at every hour"]


@pytest.mark.parametrize("most, refused", [(2, False), (1, True)])
def test_prod_replicas_max_reaches_every_zone(most, refused):
    raw = _raw()
    assert len(raw["zones"]) == 2
    raw["replicas"] = {"min": min(2, most), "max": most, "desired": min(2, most)}
    raw["autoscaling"]["schedules"] = []
    said = [m for m in _at(raw, "fleet.replicas.max") if "number of zones" in m]
    assert said == (["is below the number of zones (2); nodes cannot spread"] if refused else [])


def test_three_zones_need_three_subnets_of_the_vpc():
    """A /16 VPC cut into /17s holds 2 ** (17 - 16) = 2 subnets, too few for 3 zones; /18s hold 4."""
    zones = ["cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j"]
    two = _raw(zones=zones, network__vpc_cidr="10.20.0.0/16", network__subnet_prefix=17)
    assert _at(two, "fleet.network.subnet_prefix") == ["/17 gives 2 subnets; 3 zones need more"]
    four = _raw(zones=zones, network__vpc_cidr="10.20.0.0/16", network__subnet_prefix=18)
    assert _at(four, "fleet.network.subnet_prefix") == []
