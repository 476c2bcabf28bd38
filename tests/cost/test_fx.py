"""issue 29: --currency USD --fx RATE@DATE converts every figure at the user's dated rate and labels it."""

import json
from decimal import Decimal

import pytest
import typer
from typer.testing import CliRunner

from gpufleet.cli import cost as cost_cli
from gpufleet.cost import fx
from gpufleet.errors import UserError


def run(*args):
    app = typer.Typer()
    cost_cli.register(app)
    return CliRunner().invoke(app, ["cost", *args])


def test_every_figure_converted_and_labelled():
    cny = json.loads(run("estimate", "-s", "tencentcloud-ap-guangzhou-prod", "--json").output)
    usd = json.loads(
        run("estimate", "-s", "tencentcloud-ap-guangzhou-prod", "--json", "--currency", "USD", "--fx", "7.12@2026-12-01").output
    )
    assert usd["currency"] == "USD (converted from CNY at 7.12 CNY/USD, 2026-12-01)"
    for a, b in zip(cny["lines"], usd["lines"]):
        if a["monthly_cost"] is not None:
            assert Decimal(b["monthly_cost"]) == (Decimal(a["monthly_cost"]) / Decimal("7.12")).quantize(Decimal("0.01"))
        assert "converted at 7.12 CNY/USD (2026-12-01)" in b["note"]
    assert Decimal(usd["monthly_total"]) == sum(Decimal(l["monthly_cost"]) for l in usd["lines"] if l["monthly_cost"])
    # a CNY price derived from a USD list price says the converted figure is not that list price
    clb = next(l for l in usd["lines"] if l["component"] == "CLB instance fee")
    assert "this is not that list price" in clb["note"] and "0.686 USD/day" in clb["derivation"]
    assert any("the rate is the user's (--fx)" in a for a in usd["assumptions"])


@pytest.mark.parametrize(
    "currency,rate,message",
    [
        ("USD", None, "no sourced, dated rate ships"),
        ("USD", "7.12", "RATE@YYYY-MM-DD"),
        ("USD", "0@2026-12-01", "from 0.01 to 1000"),
        # a tiny rate overflowed the conversion (decimal.InvalidOperation traceback); a huge one made every figure 0.00
        ("USD", "0.0000000000000000000000000000000001@2026-12-01", "from 0.01 to 1000"),
        ("USD", "999999999999999999999999999999999999999@2026-12-01", "from 0.01 to 1000"),
        # --fx was silently ignored when --currency named the catalog's own currency
        ("CNY", "7.12@2026-12-01", "not used with --currency CNY"),
        ("USD", "7.12@2099-01-01", "2099-01-01 is after today"),  # was accepted, every figure labelled as of 2099
        ("EUR", "7@2026-12-01", "unknown currency"),
        (None, "7.12@2026-12-01", "give --currency too"),
    ],
)
def test_bad_rates_are_refused(currency, rate, message):
    with pytest.raises(UserError) as exc:
        fx.parse(currency, rate)
    assert message in str(exc.value)


@pytest.mark.parametrize("rate", ["7.12@2026-12-01", "1000@2026-12-01"])
def test_a_conversion_keeps_every_range_around_its_figure_and_every_usage_figure(rate):
    """A review found an exact quote (the data disk) given a range once converted (149.58 (149.51-149.51)), a low
    above its figure, and the overhead levers' GB and GiB moving with the rate (4742.43 GB in CNY, 4751.79 at 1000):
    the converted unit price (6 places) times the rounded quantity made the ends, and the levers ran on converted money."""
    args = ("estimate", "-s", "alicloud-cn-hangzhou-prod", "--json")
    cny = json.loads(run(*args).output)
    usd = json.loads(run(*args, "--currency", "USD", "--fx", rate).output)
    for line in usd["lines"]:
        if line["monthly_cost"] is None:
            continue
        low, cost, high = (Decimal(line[k]) for k in ("low", "monthly_cost", "high"))
        assert low <= cost <= high, line["component"]
        if line["unit_price_low"] == line["unit_price"] == line["unit_price_high"]:
            assert low == cost == high, line["component"]
    assert [v["extra_for_share"] for v in usd["overhead_scenarios"]] == [v["extra_for_share"] for v in cny["overhead_scenarios"]]
