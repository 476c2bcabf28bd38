"""Cost components and their arithmetic, on an inventory in the preview's JSON shape."""

import copy
import json
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from gpufleet.cost import estimate, usage
from gpufleet.cost.catalog import load
from gpufleet.errors import UserError


def _line(est, component_start):
    return next(l for l in est.lines if l.component.startswith(component_start))


def test_prod_lines_by_hand(prod_estimate):
    e = prod_estimate
    gpu = _line(e, "autoscaled node ecs.gn7i-c8g1.2xlarge")
    # average nodes (466 / 168 = 2.773809...: 65 h a week at 4, 103 h at 2) x 730 h
    assert gpu.monthly_quantity == (Decimal(466) / 168 * 730).quantize(Decimal("0.0001")) == Decimal("2024.8810")
    assert gpu.unit_price == Decimal("9.53")  # the 9.74 CNY/h DescribePrice quote less its 100 GiB ESSD PL1 (0.21/h)
    assert gpu.monthly_cost == Decimal("19297.12")  # 2024.88095 h x 9.53 = 19297.121...
    data = _line(e, "data disk 1 cloud_essd/PL1 200 GiB")
    assert data.monthly_cost == (Decimal(466) / 168 * 730 * 200 * Decimal("0.0021")).quantize(Decimal("0.01"))
    assert _line(e, "NAT gateway instance").monthly_cost == Decimal("167.90")  # 730 x 0.23
    assert _line(e, "NAT capacity units").monthly_quantity == 730  # documented floor
    assert _line(e, "EIP configuration fee").monthly_cost == Decimal("14.60")
    assert _line(e, "CLB public traffic out").monthly_cost == Decimal("400.00")  # 500 GB x 0.8
    assert e.by_category["gpu_compute"] == Decimal("19297.12")
    assert e.monthly_total == sum(l.monthly_cost for l in e.lines if l.monthly_cost is not None)
    assert set(e.by_category) == {"gpu_compute", "disk", "bandwidth", "nat", "load_balancer", "other"}
    for l in e.lines:  # traceable to a catalog row
        if l.price_quality != "missing":
            assert load("alicloud", "cn-hangzhou").get(l.price_key, l.billing).price == l.unit_price


def test_unknown_usage_is_a_unit_price_not_zero(ali_inventory, prod_fleet):
    e = estimate.price_inventory(prod_fleet.stack, prod_fleet.spec, "ecs.gn7i-c8g1.2xlarge", ali_inventory, usage.Usage())
    traffic = _line(e, "CLB public traffic out")
    assert traffic.monthly_quantity is None and traffic.monthly_cost is None and traffic.unit_price == Decimal("0.8")
    assert traffic in e.unpriced
    assert any("lb_egress_gb: unknown" in a for a in e.assumptions)


def test_unpriced_type_is_a_missing_line(ali_inventory, prod_fleet):
    inv = ali_inventory + [{"type": "alicloud:oss/bucket:Bucket", "name": "b", "parent": None, "inputs": {}}]
    e = estimate.price_inventory(prod_fleet.stack, prod_fleet.spec, "x", inv, usage.Usage())
    line = next(l for l in e.lines if l.resource_type == "alicloud:oss/bucket:Bucket")
    assert line.price_quality == "missing" and line.monthly_cost is None


