"""issue 29: `cost compare` gives an answer (cost/decision.py), and the Tencent lines that made every total open."""

import copy
from decimal import Decimal

import msgspec
import pytest

from gpufleet import plan, validation
from gpufleet.components.tencentcloud import pricing as tc
from gpufleet.cost import catalog as pricecat
from gpufleet.cost import decision, estimate, usage
from gpufleet.cost.estimate import Estimate, Line
from gpufleet.cost.resources import PricingContext
from gpufleet.finance.compare import Option
from gpufleet.stacks import loader

CNY = Decimal("0.01")


def line(cost, name="r", component="c", key="instance/x", low=None, high=None, quantity="1", note="", bound=None, price=None):
    c = None if cost is None else Decimal(cost)
    p = Decimal(price) if price is not None else c
    return Line(
        "t",
        name,
        component,
        "month",
        Decimal(quantity) if quantity is not None else None,
        p,
        c,
        "other",
        "estimate" if c is not None else "missing",
        key,
        "any",
        "src",
        "2026-01-01",
        note,
        price_low=None if c is None else Decimal(low if low is not None else cost),
        price_high=None if c is None else Decimal(high if high is not None else cost),
        quantity_bound=None if bound is None else Decimal(bound),
        bound_how="a declared cap" if bound is not None else "",
    )


def option(billing, *lines, current=False, cloud="alicloud"):
    e = Estimate("s", cloud, "r1", "x", billing, "CNY", "2026-01-01", "2026-01-01", list(lines), [], [])
    o = Option(cloud, "r1", "x", billing, [], e)
    o.current = current
    return o


def test_common_lines_cancel_so_a_shared_unknown_does_not_open_the_order():
    lcu = dict(name="lb", component="LCU", key="clb/lcu", quantity=None, note="usage lb_lcu_hours")
    a = option("payg", line("300", low="280", high="320"), line(None, **lcu), line("50", name="nat"), current=True)
    b = option("monthly", line("200", low="190", high="210"), line(None, **lcu), line("50", name="nat"))
    d = decision.decide([a, b])
    assert d.cheapest == "alicloud r1 monthly" and d.current == "alicloud r1 payg"
    assert d.margin == Decimal("100.00") and (d.margin_low, d.margin_high) == (Decimal("70.00"), Decimal("130.00"))
    assert d.confidence == "certain" and d.not_compared == []  # the LCU line and the NAT are the same on both sides
    p = decision.pair(a.estimate, b.estimate)
    assert p.cancelled == 2 and p.a.lines == p.b.lines == 1


def test_an_unknown_on_both_sides_alike_is_not_compared_and_named():
    a = option("payg", line("300"), line(None, name="b1", key="oss/standard", quantity=None, note="usage model_bucket_gb"))
    b = option("payg", line("250"), line(None, name="b2", key="cos/standard", quantity=None, note="usage model_bucket_gb"))
    b.cloud = b.estimate.cloud = "tencentcloud"
    a.current = True
    d = decision.decide([a, b])
    assert d.cheapest == "tencentcloud r1 payg" and d.margin == Decimal("50.00") and d.confidence == "certain"
    assert d.as_json()["not_compared"] == ["usage model_bucket_gb"]


def test_a_one_sided_unknown_with_a_bound_counts_at_its_bound_and_without_one_is_left_out_on_both_sides():
    traffic = dict(name="eip", component="traffic", key="net/traffic", quantity=None, note="usage nat_egress_gb", price="0.8")
    cheap = option("spot", line("100"), line(None, bound="100", **traffic))  # at most 80.00 more
    dear = option("payg", line("200"), current=True)
    p = decision.pair(dear.estimate, cheap.estimate)
    assert p.bounded and "at most 80.00" in p.bounded[0] and p.not_compared == ()
    assert (p.b.value, p.b.low, p.b.high) == (Decimal("180.00"), Decimal("100.00"), Decimal("180.00"))
    assert decision.decide([dear, cheap]).confidence == "certain"  # 180 at most < 200
    unbounded = option("spot", line("100"), line(None, **{**traffic, "key": "clb/lcu", "note": "usage lb_lcu_hours"}))
    q = decision.pair(dear.estimate, unbounded.estimate)
    assert q.not_compared == ("usage lb_lcu_hours",) and q.margin == Decimal("-100.00")


def test_an_option_whose_gpu_compute_has_no_price_is_not_ranked_and_named():
    """Rule 5: leaving an unpriced node out of one side made that option the cheapest on a total without its nodes."""

    def node(cost, key="instance/x", **spread):
        return msgspec.structs.replace(line(cost, name="asg", component="node", key=key, **spread), category="gpu_compute")

    open_ = option("yearly", node(None, key="instance/y"), node("100"), line("50", name="nat"), current=True)
    other = option("payg", node("300", low="280", high="320"), line("50", name="nat"))
    spot = option("spot", node("200", low="190", high="210"), line("50", name="nat"))
    d = decision.decide([open_, other, spot])
    assert d.compute_unpriced == {"alicloud r1 yearly": "price instance/y"} and d.current_why == "price instance/y"
    assert d.cheapest == "alicloud r1 spot" and [r.label for r in d.rows] == ["alicloud r1 spot", "alicloud r1 payg"]
    assert d.margin is None and all(r.versus_current is None for r in d.rows)
    assert d.sentence().startswith(
        "cheapest: alicloud r1 spot; the current alicloud r1 yearly is not compared: its GPU compute has no price "
        "(price instance/y)"
    )
    assert d.confidence == "certain" and d.runner_up == "alicloud r1 payg"  # spot against the next, as without a current


