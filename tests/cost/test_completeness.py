"""Nothing missing is ever zero: unpriced lines make totals lower bounds; spreads, source dates, staleness; scenarios.

Missing prices are tested with a fixture catalog (a copy of the shipped one without the row), never by relying on
the shipped data lacking a price. Staleness uses an injected date.
"""

import io
from datetime import date
from decimal import Decimal

import msgspec
import pytest
import yaml
from rich.console import Console

from gpufleet.cost import catalog, estimate, usage
from gpufleet.cost.catalog import PriceRow
from gpufleet.finance import report

GN7I = "instance/ecs.gn7i-c8g1.2xlarge"


def catalog_without(tmp_path, cloud, region, *keys):
    """A copy of the shipped catalog of (cloud, region) without the rows of `keys` (every billing)."""
    src = catalog.catalog_path(cloud, region)
    doc = yaml.safe_load(src.read_text())
    doc["rows"] = [r for r in doc["rows"] if r["key"] not in keys]
    (tmp_path / src.name).write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return tmp_path


def _price(fleet, inventory, data=None, u=None, today=None):
    return estimate.price_inventory(
        fleet.stack, fleet.spec, fleet.instance_type.type, inventory, u or usage.load(fleet.stack), data=data, today=today
    )


def _complete_usage():
    return usage.Usage.of(
        lb_egress_gb=Decimal(500), nat_egress_gb=Decimal(50), nat_cu_hours=Decimal(730), lb_lcu_hours=Decimal(0)
    )


def test_a_missing_gpu_price_makes_the_total_a_lower_bound(tmp_path, ali_inventory, prod_fleet):
    data = catalog_without(tmp_path, "alicloud", "cn-hangzhou", GN7I)
    e = _price(prod_fleet, ali_inventory, data, _complete_usage())
    gpu = next(l for l in e.lines if l.category == "gpu_compute")
    assert gpu.monthly_cost is None and gpu.price_quality == "missing" and gpu in e.unpriced
    assert not e.complete and not e.total.complete
    assert e.total.text().startswith("≥ ")
    cats = e.categories
    assert cats["gpu_compute"].text() == "unpriced"  # never 0.00
    for c, a in cats.items():  # a category without an unpriced line is a plain number; with one, never a bare number
        has_unpriced = any(l.category == c for l in e.unpriced)
        assert a.complete != has_unpriced and (a.text() == str(a.value) if not has_unpriced else not a.text()[0].isdigit())
    j = report.estimate_json(e)
    assert j["complete"] is False and j["range"]["high"] is None
    assert GN7I in [u["price_key"] for u in j["unpriced"]]
    assert not [l for l in e.unpriced if l.category == "gpu_compute" and l is not gpu]
    assert j["by_category"]["gpu_compute"] == {
        "amount": "0.00",
        "complete": False,
        "low": "0.00",
        "high": None,
        "priced_lines": 0,
        "unpriced_lines": 1,
    }
    buf = io.StringIO()
    report.estimate_table(e, Console(file=buf, width=100))
    text = buf.getvalue()
    assert f"monthly total ≥ {e.monthly_total} CNY" in text and "gpu_compute unpriced" in text
    assert "gpu_compute 0.00" not in text


def test_complete_when_every_line_has_a_price(ali_inventory, prod_fleet):
    e = _price(prod_fleet, ali_inventory, u=_complete_usage())
    lcu = next(l for l in e.lines if l.price_key == "clb/lcu")
    assert lcu.monthly_quantity == 0 and lcu.monthly_cost == 0  # no usage: 0 even when the price row is missing
    assert e.complete == (not e.unpriced)
    assert e.total.text().startswith("≥ ") != e.complete


class SpreadRow(PriceRow, frozen=True):
    """A catalog row with a sourced spread (PriceRow gains low/high on the cost-data branch)."""

    low: Decimal | None = None
    high: Decimal | None = None


def test_spread_of_an_estimated_price_gives_a_range(ali_inventory, prod_fleet):
    cat = catalog.load("alicloud", "cn-hangzhou")
    row = cat.get(GN7I, "payg")
    fields = {f.name: getattr(row, f.name) for f in msgspec.structs.fields(PriceRow)}
    spread = SpreadRow(**{**fields, "low": Decimal("7"), "high": Decimal("10")})
    assert estimate.row_spread_and_staleness(spread, date(2026, 12, 1))[:2] == (Decimal("7"), Decimal("10"))
    own = tuple(row.price if getattr(row, k, None) is None else getattr(row, k) for k in ("low", "high"))
    assert estimate.row_spread_and_staleness(row, date(2026, 12, 1))[:2] == own  # no spread stated: the price itself
    old = cat.rows[(GN7I, "payg")]
    cat.rows[(GN7I, "payg")] = spread
    try:
        e = _price(prod_fleet, ali_inventory, u=_complete_usage())
    finally:
        cat.rows[(GN7I, "payg")] = old
    gpu = next(l for l in e.lines if l.category == "gpu_compute")
    hours = gpu.monthly_quantity
    assert (gpu.low, gpu.high) == ((7 * hours).quantize(Decimal("0.01")), (10 * hours).quantize(Decimal("0.01")))
    assert e.monthly_low == sum(l.low for l in e.lines if l.low is not None)
    assert e.monthly_low < e.monthly_total < e.monthly_high
    j = report.estimate_json(e)
    assert j["range"]["low"] == str(e.monthly_low)
    # issue 29: the table shows no high end where the JSON has none (the CLB LCU row has no price: incomplete)
    assert not e.complete and j["range"]["high"] is None
    assert e.total.text() == f"≥ {e.monthly_total} (low {e.monthly_low})" and str(e.monthly_high) not in e.total.text()
    assert next(l for l in j["lines"] if l["category"] == "gpu_compute")["unit_price_high"] == "10"


