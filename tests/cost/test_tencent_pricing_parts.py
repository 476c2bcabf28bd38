"""Tencent pricing rules by hand: the on-demand base group of a spot fleet (components/tencentcloud/pricing.py
_tc_nodes) and the subscription bandwidth tiers (_tc_bandwidth)."""

from decimal import Decimal

import pytest

from gpufleet.components.tencentcloud import pricing
from gpufleet.cost.resources import PricingContext
from gpufleet.cost.usage import Usage

GROUP = "tencentcloud:As/scalingGroup:ScalingGroup"


def _fleet(average: str) -> tuple[PricingContext, dict, dict]:
    """A spot fleet over an on-demand base of 3 (docs/scaling.md "Spot over an on-demand base", Tencent: a second AS
    group of exactly `on_demand_base` pay-as-you-go nodes): the base group min = max = 3, the spot group 0-8."""
    base_cfg = {"type": "tencentcloud:As/scalingConfig:ScalingConfig", "name": "llm-base-cfg", "inputs": {}}
    spot_cfg = {"type": "tencentcloud:As/scalingConfig:ScalingConfig", "name": "llm-spot-cfg", "inputs": {}}
    groups = [
        {
            "type": GROUP,
            "name": "llm-base-group",
            "inputs": {"configurationId": "llm-base-cfg_id", "minSize": 3, "maxSize": 3, "desiredCapacity": 3},
        },
        {
            "type": GROUP,
            "name": "llm-spot-group",
            "inputs": {"configurationId": "llm-spot-cfg_id", "minSize": 0, "maxSize": 8, "desiredCapacity": 0},
        },
    ]
    ctx = PricingContext("tencentcloud", "ap-guangzhou", Usage(), Decimal(average), [base_cfg, spot_cfg, *groups])
    return ctx, base_cfg, spot_cfg


@pytest.mark.parametrize(
    ("average", "base", "spot"),
    [
        ("5", "3", "2"),  # above the base: the base group its 3, the spot group the other 2
        ("2.5", "2.5", "0"),  # below the base (a fleet average under 3): the base group runs it all, the spot group none
    ],
)
def test_the_on_demand_base_group_runs_its_size_while_the_fleet_average_allows(average, base, spot):
    """_tc_nodes: "A fixed-size group ... runs its size while the fleet average allows; the other group runs the rest":
    the base group min(average, 3), the spot group the rest, never a negative count (no negative node-hours)."""
    ctx, base_cfg, spot_cfg = _fleet(average)
    base_nodes, _ = pricing._tc_nodes(ctx, base_cfg, 0)
    spot_nodes, _ = pricing._tc_nodes(ctx, spot_cfg, 0)
    assert (base_nodes, spot_nodes) == (Decimal(base), Decimal(spot))
    assert base_nodes + spot_nodes == Decimal(average)


@pytest.mark.parametrize(
    ("mbps", "tiers"),
    [
        (1, {"le_2": 1}),
        (5, {"le_2": 2, "from_2_to_5": 3}),
        (10, {"le_2": 2, "from_2_to_5": 3, "over_5": 5}),
    ],
)
def test_subscription_bandwidth_is_charged_by_the_part_in_each_tier(mbps, tiers):
    """tencentyun/qcloud-documents 购买公网网络/独享型公网网络计费.md (the price rows' source): a monthly bandwidth's
    ≦ 2 Mbps part at 20 CNY/Mbps/month, the part > 2 and ≦ 5 at 25, the part > 5 at 90; its own example: 5 Mbps a
    month costs 20 x 2 + 25 x 3 = 115 CNY."""
    comps = pricing._tc_bandwidth(mbps, True, "EIP")
    assert {c.price_key.removeprefix("net/subscription_"): c.monthly_quantity for c in comps} == {
        k: Decimal(v) for k, v in tiers.items()
    }
    price = {"le_2": 20, "from_2_to_5": 25, "over_5": 90}
    total = sum(price[c.price_key.removeprefix("net/subscription_")] * c.monthly_quantity for c in comps)
    assert total == {1: 20, 5: 115, 10: 115 + 5 * 90}[mbps]
