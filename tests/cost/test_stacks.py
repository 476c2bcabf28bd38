"""Cost over the real program: every shipped stack's preview inventory, the prod estimate, compare."""

from decimal import Decimal
from pathlib import Path

import pytest

from gpufleet import plan, validation
from gpufleet.cost import catalog, resources, usage
from gpufleet.finance import compare
from gpufleet.finance.stack import stack_estimate
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[2]

STACKS = loader.stack_names()
PROD = "alicloud-cn-hangzhou-prod"


@pytest.mark.parametrize("stack", STACKS)
def test_every_declared_type_is_priced_or_free(stack):
    cloud = stack.split("-")[0]
    types = {r["type"] for r in plan.for_stack(stack).resources}
    uncovered = sorted(t for t in types if not resources.is_covered(cloud, t))
    assert not uncovered, f"add a cost function or a FREE entry in components/{cloud}/pricing.py for: {uncovered}"


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_prices_without_unmapped_rows(stack):
    _, est = stack_estimate(stack)
    assert est.monthly_total > 0
    assert not [l for l in est.lines if l.component == "resource type not priced"]
    assert not [l for l in est.lines if "no catalog row" in l.note], "a cost function names a price key the catalog lacks"


def test_prod_estimate_lists_every_overhead_traceably():
    fleet, est = stack_estimate(PROD)
    cats = est.by_category
    for c in ("gpu_compute", "disk", "bandwidth", "nat", "load_balancer"):
        assert cats[c] > 0, c
    cat = catalog.load("alicloud", "cn-hangzhou")
    for l in est.lines:
        row = cat.get(l.price_key, l.billing)
        assert row is not None and row.price == l.unit_price and row.source == l.source
        if l.monthly_cost is not None:
            assert l.monthly_cost == (l.unit_price * l.monthly_quantity).quantize(Decimal("0.01"))
    gpu = [l for l in est.lines if l.category == "gpu_compute"]
    assert float(
        sum(l.monthly_quantity for l in gpu if l.unit == "hour") + 730 * sum(l.monthly_quantity for l in gpu if l.unit == "month")
    ) == pytest.approx(float(Decimal(466) / 168 * 730), rel=1e-7)  # quantities print 4 decimals


def test_compare_gives_both_clouds_and_four_billings():
    opts = compare.compare(PROD, ["alicloud", "tencentcloud"], list(compare.BILLINGS), usage.load(PROD))
    assert [(o.cloud, o.billing) for o in opts] == [(c, b) for c in ("alicloud", "tencentcloud") for b in compare.BILLINGS]
    ali = {o.billing: o for o in opts if o.cloud == "alicloud"}
    for o in ali.values():
        assert o.estimate is not None, o.problem
    totals = {b: ali[b].estimate.monthly_total for b in ali}
    assert totals["spot"] < totals["payg"]
    assert totals["yearly"] < totals["monthly"]
    tc = [o for o in opts if o.cloud == "tencentcloud"]
    assert all(o.region == "ap-shanghai" and o.instance_type == "GNV4.3XLARGE44" for o in tc)
    if any(s.startswith("tencentcloud-") for s in STACKS):
        for o in tc:
            assert o.estimate is not None, o.problem


def test_every_priced_or_free_type_is_declared():
    """No dead entries: each type a cloud prices or lists as free is declared by a shipped stack or its
    monthly / spot variant (subscription baselines and attachments appear only there)."""
    from gpufleet import registry

    declared: set[str] = set()
    for stack in STACKS:
        base = plan.for_stack(stack)
        declared |= {r["type"] for r in base.resources}
        for billing in ("monthly", "spot"):
            new = compare.redeclare(base.raw, base.fleet, base.fleet.spec.cloud, billing)[0]
            declared |= {r["type"] for r in plan.for_spec(new, stack, f"{stack} ({billing})").resources}
    declared |= _pem_variant_types()
    for path in sorted((ROOT / "examples").glob("Pulumi.*-rollout.yaml")):  # a rollout's VServer group (Alibaba)
        declared |= {r["type"] for r in plan.for_stack(loader.use_stack_file(path)).resources}
    for cloud in {validation.load_fleet(s).spec.cloud for s in STACKS}:
        pricing = registry.module(cloud, "pricing")
        assert sorted(set(pricing.PRICED) - declared) == [], cloud
        assert sorted(set(pricing.FREE) - declared) == [], cloud


def _pem_variant_types() -> set[str]:
    """Types a TLS stack declares when its certificate is a PEM pair from secret config instead of a certificate id
    (the uploaded certificate; tests/contract/test_tls.py checks those resources)."""
    import copy

    from gpufleet.components.fleet import declare_program
    from gpufleet.preview import run

    out: set[str] = set()
    for stack in STACKS:
        base = plan.for_stack(stack)
        if base.fleet.spec.load_balancer.tls is None:
            continue
        raw = copy.deepcopy(base.raw)
        raw["load_balancer"]["tls"] = {
            "domain": "llm.example.com",
            "certificate_config": "gpufleet:tlsCertificate",
            "private_key_config": "gpufleet:tlsKey",
        }
        fleet = validation.validate(raw, stack=stack, file="x", sizing=False)
        config = {loader.CONFIG_KEY: raw, "gpufleet:tlsCertificate": "PEM", "gpufleet:tlsKey": "KEY"}
        out |= {r["type"] for r in run(lambda f=fleet: declare_program(f), stack, config).resources}
    return out
