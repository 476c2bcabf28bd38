"""Shipped stacks priced by hand (the catalog's unit prices, the preview's resources, 730 h a month), each expected
figure worked out below without gpufleet's cost code."""

from decimal import Decimal

from gpufleet import plan
from gpufleet.cost import estimate, usage
from gpufleet.validation import load_fleet


def _estimate(stack):
    fleet = load_fleet(stack)
    inv = plan.for_stack(stack).resources
    return estimate.price_inventory(fleet.stack, fleet.spec, fleet.instance_type.type, inv, usage.load(fleet.stack))


def _cost(est, component_start):
    return next(l for l in est.lines if l.component.startswith(component_start)).monthly_cost


def test_the_schedules_average_is_priced_unrounded():
    # Both prod stacks: 4 nodes Mon-Fri 01:00-14:00 UTC (5 x 13 = 65 h a week), 2 nodes the other 103 h:
    # (65 x 4 + 103 x 2) / 168 = 466 / 168 = 2.773809... nodes; x 730 h = 2024.8810 node-hours a month
    # (2.7738 x 730 = 2024.874 was 0.0071 h short).
    #
    # alicloud-cn-hangzhou-prod (catalog cn-hangzhou, usage cost/usage/alicloud-cn-hangzhou-prod.yaml):
    #   GPU        2024.8810 h x 9.53                = 19297.12  (was 19297.05)
    #   system     2024.8810 h x 100 GiB x 0.0010    =   202.49
    #   data       2024.8810 h x 200 GiB x 0.0021    =   850.45
    #   snapshot   100 GiB x 0.12                    =    12.00
    #   CLB        730 x 0.147 + 500 GB x 0.80 + 730 x 0.02 = 107.31 + 400.00 + 14.60
    #   EIP        730 x 0.02 + 50 GB x 0.80         =    14.60 + 40.00
    #   NAT        730 x 0.23 + 730 CU-h x 0.23      =   167.90 + 167.90
    #   KMS        2499.00
    #   total of the rounded lines                   = 23773.37  (was 23773.30)
    ali = _estimate("alicloud-cn-hangzhou-prod")
    assert _cost(ali, "autoscaled node ecs.gn7i-c8g1.2xlarge") == Decimal("19297.12")
    assert _cost(ali, "system disk") == Decimal("202.49") and _cost(ali, "data disk 1") == Decimal("850.45")
    assert ali.monthly_total == Decimal("23773.37")
    # tencentcloud-ap-guangzhou-prod (catalog ap-guangzhou, no usage file):
    #   GPU        2024.8810 h x 9.20                = 18628.90  (was 18628.84)
    #   system     2024.8810 h x 100 GiB x 0.000553  =   111.98
    #   data       2024.8810 h x 200 GiB x 0.001659  =   671.86  (was 671.85)
    #   snapshot 100 x 0.1023 = 10.23; CLB 730 x 0.1581 = 115.41; NAT small 730 x 0.5 = 365.00;
    #   SSM 2.21 + 0.28; SCF package 10.09; bound EIP 0.00
    #   total of the rounded lines                   = 19915.96  (was 19915.89)
    tc = _estimate("tencentcloud-ap-guangzhou-prod")
    assert _cost(tc, "autoscaled node GNV4.3XLARGE44") == Decimal("18628.90")
    assert _cost(tc, "data disk 1") == Decimal("671.86")
    assert tc.monthly_total == Decimal("19915.96")
    # printed averages stay at 4 decimals
    assert tc.scenarios["average"].how.startswith("2.7738 nodes on average")


def test_one_image_one_snapshot_in_a_spot_fleet_with_an_on_demand_base():
    # tencentcloud-ap-guangzhou-prod as spot (cost compare's option: prod keeps replicas.min = 2 on demand): the program
    # declares two scaling configs (the base group's and the spot group's), both booting img-placeholder-cuda13-gz.
    # One image is one snapshot (100 GiB system disk as the upper bound x 0.1023 = 10.23), not two (20.46).
    # By hand (catalog ap-guangzhou, week average 466/168 nodes: 2 on demand, 0.773809... spot):
    #   base GPU   2 x 730 h x 9.20                          = 13432.00
    #   base disks 1460 h x (100 x 0.000553 + 200 x 0.001659) =    80.74 + 484.43
    #   spot GPU   0.773809 x 730 = 564.8810 h x 1.84        =  1039.38
    #   spot disks 564.8810 h x 100 x 0.000553, x 200 x 0.001659 = 31.24 + 187.43
    #   snapshot 10.23; CLB 115.41; NAT 365.00; SSM 2.21 + 0.28; SCF 10.09; bound EIP 0.00
    #   total                                                = 15758.44  (was 15768.67 with the second snapshot)
    from gpufleet.finance import compare

    fleet = load_fleet("tencentcloud-ap-guangzhou-prod")
    new = compare.redeclare(plan.for_stack(fleet.stack).raw, fleet, "tencentcloud", "spot")[0]
    option = plan.for_spec(new, fleet.stack, file="x")
    inv = option.resources
    assert len([r for r in inv if r["type"] == "tencentcloud:As/scalingConfig:ScalingConfig"]) == 2
    e = estimate.price_inventory(fleet.stack, option.fleet.spec, option.fleet.instance_type.type, inv, usage.Usage())
    snaps = [l for l in e.lines if l.component.startswith("image snapshot")]
    assert [l.monthly_cost for l in snaps] == [Decimal("10.23")]
    assert e.monthly_total == Decimal("15758.44")