def test_staleness_and_oldest_date_use_the_given_day(ali_inventory, prod_fleet):
    e = _price(prod_fleet, ali_inventory, today=date(2026, 12, 1))
    priced = [l for l in e.lines if l.monthly_cost is not None]
    assert e.oldest_as_of == min(l.as_of for l in priced)
    for l in priced:
        assert l.stale == ((date(2026, 12, 1) - date.fromisoformat(l.as_of)).days > 365), l
    later = date.fromisoformat(e.oldest_as_of).replace(year=date.fromisoformat(e.oldest_as_of).year + 2)
    e = _price(prod_fleet, ali_inventory, today=later)
    assert e.stale and all(l.stale for l in e.lines if l.as_of == e.oldest_as_of)
    early = _price(prod_fleet, ali_inventory, today=date.fromisoformat(e.oldest_as_of))
    assert not early.stale  # nothing is stale on the day of the oldest source
    buf = io.StringIO()
    report.estimate_table(e, Console(file=buf, width=100))
    assert "†" in buf.getvalue() and f"oldest price {e.oldest_as_of}" in buf.getvalue()


def test_scenarios_floor_average_peak(ali_inventory, prod_fleet):
    e = _price(prod_fleet, ali_inventory, u=_complete_usage())
    s = e.scenarios
    assert list(s) == ["average", "floor", "peak"]  # payg: no spot fallback
    assert s["average"].total == e.total and s["average"].nodes == Decimal(466) / 168
    assert (s["floor"].nodes, s["peak"].nodes) == (2, 8)
    assert s["floor"].total.value < s["average"].total.value < s["peak"].total.value
    # by hand: 8 nodes x 730 h x 8.8788 CNY/h = 51852.19 (issue 16: "8 nodes cost about 51,852 CNY/month at peak")
    peak = estimate.price_inventory(
        prod_fleet.stack,
        prod_fleet.spec,
        prod_fleet.instance_type.type,
        ali_inventory,
        _complete_usage().with_keys(replicas_average=Decimal(8)),
        scenarios=False,
    )
    assert peak.total == s["peak"].total
    rate = catalog.load("alicloud", "cn-hangzhou").get(GN7I, "payg").price
    assert peak.categories["gpu_compute"].value == (8 * 730 * rate).quantize(Decimal("0.01"))  # 51852.19 at 8.8788/h
    fixed = ("nat", "load_balancer", "bandwidth")  # the fleet's own costs do not scale with the nodes
    assert all(peak.categories[c] == e.categories[c] for c in fixed)
    j = report.estimate_json(e)["scenarios"]
    assert j["peak"]["nodes"] == "8" and j["peak"]["monthly_total"] == str(s["peak"].total.value)


def test_peak_follows_replicas_max(prod_fleet):
    from gpufleet import plan

    raw = plan.for_stack(prod_fleet.stack).raw
    wider = {**raw, "replicas": {**raw["replicas"], "max": 16}}
    option = plan.for_spec(wider, prod_fleet.stack, file="x")
    e = estimate.price_inventory(
        prod_fleet.stack, option.fleet.spec, option.fleet.instance_type.type, option.resources, usage.load(prod_fleet.stack)
    )
    base = estimate.price_inventory(
        prod_fleet.stack,
        prod_fleet.spec,
        prod_fleet.instance_type.type,
        plan.for_stack(prod_fleet.stack).resources,
        usage.load(prod_fleet.stack),
    )
    assert e.scenarios["peak"].nodes == 16 and e.scenarios["peak"].total.value > base.scenarios["peak"].total.value
    assert e.monthly_total == base.monthly_total  # the average did not change: only the peak shows it