@pytest.mark.parametrize(
    "a,b,want",
    [
        (("100", "90", "110"), ("200", "190", "210"), "certain"),  # ranges apart
        (("100", "80", "150"), ("160", "140", "180"), "likely"),  # overlap; each central outside the other's range
        (("100", "80", "150"), ("120", "90", "160"), "toss-up"),  # each central inside the other's range
    ],
)
def test_confidence_from_the_ranges(a, b, want):
    sa = decision.Side(*(Decimal(x) for x in a), lines=1)
    sb = decision.Side(*(Decimal(x) for x in b), lines=1)
    assert decision.confidence(sa, sb) == want


def test_the_current_option_cheapest_names_the_runner_up_and_its_confidence():
    payg = option("payg", line("100", low="90", high="110"), current=True)
    d = decision.decide([payg, option("spot", line("104", low="95", high="125"))])
    assert d.cheapest == d.current == "alicloud r1 payg" and d.runner_up == "alicloud r1 spot"
    assert d.runner_up_margin == Decimal("4.00") and d.runner_up_confidence == "toss-up" and d.confidence == "toss-up"
    assert d.sentence().startswith("cheapest: alicloud r1 payg, the current option; next: alicloud r1 spot +4.00")


@pytest.mark.parametrize("stack", loader.stack_names())
def test_every_shipped_stack_gets_an_answer(stack):
    from gpufleet.finance import compare

    opts = compare.compare(stack, ["alicloud", "tencentcloud"], ["payg", "monthly", "yearly", "spot"], usage.load(stack))
    d = decision.decide(opts)
    assert d.cheapest is not None and d.current is not None and d.confidence in decision.CONFIDENCES
    assert d.why and len(d.rows) == sum(1 for o in opts if o.estimate)
    if d.cheapest != d.current:
        assert d.margin is not None and d.margin > 0 and d.margin_low <= d.margin <= d.margin_high
    j = compare.as_json(stack, opts)
    assert j["decision"]["sentence"] == d.sentence() and sorted(r["decision_rank"] for r in j["rows"]) == list(
        range(1, len(opts) + 1)
    )


# --- the defects that made every Tencent total a lower bound ----------------------------------------------------


def _ctx(resources):
    return PricingContext("tencentcloud", "ap-guangzhou", usage.load("tencentcloud-ap-guangzhou-prod"), Decimal(2), resources)


def _tc_prod():
    return copy.deepcopy(plan.for_stack("tencentcloud-ap-guangzhou-prod").resources)


def test_a_bound_eip_has_no_ip_resource_fee_and_an_unbound_one_pays_the_idle_fee():
    inv = _tc_prod()
    eip = next(r for r in inv if r["type"] == "tencentcloud:Eip/instance:Instance")
    (fee, *_) = tc.tc_eip(eip, _ctx(inv))
    assert fee.monthly_quantity == 0 and "bound to llm-prod-net-nat" in fee.note
    alone = [r for r in inv if r["type"] != "tencentcloud:Nat/gateway:Gateway"]
    (fee, *_) = tc.tc_eip(eip, _ctx(alone))
    assert fee.monthly_quantity == 730 and fee.price_key == "eip/holding"
    row = pricecat.load("tencentcloud", "ap-guangzhou").get("eip/holding", "any")
    assert row.price is not None and "0.031 USD/hour" in row.derivation  # the vendor's idle price, converted


def test_clb_lcu_only_on_an_lcu_supported_clb():
    inv = _tc_prod()
    clb = next(r for r in inv if r["type"] == "tencentcloud:Clb/instance:Instance")
    assert "clb/lcu" not in [c.price_key for c in tc.tc_clb(clb, _ctx(inv))]  # the program declares no sla_type
    clb["inputs"]["slaType"] = "clb.c2.medium"
    assert "clb/lcu" in [c.price_key for c in tc.tc_clb(clb, _ctx(inv))]


def test_scf_scaler_is_priced_at_its_basic_package():
    inv = _tc_prod()
    e = estimate.price_inventory(
        "tencentcloud-ap-guangzhou-prod",
        validation.load_fleet("tencentcloud-ap-guangzhou-prod").spec,
        "x",
        inv,
        usage.load("tencentcloud-ap-guangzhou-prod"),
        scenarios=False,
    )
    scf = [l for l in e.lines if l.resource_type == "tencentcloud:Scf/function:Function"]
    assert scf and all(l.monthly_cost is not None for l in scf)
    pkg = next(l for l in scf if l.price_key == "scf/basic_package")
    # 0.06 USD a day (Billable Items, product/583/44254) x 730/24 days x the catalog's services CNY/USD
    fx = Decimal(pkg.derivation.split("CNY/USD of services ")[1].split(" ")[0])
    assert pkg.unit_price == (Decimal("0.06") * 730 / 24 * fx).quantize(Decimal("0.0001"))
    over = next(l for l in scf if l.price_key == "scf/gb_second")
    assert over.monthly_cost == 0 and "43800 runs x 0.125 GB fit" in over.note and "18.3 s" in over.note


def test_premium_disk_at_the_vendors_list_price():
    row = pricecat.load("tencentcloud", "ap-guangzhou").get("disk/CLOUD_PREMIUM", "payg")
    fx = Decimal(row.derivation.split("CNY/USD of services ")[1].split(" ")[0])
    # intlcloud-documents 云硬盘/购买指南/价格总览_intl_en.md: Premium Cloud Disk 0.0001 USD/GB/hour in Guangzhou
    assert row.price == (Decimal("0.0001") * fx).quantize(Decimal("0.000001")) and "sealos" not in row.source
