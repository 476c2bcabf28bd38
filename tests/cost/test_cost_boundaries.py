"""Cost arithmetic at its edges: a discount on the whole spread of a price, ties and touching ranges in the ranking,
the commitment planner and the decision's confidence, a spot group running fewer nodes than its on-demand base.
Every expected figure is worked by hand in the test from the catalog row, the module doc or the vendor's document."""

import copy
from decimal import Decimal

from gpufleet import plan
from gpufleet.cost import decision, estimate, usage
from gpufleet.cost.estimate import Estimate, Line, money
from gpufleet.finance import commitment, compare
from gpufleet.finance.compare import Option


def _line(est, component_start):
    return next(l for l in est.lines if l.component.startswith(component_start))


def line(cost, low=None, high=None):
    """One priced line of quantity 1 whose unit price has the spread low-high (the cost itself when not given)."""
    c = Decimal(cost)
    spread = {"price_low": Decimal(low or cost), "price_high": Decimal(high or cost)}
    return Line("t", "r", "node", "month", Decimal(1), c, c, "gpu_compute", "estimate", "instance/x", "payg", "src", "", **spread)


def option(billing, *lines):
    e = Estimate("s", "alicloud", "cn-hangzhou", "x", billing, "CNY", "2026-01-01", "2026-01-01", list(lines), [], [])
    return Option("alicloud", "cn-hangzhou", "x", billing, [], e)


def test_a_discount_scales_the_whole_spread_of_the_price(tmp_path, ali_inventory, prod_fleet):
    """cost/data/alicloud-cn-hangzhou.yaml, instance/ecs.gn7i-c8g1.2xlarge payg: 9.53 CNY/h with a +/-10 % spread stated
    in its derivation, low 9.53 x 0.9 = 8.577 and high 9.53 x 1.1 = 10.483. A 0.8 contract discount applies to the
    price, so to both ends of its spread as well: 6.8616 and 8.3864."""
    f = tmp_path / "d.yaml"
    f.write_text("discounts:\n  - {match: 'instance/*', billing: payg, factor: 0.8, note: 'contract 2026'}\n")
    e = estimate.price_inventory(
        prod_fleet.stack, prod_fleet.spec, "ecs.gn7i-c8g1.2xlarge", ali_inventory, usage.Usage(), estimate.load_discounts(str(f))
    )
    node = _line(e, "autoscaled node")
    assert node.unit_price == Decimal("9.53") * Decimal("0.8") == Decimal("7.624")
    assert node.price_low == Decimal("8.5770") * Decimal("0.8") == Decimal("6.8616")
    assert node.price_high == Decimal("10.4830") * Decimal("0.8") == Decimal("8.3864")
    assert node.low <= node.monthly_cost <= node.high  # the module's invariant, on the discounted line
    assert e.total.low <= e.total.value <= e.total.high


def test_equal_totals_are_not_ranked():
    """rank's doc: options are "ranked only where the order is certain". Two totals of exactly 100 have no order."""
    ranks = compare.rank([option("payg", line("100")), option("monthly", line("100"))])
    assert [r.rank for r in ranks] == [None, None]
    assert all(r.why.startswith("overlaps ") for r in ranks)


def test_ranges_that_touch_are_not_ranked():
    """90-110 against 110-130: at 110 both options can cost the same, so neither is certainly cheaper."""
    ranks = compare.rank(
        [option("payg", line("100", low="90", high="110")), option("monthly", line("120", low="110", high="130"))]
    )
    assert [r.rank for r in ranks] == [None, None]
    assert ranks[0].why == "overlaps alicloud cn-hangzhou monthly: not ranked"
    assert ranks[1].why == "overlaps alicloud cn-hangzhou payg: not ranked"
    apart = compare.rank([option("payg", line("100", low="90", high="109.99")), option("monthly", line("120", low="110"))])
    assert [r.rank for r in apart] == [1, 2]  # a cent apart: certain


def test_a_subscription_that_only_ties_with_pay_as_you_go_is_not_bought():
    """730 h x 10/h = 7300.00, the same as a 7300 monthly subscription: plan_nodes' rule "a tie stays uncommitted"
    (and break_even_utilisation's "a tie stays hourly"). One cent cheaper, and the subscription wins."""
    tie = commitment.Prices(Decimal("10"), Decimal("7300"), None)
    (node,), _ = commitment.plan_nodes([(1, Decimal(730))], tie, "payg")
    assert (node.choice, node.cost, node.rest_cost) == ("payg", Decimal("7300.00"), Decimal("7300.00"))
    cheaper = commitment.Prices(Decimal("10"), Decimal("7299.99"), None)
    (node,), _ = commitment.plan_nodes([(1, Decimal(730))], cheaper, "payg")
    assert (node.choice, node.cost) == ("monthly", Decimal("7299.99"))


