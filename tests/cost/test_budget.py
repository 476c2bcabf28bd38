"""`cost estimate --budget`: an A100 stack priced from a fixture catalog without the A100 rows (not the shipped data,
which may gain the price) has an incomplete total, and the budget never passes it silently."""

import shutil
from decimal import Decimal

import msgspec
import pytest
import typer
import yaml
from typer.testing import CliRunner

from gpufleet.cli import cost as cost_cli
from gpufleet.cost import budget, catalog
from gpufleet.errors import UserError

A100_TYPE = "ecs.gn7-c12g1.3xlarge"  # 1x A100-40G (stacks/data/alicloud.yaml)


@pytest.fixture
def a100_stack(tmp_path, monkeypatch):
    """A copy of the prod stack on one A100 (a stack file outside stacks/), priced from a catalog without its rows."""
    from gpufleet.components.alicloud import profile

    data = tmp_path / "prices"
    shutil.copytree(catalog.DATA, data)
    path = data / "alicloud-cn-hangzhou.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["rows"] = [r for r in doc["rows"] if r["key"] != f"instance/{A100_TYPE}"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    monkeypatch.setattr(profile, "PROFILE", msgspec.structs.replace(profile.PROFILE, price_data=data))
    stack = yaml.safe_load((catalog.DATA.parents[3] / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml").read_text())
    stack["config"]["gpufleet:fleet"]["gpu"] = {"kind": "A100-40G", "count": 1, "instance_type": A100_TYPE}
    f = tmp_path / "Pulumi.alicloud-cn-hangzhou-a100.yaml"
    f.write_text(yaml.safe_dump(stack, sort_keys=False))
    return str(f)


def run(*args):
    app = typer.Typer()
    cost_cli.register(app)
    return CliRunner().invoke(app, ["cost", "estimate", *args])


def test_missing_a100_price_fails_the_budget_unless_allowed(a100_stack):
    r = run("--stack", a100_stack, "--json")
    assert r.exit_code == 0, r.output
    r = run("--stack", a100_stack, "--budget", "5000")
    assert r.exit_code == 1, r.output
    assert "budget not checked: the total is incomplete" in r.output and "--allow-unpriced" in r.output
    assert A100_TYPE in r.output or "autoscaled node" in r.output
    r = run("--stack", a100_stack, "--budget", "5000", "--allow-unpriced")
    assert r.exit_code == 0 and "within budget: the lower bound ≥" in r.output, r.output
    r = run("--stack", a100_stack, "--budget", "500", "--allow-unpriced")
    assert r.exit_code == 1 and "over budget: even the lower bound ≥" in r.output
    r = run("--stack", a100_stack, "--budget", "500")  # issue 29: a lower bound above the budget fails without the flag
    assert r.exit_code == 1 and "over budget: even the lower bound ≥" in r.output


def test_shipped_prod_gate_passes_or_fails_on_the_bounded_total(tmp_path):
    """issue 29: the NAT EIP's traffic (usage nat_egress_gb unknown) is bounded by its declared 100 Mbps cap; with the
    two usages that have no bound given, the gate decides on priced + bound and says what it bounded."""
    stack = "tencentcloud-ap-guangzhou-prod"
    u = tmp_path / "usage.yaml"
    u.write_text("lb_egress_gb: 500\nmodel_bucket_gb: 20\nnat_egress_gb: null\n")
    r = run("--stack", stack, "--usage", str(u), "--json")
    import json

    j = json.loads(r.output.split("\nwithin")[0].split("\nover")[0])
    (eip,) = j["unpriced"]
    assert eip["quantity_bound"] == "32850.00" and Decimal(eip["bound_cost"]) == Decimal("32850") * Decimal("0.80")
    lower, at_most = Decimal(j["monthly_total"]), Decimal(j["monthly_total"]) + Decimal(eip["bound_cost"])
    ok = run("--stack", stack, "--usage", str(u), "--budget", str(at_most))
    assert ok.exit_code == 0 and f"within budget: the bounded total: at most {at_most}" in ok.output, ok.output
    assert "bounded llm-prod-net-nat-eip: EIP outbound traffic at most 26280.00 CNY" in ok.output
    assert "the declared 100 Mbps cap used all month" in ok.output
    over = run("--stack", stack, "--usage", str(u), "--budget", str(at_most - 1))
    assert over.exit_code == 1 and "over budget: the bounded total" in over.output
    low = run("--stack", stack, "--usage", str(u), "--budget", str(lower - 1))
    assert low.exit_code == 1 and "over budget: even the lower bound" in low.output


def test_the_estimate_shows_the_missing_price(a100_stack):
    import json

    j = json.loads(run("--stack", a100_stack, "--json").output.split("\nbudget")[0])
    node = next(l for l in j["lines"] if l["price_key"] == f"instance/{A100_TYPE}")
    assert node["unit_price"] is None and node["monthly_cost"] is None and node["price_quality"] == "missing"


@pytest.mark.parametrize("bad", ["lots", "-1", "nan", "inf", ""])
def test_bad_budget_is_bad_input(bad):
    with pytest.raises(UserError, match="--budget"):
        budget.parse(bad)
    r = run("--stack", "alicloud-cn-hangzhou-prod", "--budget", bad)
    assert isinstance(r.exception, UserError)


def test_budget_accepts_thousands_separators():
    from decimal import Decimal

    assert budget.parse("25,000") == Decimal(25000) and budget.parse("1_000.5") == Decimal("1000.5")
