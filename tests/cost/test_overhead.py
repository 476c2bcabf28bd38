"""issue 29: the overhead scenario table says which usage takes the overhead to 30 % and 50 %; re-pricing the stack
with that usage (through the program's inventory and the catalog) gives that share."""

from decimal import Decimal

import msgspec
import pytest

from gpufleet import plan
from gpufleet.cost import estimate, overhead, usage
from gpufleet.finance import report

STACK = "alicloud-cn-hangzhou-prod"


@pytest.fixture(scope="module")
def priced():
    p = plan.for_stack(STACK)
    u = usage.load(STACK)

    def run(u):
        return estimate.price_inventory(STACK, p.fleet.spec, p.fleet.instance_type.type, p.resources, u, scenarios=False)

    return run, u


@pytest.mark.parametrize("key", ["lb_egress_gb", "nat_egress_gb", "nat_cu_hours"])
def test_the_lever_reaches_the_share_when_priced_again(priced, key):
    run, u = priced
    e = run(u)
    assert e.overhead_share < Decimal("0.30")  # the shipped prod: 18.8 %
    lever = next(v for v in overhead.levers(e) if v.name == overhead.lever_names(e.cloud)[key])
    for share in overhead.SHARES:
        now = getattr(u, key) if getattr(u, key) is not None else (Decimal(730) if key == "nat_cu_hours" else Decimal(0))
        again = run(u.with_keys(**{key: now + lever.needed[share]}))
        assert abs(again.overhead_share - share) < Decimal("0.001"), (key, share, again.overhead_share)


def test_the_table_and_json_show_it(priced):
    run, u = priced
    e = run(u)
    j = report.estimate_json(e)["overhead_scenarios"]
    assert {r["lever"] for r in j} >= set(overhead.LEVERS.values()) | {"data disk size per node (GiB)"}
    disk = next(r for r in j if r["lever"].startswith("data disk"))
    assert Decimal(disk["extra_for_share"]["30%"]) > 0 and disk["now"] == "200"


def test_no_share_while_compute_is_unpriced(priced):
    # an Alibaba A100-40G node (no sourced price) read "overhead share 100.0%" and offered levers toward 30 % / 50 %
    from gpufleet.cost.resources import COMPUTE

    run, u = priced
    e = run(u)
    unpriced = [
        msgspec.structs.replace(l, unit_price=None, monthly_cost=None, price_quality="missing") if l.category == COMPUTE else l
        for l in e.lines
    ]
    e = msgspec.structs.replace(e, lines=unpriced)
    assert e.overhead_share is None and overhead.levers(e) == []
    j = report.estimate_json(e)
    assert j["overhead_share"] is None and j["overhead_scenarios"] == []
    from rich.console import Console

    console = Console(record=True, width=400)
    report.estimate_table(e, console)
    assert "overhead share n/a (compute unpriced)" in console.export_text()
