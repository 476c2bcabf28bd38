"""The commitment planner against a worked example done by hand from a fixed public quote, and what the spec can
express. (docs/cost.md's worked example is generated from the shipped catalog: tests/cost/test_docs_examples.py.)"""

import json
from decimal import Decimal

import pytest
import typer
from typer.testing import CliRunner

from gpufleet import plan, validation
from gpufleet.cli import cost as cost_cli
from gpufleet.cost import usage
from gpufleet.finance import commitment

PROD = "alicloud-cn-hangzhou-prod"

# Public points for ecs.gn7i-c8g1.2xlarge (cost/data/quotes-alicloud.yaml): a DescribePrice quote of 2026-09-24,
# 9.74 CNY/h pay-as-you-go and 4,675.66 CNY/month; a 1-year term is 15% off monthly (BSS rule 587).
QUOTE = commitment.Prices(Decimal("9.74"), Decimal("4675.66"), Decimal("4675.66") * Decimal("0.85"), Decimal("3.1"))


def _prod():
    p = plan.for_stack(PROD)
    return p.fleet, p.raw


def test_worked_example_by_hand():
    """The planner's arithmetic on the gn7i DescribePrice quote of 2026-09-24, every number computed by hand (a fixed
    quote, so a catalog refresh does not move it; the docs' example follows the catalog instead)."""
    fleet, raw = _prod()
    p = commitment.make_plan(PROD, fleet.spec, raw, fleet.instance_type.type, QUOTE)
    # schedules: 4 nodes Mon-Fri 01:00-14:00 UTC (5 x 13 h = 65 h a week), 2 nodes otherwise (103 h)
    assert [(n, h.quantize(Decimal("0.01"))) for n, h in p.profile] == [(2, Decimal("447.56")), (4, Decimal("282.44"))]
    assert [(n.hours, n.utilisation) for n in p.nodes] == [
        (Decimal("730.00"), Decimal("1.0000")),
        (Decimal("730.00"), Decimal("1.0000")),
        (Decimal("282.44"), Decimal("0.3869")),
        (Decimal("282.44"), Decimal("0.3869")),
    ]
    assert p.break_even == {"monthly": Decimal("0.6576"), "yearly": Decimal("0.5590")}
    assert [n.choice for n in p.nodes] == ["yearly", "yearly", "payg", "payg"]
    assert [n.cost for n in p.nodes] == [Decimal("3974.31"), Decimal("3974.31"), Decimal("2750.97"), Decimal("2750.97")]
    assert p.monthly_cost == Decimal("13450.56") and p.monthly_cost_without == Decimal("19722.34")
    assert p.upfront == Decimal("95383.46")
    # the stack subscribes replicas.min (2) nodes under a subscription model: the plan is the billing block alone
    assert p.billing_block == {"model": "yearly", "period_months": 12} and p.spec_changes == {"billing": p.billing_block}
    assert not p.cannot
    # the average the planner's week gives is the estimate's (usage.schedule_average)
    avg = sum(n * h for n, h in p.profile) / 730
    same = usage.schedule_average(2, [("0 1 * * 1-5", 4), ("0 14 * * *", 2)])[0]
    assert avg.quantize(Decimal("1e-20")) == same.quantize(Decimal("1e-20"))


def test_a_valid_billing_block_when_more_nodes_than_replicas_min_pay_off():
    fleet, raw = _prod()
    cheap = commitment.Prices(Decimal("10"), Decimal("2000"), Decimal("1700"))  # break-even 23%: every node subscribes
    p = commitment.make_plan(PROD, fleet.spec, raw, fleet.instance_type.type, cheap)
    assert [n.choice for n in p.nodes] == ["yearly"] * 4
    assert p.spec_changes["replicas"]["min"] == 4
    assert all(s["min"] >= 4 for s in p.spec_changes["autoscaling"]["schedules"])
    new = {**raw, **p.spec_changes, "autoscaling": {**raw["autoscaling"], **p.spec_changes["autoscaling"]}}
    assert validation.validate(new, stack=PROD, file="x").spec.billing.model == "yearly"  # the real validator accepts it


def test_nothing_to_subscribe_keeps_pay_as_you_go():
    fleet, raw = _prod()
    dear = commitment.Prices(Decimal("1"), Decimal("1000"), Decimal("900"))  # break-even above 100%
    p = commitment.make_plan(PROD, fleet.spec, raw, fleet.instance_type.type, dear)
    assert not p.subscribed and p.billing_block == {"model": "payg"} and p.upfront == 0


def test_spot_with_subscriptions_is_not_expressible_and_says_the_split():
    fleet, raw = _prod()
    spot_raw = {**raw, "billing": {"model": "spot", "on_demand_base": 2}}
    spot = validation.validate(spot_raw, stack=PROD, file="x")
    p = commitment.make_plan(PROD, spot.spec, spot_raw, fleet.instance_type.type, QUOTE)
    assert p.rest == "spot"
    # against spot 3.1/h: break-even yearly = 3974.311 / (3.1 x 730) = 1.7562 -> no spot node subscribes; the two
    # on-demand base nodes (on_demand_base 2) run 730 h at 9.74 = 7110.20 against 3974.31 yearly -> both subscribe
    assert p.break_even["yearly"] == Decimal("1.7562")
    assert [(n.choice, n.rest_cost) for n in p.nodes[:2]] == [("yearly", Decimal("7110.20"))] * 2
    assert [n.choice for n in p.nodes[2:]] == ["spot", "spot"]
    cheap = commitment.Prices(Decimal("9.74"), Decimal("1500"), Decimal("1400"), Decimal("3.1"))
    p = commitment.make_plan(PROD, spot.spec, spot_raw, fleet.instance_type.type, cheap)
    assert [n.choice for n in p.nodes] == ["yearly", "yearly", "spot", "spot"]
    assert p.billing_block is None and any("one billing model per stack" in c for c in p.cannot)
    assert any(c.startswith("split it") for c in p.cannot)


