"""The fleet's costs outside its own resources (issue 16): the KMS instance a secret needs, Tencent SSM, the CLB
public-IP retention fee, the model bucket and the image snapshot, priced from the public points and flagged shared."""

from decimal import Decimal

import pytest

from gpufleet import plan
from gpufleet.components.alicloud import pricing as ali
from gpufleet.components.tencentcloud import pricing as tc
from gpufleet.components.tencentcloud.pricing import cam_action
from gpufleet.cost import estimate, usage
from gpufleet.cost.catalog import load
from gpufleet.cost.resources import PricingContext, policy_actions
from gpufleet.cost.usage import Usage
from gpufleet.validation import load_fleet


def _lines(stack: str, use: Usage | None = None):
    fleet = load_fleet(stack)
    inv = plan.for_stack(stack).resources
    return estimate.price_inventory(fleet.stack, fleet.spec, fleet.instance_type.type, inv, use or usage.load(fleet.stack)).lines


def _one(lines, start):
    found = [l for l in lines if l.component.startswith(start)]
    assert len(found) == 1, (start, [l.component for l in lines])
    return found[0]


def test_alibaba_prod_lists_kms_bucket_snapshot_and_the_clb_ip_fee():
    lines = _lines("alicloud-cn-hangzhou-prod")
    kms = _one(lines, "KMS instance")
    assert (kms.unit_price, kms.monthly_cost, kms.price_quality) == (Decimal("2499"), Decimal("2499.00"), "third-party")
    clb_ip = _one(lines, "CLB public IP retention fee")
    assert clb_ip.monthly_cost == Decimal("14.60") and clb_ip.price_quality == "official"  # 730 h x 0.02, Hangzhou example
    bucket = _one(lines, "model bucket storage (OSS standard)")
    assert bucket.unit_price == Decimal("0.12") and bucket.monthly_cost is None  # usage unknown: a unit price, never 0
    snap = _one(lines, "image snapshot m-placeholder-cuda13-vllm-hz")
    assert snap.monthly_quantity == 100 and snap.monthly_cost == Decimal("12.00")  # the 100 GiB system disk x 0.12
    assert "upper bound" in snap.note


def test_tencent_prod_lists_ssm_bucket_and_snapshot():
    lines = _lines("tencentcloud-ap-guangzhou-prod")
    secret, calls = _one(lines, "SSM secret"), _one(lines, "SSM API calls")
    cat = load("tencentcloud", "ap-guangzhou")
    assert secret.unit_price == cat.get("ssm/secret").price and secret.price_quality == "estimate"
    assert calls.monthly_quantity == 1  # the 10,000 calls billed at least
    # USD 0.4 x the CNY/USD of the NAT prices quoted in both currencies (0.5/0.089, 1.5/0.28, 5.0/0.89)
    fx = [Decimal("0.5") / Decimal("0.089"), Decimal("1.5") / Decimal("0.28"), Decimal("5.0") / Decimal("0.89")]
    assert cat.get("ssm/secret").price == (Decimal("0.4") * sum(fx) / 3).quantize(Decimal("0.0001"))
    assert (cat.get("ssm/secret").low, cat.get("ssm/secret").high) == tuple(
        (Decimal("0.4") * x).quantize(Decimal("0.0001")) for x in (min(fx), max(fx))
    )
    assert _one(lines, "model bucket storage (COS standard)").monthly_cost is None
    assert _one(lines, "image snapshot img-placeholder-cuda13-gz").monthly_quantity == 100


def test_usage_sets_bucket_and_snapshot_sizes():
    lines = _lines("alicloud-cn-hangzhou-prod", Usage.of(model_bucket_gb=Decimal(40), image_snapshot_gb=Decimal(30)))
    assert _one(lines, "model bucket storage").monthly_cost == Decimal("4.80")
    assert _one(lines, "image snapshot").monthly_cost == Decimal("3.60")


@pytest.mark.parametrize(
    "fn,field,doc,names",
    [
        (
            ali.ali_node_reads,
            "policyDocument",
            '{"Statement": [{"Action": ["oss:GetObject"]}, {"Action": "kms:GetSecretValue"}]}',
            {"KMS instance", "model bucket storage (OSS standard)"},
        ),
        (ali.ali_node_reads, "policyDocument", '{"Statement": [{"Action": ["cms:PutCustomMetric"]}]}', set()),
        (
            tc.tc_node_reads,
            "document",
            '{"statement": [{"action": ["name/ssm:GetSecretValue", "name/cos:GetObject"]}]}',
            {"SSM secret (the API key)", "SSM API calls", "model bucket storage (COS standard)"},
        ),
    ],
)
def test_shared_costs_follow_the_policy_and_are_flagged_shared(fn, field, doc, names):
    res = {"type": "x", "name": "p", "inputs": {field: doc}}
    comps = fn(res, PricingContext("c", "r", Usage(), Decimal(1), [res]))
    assert {c.name.split(" (")[0] if c.name.startswith("KMS") else c.name.split(" (billed")[0] for c in comps} == names
    assert all(c.shared for c in comps)


def test_policy_actions_reads_both_clouds_and_bad_text():
    assert policy_actions('{"Statement": [{"Action": "a:B"}]}') == {"a:B"}
    assert policy_actions({"statement": [{"action": ["name/ssm:X"]}]}, cam_action) == {"ssm:X"}  # Tencent's spelling
    assert policy_actions("not json") == set()


def test_every_stack_cost_component_is_not_shared_unless_outside_the_stack():
    """Nodes, disks, NAT, EIP and load balancers belong to one stack: never shared."""
    lines = _lines("alicloud-cn-hangzhou-prod")
    assert _one(lines, "NAT gateway instance")
    fleet = load_fleet("alicloud-cn-hangzhou-prod")
    inv = plan.for_stack(fleet.stack).resources
    ctx = PricingContext("alicloud", "cn-hangzhou", Usage(), Decimal(2), inv)
    for res in inv:
        fn = ali.PRICED.get(res["type"])
        for c in fn(res, ctx) if fn else []:
            assert c.shared == (c.price_key in ("kms/instance", "oss/standard", "snapshot/standard")), c