def test_subscription_baseline_and_spot_cap(ali_inventory, prod_fleet):
    inv = copy.deepcopy(ali_inventory)
    for i in range(2):
        inv.append(
            {
                "type": "alicloud:ecs/instance:Instance",
                "name": f"base-{i}",
                "parent": None,
                "inputs": {
                    "instanceType": "ecs.gn7i-c8g1.2xlarge",
                    "instanceChargeType": "PrePaid",
                    "period": 1,
                    "periodUnit": "Month",
                    "systemDiskCategory": "cloud_essd",
                    "systemDiskPerformanceLevel": "PL0",
                    "systemDiskSize": 100,
                },
            }
        )
    cfg = next(r for r in inv if r["type"].endswith("ScalingConfiguration"))
    cfg["inputs"].update(
        spotStrategy="SpotWithPriceLimit", spotPriceLimits=[{"instanceType": "ecs.gn7i-c8g1.2xlarge", "priceLimit": 3.0}]
    )
    e = estimate.price_inventory(prod_fleet.stack, prod_fleet.spec, "ecs.gn7i-c8g1.2xlarge", inv, usage.Usage())
    base = [l for l in e.lines if l.resource_name.startswith("base-") and l.category == "gpu_compute"]
    assert [l.monthly_cost for l in base] == [Decimal("4575.66")] * 2 and base[
        0
    ].billing == "monthly"  # 4675.66 quote less 100 GiB PL1
    spot = _line(e, "autoscaled node")
    assert spot.billing == "spot" and spot.unit_price == Decimal("3.0")  # the limit is below the ~3.1 spot quote
    assert spot.monthly_quantity == ((Decimal(466) / 168 - 2) * 730).quantize(Decimal("0.0001"))
    assert any("reclaimed" in a for a in e.assumptions)


def test_discount_file(tmp_path, ali_inventory, prod_fleet):
    f = tmp_path / "d.yaml"
    f.write_text("discounts:\n  - {match: 'instance/*', billing: payg, factor: 0.8, note: 'contract 2026'}\n")
    e = estimate.price_inventory(
        prod_fleet.stack, prod_fleet.spec, "ecs.gn7i-c8g1.2xlarge", ali_inventory, usage.Usage(), estimate.load_discounts(str(f))
    )
    assert _line(e, "autoscaled node").unit_price == Decimal("9.53") * Decimal("0.8")
    assert _line(e, "NAT gateway").unit_price == Decimal("0.23")
    assert e.discounts == ["instance/* (payg) x0.8 contract 2026"]


def test_a_discount_that_prices_no_line_says_so(tmp_path, ali_inventory, prod_fleet):
    f = tmp_path / "d.yaml"
    f.write_text("discounts:\n  - {match: 'instnce/*', factor: 0.8}\n  - {match: 'instance/*', billing: spot, factor: 0.5}\n")
    e = estimate.price_inventory(
        prod_fleet.stack, prod_fleet.spec, "ecs.gn7i-c8g1.2xlarge", ali_inventory, usage.Usage(), estimate.load_discounts(str(f))
    )
    assert e.discounts == [  # a payg stack: neither rule priced anything, and both were listed as if they applied
        "instnce/* (*) x0.8: applied to no priced line of this stack; check its match and billing",
        "instance/* (spot) x0.5: applied to no priced line of this stack; check its match and billing",
    ]


@pytest.mark.parametrize(
    ("billing", "says"),
    [
        ("null", "discounts.0.billing: expected text, got nothing (null) (choose one of: payg, "),  # was "unknown billing 'None'"
        ("yearlly", "discounts.0.billing: unknown billing 'yearlly' (did you mean 'yearly'?)"),
        ("[payg]", "discounts.0.billing: expected text, got a list (choose one of: "),
    ],
)
def test_a_discount_billing_that_is_not_one_says_the_choices(tmp_path, billing, says):
    f = tmp_path / "d.yaml"
    f.write_text(f'discounts:\n  - {{match: "instance/*", factor: 0.8, billing: {billing}}}\n')
    with pytest.raises(UserError) as exc:
        estimate.load_discounts(str(f))
    assert str(exc.value).startswith(f"{f}: {says}")


def test_break_even():
    b = estimate.break_even(load("alicloud", "cn-hangzhou"), "ecs.gn7i-c8g1.2xlarge")
    assert b["monthly_break_even_utilisation"] == (Decimal("4575.66") / (Decimal("9.53") * 730)).quantize(Decimal("0.0001"))


ROOT = Path(__file__).resolve().parents[2]
ZERO_PAYG = {
    "key": "instance/ecs.gn7i-c8g1.2xlarge",
    "billing": "payg",
    "price": "0",  # a fully credited contract row
    "currency": "CNY",
    "unit": "hour",
    "quality": "official",
    "source": "contract",
    "as_of": "2026-11-01",
}


