"""The A100 missing-price case on a fixture catalog WITHOUT the A100 rows (tests/cost/fixtures/catalog-no-a100), never
on the shipped data (which may gain the price): the node line keeps its place, is unpriced, and is named as such."""

import copy
from decimal import Decimal
from pathlib import Path

from gpufleet.cost import catalog, estimate
from gpufleet.cost.usage import Usage

NO_A100 = Path(__file__).parent / "fixtures" / "catalog-no-a100"
A100 = "ecs.gn7-c12g1.3xlarge"


def test_the_fixture_has_no_a100_row_but_the_a10_rows():
    cat = catalog.load("alicloud", "cn-hangzhou", NO_A100)
    assert not [k for k in cat.rows if k[0].startswith("instance/ecs.gn7-")]
    assert cat.get("instance/ecs.gn7i-c8g1.2xlarge", "payg").price == Decimal("9.53")


def _priced(inv, fleet, itype):
    return estimate.price_inventory(
        fleet.stack, fleet.spec, itype, inv, Usage.of(lb_egress_gb=Decimal(500), model_bucket_gb=Decimal(40)), data=NO_A100
    )


def test_an_a100_node_without_a_price_is_an_unpriced_line_not_zero(ali_inventory, prod_fleet):
    inv = copy.deepcopy(ali_inventory)
    for r in inv:
        if r["type"] == "alicloud:ess/scalingConfiguration:ScalingConfiguration":
            r["inputs"]["instanceType"] = A100
    a100 = _priced(inv, prod_fleet, A100)
    node = next(l for l in a100.lines if l.component.startswith(f"autoscaled node {A100}"))
    assert (node.unit_price, node.monthly_cost, node.price_quality) == (None, None, "missing")
    assert f"no catalog row instance/{A100} (payg)" in node.note
    assert node in a100.unpriced
    a10 = _priced(ali_inventory, prod_fleet, "ecs.gn7i-c8g1.2xlarge")
    # the A100 total lacks exactly the node line (the disks and the rest are priced the same): a lower total that
    # is NOT a saving, which is why totals with unpriced lines must not be compared as if complete
    a10_node = next(l for l in a10.lines if l.component.startswith("autoscaled node ecs.gn7i"))
    assert a10.monthly_total - a100.monthly_total == a10_node.monthly_cost
    assert not [l for l in a10.lines if l.monthly_cost is None and l.category == "gpu_compute"]
