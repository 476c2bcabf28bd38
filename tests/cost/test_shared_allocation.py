"""issue 29: a shared cost is counted once and allocated across the stacks that declare it; per-stack secrets are not
merged; `cost budget --by team` exits 1 when a team is over its budget."""

from decimal import Decimal

import pytest
import typer
from typer.testing import CliRunner

from gpufleet.cli import cost as cost_cli
from gpufleet.cost import view
from gpufleet.errors import UserError
from gpufleet.finance import allstacks


@pytest.fixture(scope="module")
def costs():
    return allstacks.price_all()


def test_allocation_splits_exactly_evenly_or_by_node_hours():
    parts = allstacks.allocate(Decimal("100.00"), ["a", "b", "c"], {}, "evenly")
    assert parts == {"a": Decimal("33.33"), "b": Decimal("33.33"), "c": Decimal("33.34")}
    parts = allstacks.allocate(Decimal("2499.00"), ["a", "b"], {"a": Decimal(730), "b": Decimal(2190)}, "node-hours")
    assert parts == {"a": Decimal("624.75"), "b": Decimal("1874.25")} and sum(parts.values()) == Decimal("2499.00")


def test_shared_costs_counted_once_allocated_and_secrets_kept_apart(costs):
    for rule in allstacks.ALLOCATIONS:
        r = allstacks.report(costs, "cost-center", rule)
        assert sum(g.with_shared for g in r.groups) == r.total.monthly  # each shared cost once, all of it allocated
        kms = [a for a in r.allocations if a["shared"].startswith("KMS instance")]
        assert {a["stack"] for a in kms} == {f"alicloud-cn-hangzhou-{e}" for e in ("dev", "staging", "prod")}
        one_bill = next(
            l for c in costs if c.stack == "alicloud-cn-hangzhou-prod" for l in c.estimate.lines if l.price_key == "kms/instance"
        )
        assert sum(a["amount"] for a in kms) == one_bill.monthly_cost  # 2499.00 once, not three times
    evenly = {a["stack"]: a["amount"] for a in allstacks.report(costs, "team", "evenly").allocations if "KMS" in a["shared"]}
    by_hours = {
        a["stack"]: a["amount"] for a in allstacks.report(costs, "team", "node-hours").allocations if "KMS" in a["shared"]
    }
    assert len(set(evenly.values())) <= 2 and by_hours["alicloud-cn-hangzhou-prod"] > by_hours["alicloud-cn-hangzhou-dev"]
    # each Tencent stack reads its own SSM secret: three secrets, each allocated to its one stack (not merged)
    secrets = [a for a in allstacks.report(costs, "team").allocations if a["shared"].startswith("SSM secret ")]
    assert sorted(a["stack"] for a in secrets) == [f"tencentcloud-ap-guangzhou-{e}" for e in ("dev", "prod", "staging")]
    keys = {view.shared_key(c.estimate, l) for c in costs if c.estimate for l in c.estimate.lines if l.price_key == "ssm/secret"}
    assert len(keys) == 3


def budget(*args):
    app = typer.Typer()
    cost_cli.register(app)
    return CliRunner().invoke(app, ["cost", "budget", *args])


def test_cost_budget_by_team_exits_1_when_a_team_is_over(tmp_path):
    f = tmp_path / "budgets.yaml"
    f.write_text("budgets:\n  ml-platform: 1000\n")
    r = budget("--by", "team", "--budgets", str(f))
    assert r.exit_code == 1 and "ml-platform: over budget: ≥ " in r.output, r.output
    f.write_text("budgets:\n  ml-platform: 1000000\n")
    r = budget("--by", "team", "--budgets", str(f))
    assert r.exit_code == 1 and "not checked" in r.output  # unpriced lines (the model buckets) and no --allow-unpriced
    r = budget("--by", "team", "--budgets", str(f), "--allow-unpriced", "--json")
    assert r.exit_code == 0 and '"ok": true' in r.output, r.output
    f.write_text("budgets:\n  other-team: 1000000\n")
    r = budget("--by", "team", "--budgets", str(f), "--allow-unpriced")
    assert r.exit_code == 1 and "no budget in the file for ml-platform: " in r.output
    # a misspelt team's budget was ignored without a word: the team read "no budget in the file"
    f.write_text("budgets:\n  ml-platfrom: 1000000\n")
    r = budget("--by", "team", "--budgets", str(f), "--allow-unpriced")
    assert r.exit_code == 1 and "no budget in the file for ml-platform (the file's 'ml-platfrom' is close: misspelt?)" in r.output
    f.write_text("budgets:\n  ~: 5\n")  # a YAML null key was a team called "None"
    r = budget("--by", "team", "--budgets", str(f))
    assert isinstance(r.exception, UserError) and "budgets.None: a team is named by its tag value (text), not " in str(
        r.exception
    )
    f.write_text("budgets:\n  ml-platform: lots\n")
    r = budget("--by", "team", "--budgets", str(f))
    assert isinstance(r.exception, UserError) and "budgets.ml-platform: must be a number" in str(r.exception)  # exit 2


def test_team_budget_file_errors_are_one_line():
    from gpufleet.cost import teambudget

    with pytest.raises(UserError):
        teambudget.load("/nonexistent/budgets.yaml")