def test_cli_table_and_json(tmp_path):
    app = typer.Typer()
    cost_cli.register(app)
    r = CliRunner().invoke(app, ["cost", "commit", "--stack", PROD, "--json"])
    assert r.exit_code == 0, r.output
    j = json.loads(r.output)
    assert j["subscribe"] + j["leave"]["nodes"] == 4 and j["break_even_utilisation"]["yearly"]
    r = CliRunner().invoke(app, ["cost", "commit", "--stack", PROD], env={"COLUMNS": "100"})
    assert r.exit_code == 0 and "break-even utilisation" in r.output and "upfront" in r.output
    assert max(len(l) for l in r.output.splitlines()) <= 100


def test_a_schedule_that_depends_on_the_date_is_bad_input():
    from gpufleet.errors import UserError

    fleet, raw = _prod()
    odd = {
        **raw,
        "autoscaling": {**raw["autoscaling"], "schedules": [{"name": "monthly", "cron": "0 1 1 * *", "min": 2, "max": 8}]},
    }
    spec = validation.validate(odd, stack=PROD, file="x").spec
    with pytest.raises(UserError, match="depends on the date"):
        commitment.make_plan(PROD, spec, odd, fleet.instance_type.type, QUOTE)


def test_a_price_spread_gives_a_break_even_range_and_names_the_nodes_it_leaves_open():
    fleet, raw = _prod()
    # pay-as-you-go 10/h stated as 9-11 (a spread); yearly 2000/month exact: break-even 2000/(11 x 730) .. 2000/(9 x 730)
    prices = commitment.Prices(Decimal("10"), None, Decimal("2000"), spreads={"payg": (Decimal("9"), Decimal("11"))})
    assert commitment.break_even_spread(prices, "payg") == {"yearly": (Decimal("0.2491"), Decimal("0.3044"))}
    p = commitment.make_plan(PROD, fleet.spec, raw, fleet.instance_type.type, prices)
    assert p.break_even == {"yearly": Decimal("0.2740")}  # 2000 / 7300
    assert [n.choice for n in p.nodes] == ["yearly"] * 4  # 38.69 % is above even the dearest end (30.44 %)
    assert not any("depends on where" in n for n in p.notes)
    tight = commitment.Prices(Decimal("10"), None, Decimal("2800"), spreads={"payg": (Decimal("9"), Decimal("11"))})
    p = commitment.make_plan(PROD, fleet.spec, raw, fleet.instance_type.type, tight)  # 34.87 %-42.62 %: holds 38.69 %
    assert "node(s) 3, 4: the yearly choice depends on where the prices lie in their spread" in p.notes


def test_a_node_inside_the_break_even_spread_is_not_subscribed():
    """issue 29: subscription only above the break-even under the whole sourced range. With a yearly price of 1700 whose
    spread reaches 3000 against 10/h (break-even 23 %-41 %), the two nodes at 38.7 % stay pay-as-you-go; at a spread
    ending at 2500 (34 %) they subscribe."""
    fleet, raw = _prod()
    wide = commitment.Prices(
        Decimal("10"), Decimal("2000"), Decimal("1700"), spreads={"yearly": (Decimal("1500"), Decimal("3000"))}
    )
    p = commitment.make_plan(PROD, fleet.spec, raw, fleet.instance_type.type, wide)
    assert [n.choice for n in p.nodes] == ["yearly", "yearly", "payg", "payg"]
    assert any("not subscribed" in n and "38.7% <= 41.1%" in n for n in p.notes)
    narrow = commitment.Prices(
        Decimal("10"), Decimal("2000"), Decimal("1700"), spreads={"yearly": (Decimal("1500"), Decimal("2500"))}
    )
    assert [n.choice for n in commitment.make_plan(PROD, fleet.spec, raw, fleet.instance_type.type, narrow).nodes] == [
        "yearly"
    ] * 4


def test_an_hourly_price_of_0_has_no_break_even_and_subscribes_nothing():
    """A pay-as-you-go price of 0 (or a spread reaching 0) was a DivisionByZero: no subscription beats paying nothing."""
    fleet, raw = _prod()
    free = commitment.Prices(
        Decimal("0"), Decimal("2000"), Decimal("1700"), spreads={"yearly": (Decimal("1500"), Decimal("3000"))}
    )
    p = commitment.make_plan(PROD, fleet.spec, raw, fleet.instance_type.type, free)
    assert p.break_even == {} and commitment.break_even_spread(free, "payg") == {}
    assert {n.choice for n in p.nodes} == {"payg"} and p.monthly_cost == 0
    # 10/h whose sourced spread reaches 0: the subscription is not cheaper under the whole range, at any utilisation
    low_0 = commitment.Prices(Decimal("10"), None, Decimal("1700"), spreads={"payg": (Decimal("0"), Decimal("11"))})
    assert commitment.break_even_spread(low_0, "payg") == {"yearly": (Decimal("0.2117"), None)}
    p = commitment.make_plan(PROD, fleet.spec, raw, fleet.instance_type.type, low_0)
    assert {n.choice for n in p.nodes} == {"payg"}
    assert "yearly break-even within the prices' sourced spreads: 21.2%–never" in p.notes
    assert commitment.as_json(p)["break_even_within_spread"] == {"yearly": ["0.2117", None]}