def test_a_free_hourly_price_has_no_break_even():
    """Nothing beats an hourly price of 0 (a free subscription only ties it): no break-even, never a division by 0."""
    assert estimate.break_even_utilisation(Decimal("4575.66"), Decimal(0)) is None
    assert estimate.break_even_utilisation(Decimal(0), Decimal("9.53")) == 0
    assert estimate.break_even_utilisation(Decimal("4575.66"), Decimal("9.53")) == Decimal("0.6577")


@pytest.mark.parametrize(
    "argv",
    [
        ["cost", "estimate", "-s", "alicloud-cn-hangzhou-prod"],
        ["cost", "estimate", "-s", "alicloud-cn-hangzhou-prod", "--json"],
        ["cost", "compare", "-s", "alicloud-cn-hangzhou-prod", "--clouds", "alicloud", "--billing", "payg,monthly"],
        ["cost", "commit", "-s", "alicloud-cn-hangzhou-prod", "--json"],
        ["cost", "report", "--all"],
    ],
)
def test_a_project_price_of_0_prices_as_0(tmp_path, monkeypatch, capsys, argv):
    """A project catalog row at price 0 was a DivisionByZero traceback (exit 1) in estimate, compare, commit and report."""
    import shutil

    from gpufleet.cli import main

    for part in ("Pulumi.yaml", "stacks", "images", "cost"):
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy)(ROOT / part, tmp_path / part)
    (tmp_path / "cost" / "catalog").mkdir()
    head = {"cloud": "alicloud", "region": "cn-hangzhou", "currency": "CNY", "as_of": "2026-11-01", "built": "2026-11-01"}
    (tmp_path / "cost" / "catalog" / "alicloud-cn-hangzhou.yaml").write_text(yaml.safe_dump({**head, "rows": [ZERO_PAYG]}))
    monkeypatch.setenv("GPUFLEET_PROJECT", str(tmp_path))
    main(argv)  # returns when done; bad input or a failed check is a SystemExit
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    if argv[1] == "estimate" and "--json" in argv:
        gpu = next(l for l in json.loads(out.out)["lines"] if l["category"] == "gpu_compute")
        assert (gpu["unit_price"], gpu["monthly_cost"]) == ("0", "0.00")


def test_tencent_lines(prod_fleet):
    from gpufleet import plan
    from gpufleet.finance import compare

    raw = plan.for_stack(prod_fleet.stack).raw
    new = compare.redeclare(raw, prod_fleet, "tencentcloud", "payg")[0]
    option = plan.for_spec(new, prod_fleet.stack, file="x")
    fleet, inv = option.fleet, option.resources  # what the Tencent program declares for this fleet
    e = estimate.price_inventory(prod_fleet.stack, fleet.spec, fleet.instance_type.type, inv, usage.load(prod_fleet.stack))
    assert e.region == "ap-shanghai"
    gpu = _line(e, "autoscaled node GNV4.3XLARGE44")
    assert gpu.unit_price == Decimal("9.2") and gpu.price_quality == "estimate"  # the ap-guangzhou-6 quote used in Shanghai
    assert gpu.monthly_cost == (Decimal(466) / 168 * 730 * Decimal("9.2")).quantize(Decimal("0.01"))
    assert _line(e, "NAT gateway (small").monthly_cost == Decimal("365.00")  # 730 x 0.5
    assert _line(e, "EIP outbound traffic").monthly_cost == Decimal("40.00")  # 50 GB x 0.80
    # issue 29: the NAT's EIP is bound (the NAT gateway names it): no IP resource fee, not an unpriced line
    hold = _line(e, "EIP IP resource fee")
    assert hold.monthly_quantity == 0 and hold.monthly_cost == Decimal("0.00") and "bound to llm-prod-net-nat" in hold.note
    assert hold.unit_price == Decimal("0.1715")  # the idle fee (0.031 USD/h) it would cost unbound
    # the CLB instance fee: USD 0.686/day (international site) x the CNY/USD of services
    assert _line(e, "CLB instance fee").price_quality == "estimate"
    assert not [l for l in e.lines if "no catalog row" in l.note]
    assert not [l for l in e.lines if l.component == "resource type not priced"]
