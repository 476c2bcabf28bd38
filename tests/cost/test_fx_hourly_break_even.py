"""A converted estimate's hourly break-even price keeps the precision of a unit price, not cents.

cost/fx.py: every money figure is divided by the rate; unit prices (an hourly price is one) keep 6 places, monthly
money 2. By hand, prod's ecs.gn7i-c8g1.2xlarge at 9.53 CNY/h (its catalog payg row) at 7.12 CNY/USD:
9.53 / 7.12 = 1.338483146... -> 1.338483 USD/h, the same as the node line's converted unit price; rounded to cents
(1.34) it would be 0.11 % off and disagree with the line. The full month, 6956.90 / 7.12 = 977.0927 -> 977.09.
"""

from decimal import Decimal

from gpufleet.cost import fx
from gpufleet.finance.stack import stack_estimate


def test_the_hourly_price_is_converted_to_six_places_and_the_month_to_cents():
    _, e = stack_estimate("alicloud-cn-hangzhou-prod")
    assert e.break_even["payg_hourly"] == Decimal("9.53")
    usd = fx.convert(e, fx.parse("USD", "7.12@2026-12-01"))
    assert usd.break_even["payg_hourly"] == Decimal("1.338483")
    assert usd.break_even["payg_full_month"] == Decimal("977.09")
    node = next(l for l in usd.lines if l.price_key == "instance/ecs.gn7i-c8g1.2xlarge" and l.billing == "payg")
    assert node.unit_price == usd.break_even["payg_hourly"]