def test_alibaba_spot_nodes_are_priced_over_the_pools_ess_spreads_them_on():
    # alicloud-cn-hangzhou-prod as spot (cost compare's option: on-demand base 2 = replicas.min): the configuration
    # offers the three cn-hangzhou A10 types and the group sets spot_instance_pools 3, and ESS "creates spot instances in
    # a balanced manner across the specified number of lowest-cost instance types" (CreateScalingGroup SpotInstancePools,
    # alibabacloud_ess20220222 1.13.3): a third of the spot hours on each, not all at the spec's type.
    # By hand (week average 466/168 nodes: 2 on demand, 0.773809... spot = 564.8810 h a month):
    #   spot  188.2937 h x 3.1000 (gn7i-c8g1.2xlarge)  =  583.71
    #         188.2937 h x 2.4000 (gn7i-c16g1.4xlarge) =  451.90
    #         188.2937 h x 4.3279 (gn7i-c32g1.8xlarge) =  814.92   (1850.53; at 3.10 alone it was 1751.13)
    from gpufleet.finance import compare

    fleet = load_fleet("alicloud-cn-hangzhou-prod")
    new = compare.redeclare(plan.for_stack(fleet.stack).raw, fleet, "alicloud", "spot")[0]
    option = plan.for_spec(new, fleet.stack, file="x")
    e = estimate.price_inventory(fleet.stack, option.fleet.spec, option.fleet.instance_type.type, option.resources, usage.Usage())
    spot = {l.component: l.monthly_cost for l in e.lines if l.billing == "spot"}
    assert spot == {
        "autoscaled node, spot part ecs.gn7i-c8g1.2xlarge (spot)": Decimal("583.71"),
        "autoscaled node, spot part ecs.gn7i-c16g1.4xlarge (spot)": Decimal("451.90"),
        "autoscaled node, spot part ecs.gn7i-c32g1.8xlarge (spot)": Decimal("814.92"),
    }
    on_demand = [l for l in e.lines if l.component.startswith("autoscaled node, on-demand part")]
    assert [(l.component, l.monthly_cost) for l in on_demand] == [
        ("autoscaled node, on-demand part ecs.gn7i-c8g1.2xlarge (payg)", Decimal("13913.80"))  # 2 x 730 h x 9.53
    ]
    # reclaimed, a spot node of any pool is replaced on demand by the cheapest type per instance (ESS compares prices
    # per instance by default, PriceComparisonMode PricePerUnit): the 564.8810 spot hours at 9.53 = 5383.32 instead of
    # the three spot lines' 1850.53, +3532.79 (each pool replaced by its own type on demand, 9.53, 10.0905 and 13.3047, made it +4349.08)
    assert e.scenarios["spot_fallback"].total.value - e.monthly_total == Decimal("3532.79")


def test_fewer_spot_pools_than_types_are_the_cheapest_by_spot_price():
    from gpufleet.components.alicloud import pricing
    from gpufleet.cost.resources import PricingContext

    ctx = PricingContext("alicloud", "cn-hangzhou", usage.Usage(), Decimal(1), [])
    types = ["ecs.gn7i-c8g1.2xlarge", "ecs.gn7i-c16g1.4xlarge", "ecs.gn7i-c32g1.8xlarge"]  # spot 3.10, 2.40, 4.3279
    assert pricing._spot_pool({"instanceTypes": types}, {"spotInstancePools": 2.0}, ctx) == (types[1], types[0])
    assert pricing._spot_pool({"instanceTypes": types}, {"spotInstancePools": 3.0}, ctx) == tuple(types)