def test_spot_fallback_prices_spot_nodes_at_payg(ali_inventory, prod_fleet):
    import copy

    inv = copy.deepcopy(ali_inventory)
    next(r for r in inv if r["type"].endswith("ScalingConfiguration"))["inputs"]["spotStrategy"] = "SpotAsPriceGo"
    spot_spec = prod_fleet.spec.model_copy(update={"billing": prod_fleet.spec.billing.model_copy(update={"model": "spot"})})
    e = estimate.price_inventory(prod_fleet.stack, spot_spec, "ecs.gn7i-c8g1.2xlarge", inv, _complete_usage())
    assert "spot_fallback" in e.scenarios
    fb = e.scenarios["spot_fallback"]
    cat = catalog.load("alicloud", "cn-hangzhou")
    spot_line = next(l for l in e.lines if l.category == "gpu_compute")
    assert spot_line.billing == "spot"
    payg, spot = cat.get(GN7I, "payg").price, cat.get(GN7I, "spot").price
    diff = (spot_line.monthly_quantity * payg).quantize(Decimal("0.01")) - spot_line.monthly_cost
    # each line is rounded to the cent: the difference is that of the two rounded lines
    q = spot_line.monthly_quantity
    assert fb.total.value - e.total.value == diff == (q * payg).quantize(Decimal("0.01")) - (q * spot).quantize(Decimal("0.01"))
    assert "no on-demand base" in fb.how


def test_stale_rows_copy(tmp_path):
    """catalog_without keeps every other row (the fixture is the shipped catalog minus one item)."""
    data = catalog_without(tmp_path, "alicloud", "cn-hangzhou", GN7I)
    full, cut = catalog.load("alicloud", "cn-hangzhou"), catalog.load("alicloud", "cn-hangzhou", data)
    assert set(full.rows) - set(cut.rows) == {(GN7I, b) for b in ("payg", "monthly", "yearly", "spot")}


def test_spot_fallback_with_an_on_demand_base_in_a_second_group(ali_inventory, prod_fleet):
    """Spot with an on-demand base as two groups (Tencent's shape): one pay-as-you-go, one spot. The fallback re-prices
    only the spot group's lines; it reads billing.on_demand_base when the spec has it (issue 13), 0 until then."""
    import copy
    import types

    inv = copy.deepcopy(ali_inventory)
    cfg = next(r for r in inv if r["type"].endswith("ScalingConfiguration"))
    group = next(r for r in inv if r["type"].endswith("ScalingGroup"))
    spot_cfg, spot_group = copy.deepcopy(cfg), copy.deepcopy(group)
    spot_group["name"] = "llm-prod-asg-spot-group"
    spot_cfg.update(name="llm-prod-asg-spot-config")
    spot_cfg["inputs"].update(spotStrategy="SpotAsPriceGo", scalingGroupId="llm-prod-asg-spot-group_id")
    group["inputs"]["desiredCapacity"] = 1.0  # the on-demand base: 1 node
    spot_group["inputs"]["desiredCapacity"] = 1.0
    inv += [spot_cfg, spot_group]
    billing = types.SimpleNamespace(model="spot", on_demand_base=1, on_demand_above_base_percent=0, spot_price_limit=None)
    fields = {k: getattr(prod_fleet.spec, k) for k in type(prod_fleet.spec).model_fields}
    spec = types.SimpleNamespace(**{**fields, "billing": billing})  # the spec as issue 13 extends it
    e = estimate.price_inventory(prod_fleet.stack, spec, "ecs.gn7i-c8g1.2xlarge", inv, _complete_usage())
    gpu = [l for l in e.lines if l.category == "gpu_compute"]
    assert sorted(l.billing for l in gpu) == ["payg", "spot"]
    spot_line = next(l for l in gpu if l.billing == "spot")
    cat = catalog.load("alicloud", "cn-hangzhou")
    extra = (spot_line.monthly_quantity * cat.get(GN7I, "payg").price).quantize(Decimal("0.01")) - spot_line.monthly_cost
    fb = e.scenarios["spot_fallback"]
    assert fb.total.value - e.total.value == extra  # only the spot group moved to pay-as-you-go
    assert "on-demand base: 1 nodes" in fb.how


def test_every_shipped_stack_estimate_fits_100_columns_with_money_in_full():
    from gpufleet.finance.stack import stack_estimate
    from gpufleet.stacks.loader import stack_names

    for stack in stack_names():
        _, e = stack_estimate(stack)
        buf = io.StringIO()
        report.estimate_table(e, Console(file=buf, width=100))
        text = buf.getvalue()
        assert max(len(l) for l in text.splitlines()) <= 100, stack
        for l in e.lines:
            if l.monthly_cost is not None:
                assert str(l.monthly_cost) in text, (stack, l.component)
        assert f"monthly total {e.total.text()} {e.currency}" in " ".join(text.split())


def test_bad_input_exits_2_and_a_saved_estimate_diffs_clean(tmp_path, capsys):
    from gpufleet.cli import main

    f = tmp_path / "old.json"
    f.write_text('{"schema_version": 1}')
    with pytest.raises(SystemExit) as exc:
        main(["cost", "diff", "--stack", "alicloud-cn-hangzhou-prod", "--baseline", str(f)])
    assert exc.value.code == 2
    assert "schema_version: is 1" in capsys.readouterr().err