def test_likely_when_only_one_sides_central_lies_outside_the_other_range():
    """decision.py rule 4: `likely` when the central margin is positive and ONE side's central lies outside the other's
    range. A = 100 (80-150), B = 120 (110-125): A's 100 is below B's 110-125, B's 120 is inside A's 80-150."""

    def side(value, low, high):
        return decision.Side(Decimal(value), Decimal(low), Decimal(high), lines=1)

    assert decision.confidence(side("100", "80", "150"), side("120", "110", "125")) == "likely"
    # the other way round: B's 120 is above A's 95-105, A's 100 is inside B's 90-130
    assert decision.confidence(side("100", "95", "105"), side("120", "90", "130")) == "likely"


def test_a_spot_group_below_its_on_demand_base_is_all_on_demand(ali_inventory, prod_fleet):
    """alicloud ess_scaling_group.html.markdown, on_demand_base_capacity: the group creates pay-as-you-go instances
    first until the base is reached. An average of 1.5 nodes under a base of 2 is 1.5 on-demand nodes and no spot
    node (1.5 x 730 h = 1095 h a month), never a negative spot quantity."""
    inv = copy.deepcopy(ali_inventory)
    group = next(r for r in inv if r["type"] == "alicloud:ess/scalingGroup:ScalingGroup")
    group["inputs"].update(onDemandBaseCapacity=2, onDemandPercentageAboveBaseCapacity=50)
    config = next(r for r in inv if r["type"].endswith("ScalingConfiguration"))
    config["inputs"]["spotStrategy"] = "SpotAsPriceGo"
    e = estimate.price_inventory(
        prod_fleet.stack, prod_fleet.spec, "ecs.gn7i-c8g1.2xlarge", inv, usage.Usage.of(replicas_average=Decimal("1.5"))
    )
    assert all(l.monthly_quantity is None or l.monthly_quantity >= 0 for l in e.lines)
    node = [l for l in e.lines if l.component.startswith("autoscaled node") and l.category == "gpu_compute"]
    assert [(l.billing, l.monthly_quantity) for l in node if l.monthly_quantity] == [("payg", Decimal("1095.0000"))]


def test_an_eip_paid_by_bandwidth_above_5_mbps_charges_the_higher_rate_on_the_part_above_5():
    """AlibabaCloudDocs/eip 产品定价/按量计费.md (the catalog rows' source), pay by fixed bandwidth above 5 Mbps:
    "1~5 Mbps的带宽单价 x 天 x 5 + 大于5 Mbps的带宽单价 x 天 x (n-5)". cost/data/alicloud-cn-hangzhou.yaml:
    configuration 0.48 CNY/day, eip/bandwidth_1_5 0.96 and eip/bandwidth_over_5 3.36 CNY/Mbps-day. Prod's NAT EIP
    declared at 10 Mbps by bandwidth, over a 730-hour month
    (730 / 24 = 30.4167 days): configuration 0.48 x 30.4167 = 14.60; the first 5 Mbps 0.96 x 5 x 30.4167 = 146.00;
    the 5 above them 3.36 x 5 x 30.4167 = 511.00 (not 3.36 x 10 x 30.4167 = 1022.00)."""
    raw = copy.deepcopy(plan.for_stack("alicloud-cn-hangzhou-prod").raw)
    raw["egress"] = {"charge": "bandwidth", "bandwidth_mbps": 10}
    p = plan.for_spec(raw, "alicloud-cn-hangzhou-prod", "x")
    e = estimate.price_inventory(p.fleet.stack, p.fleet.spec, "ecs.gn7i-c8g1.2xlarge", p.resources, usage.Usage())
    eip = {l.component: l for l in e.lines if l.resource_name.endswith("nat-eip")}
    config = eip["EIP configuration fee (by bandwidth)"]
    first = eip["EIP bandwidth 1-5 Mbps"]
    above = eip["EIP bandwidth 5 Mbps above 5"]
    days = Decimal(730) / 24
    assert (money(above.monthly_quantity), above.unit_price) == (money(days * 5), Decimal("3.36"))  # 152.08 Mbps-day
    assert (money(first.monthly_quantity), first.unit_price) == (money(days * 5), Decimal("0.96"))
    assert (money(config.monthly_cost), money(first.monthly_cost), money(above.monthly_cost)) == (
        Decimal("14.60"),
        Decimal("146.00"),
        Decimal("511.00"),
    )
