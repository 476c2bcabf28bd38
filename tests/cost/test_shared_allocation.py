"""issue 29: a shared cost is counted once and allocated across the stacks that declare it; per-stack secrets are not
merged; `cost budget --by team` exits 1 when a team is over its budget."""

from decimal import Decimal

import pytest
import typer
from typer.testing import CliRunner

from gpufleet.cli import cost as cost_cli
from gpufleet.cost import view
from gpufleet.errors import UserError, one_line
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


# A bad budgets file -> each problem, in order, as (field, words of the fix); "" where it has no field (the whole file).
BAD_BUDGETS = {
    "missing": (None, [("", "no such file: write one: YAML `budgets: {TEAM: monthly amount}`")]),
    "not YAML": ("budgets: [\n", [("", "not valid YAML")]),
    "a list": ("- ml-platform\n", [("", "expected a mapping with a `budgets:` mapping")]),
    "misspelt key": ("budget:\n  ml-platform: 5\n", [("budget", "did you mean 'budgets'?")]),
    "budgets not a mapping": ("budgets: 5\n", [("budgets", "e.g. {ml-platform: 60000}")]),
    "amounts": (
        'budgets:\n  ml-platform: lots\n  search: -1\n  "two\\nlines": x\n  ~: 5\n',
        [
            ("budgets.ml-platform", "must be a number >= 0 (e.g. 60000), not 'lots'"),
            ("budgets.search", "must be a number >= 0 (e.g. 60000), not -1"),
            ("budgets.two\nlines", "must be a number >= 0 (e.g. 60000), not 'x'"),  # a key holding a newline
            ("budgets.None", "a team is named by its tag value (text)"),
        ],
    ),
}


@pytest.mark.parametrize("case", list(BAD_BUDGETS))
def test_team_budget_file_errors_are_one_line(case, tmp_path, capsys):
    """Each problem of a bad budgets file is one line naming the file, the field where there is one, and the fix
    (docs/inputs.md: `file: field.path: message`): from teambudget.load, and from `cost budget` (exit 2, one line each)."""
    from gpufleet.cli import main
    from gpufleet.cost import teambudget

    text, expected = BAD_BUDGETS[case]
    f = tmp_path / "budgets.yaml"
    if text is not None:
        f.write_text(text)
    with pytest.raises(UserError) as exc:
        teambudget.load(f)
    problems = exc.value.problems
    assert [p.path for p in problems] == [field for field, _ in expected], problems
    for p, (field, fix) in zip(problems, expected):
        shown = str(p)
        assert p.file == str(f) and "\n" not in shown and shown.startswith(f"{f}:"), repr(shown)
        assert not field or f"{f}: {one_line(field)}: " in shown, repr(shown)
        assert fix in p.message, repr(shown)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(["cost", "budget", "--by", "team", "--budgets", str(f)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == len(expected) and all(str(f) in line for line in lines), err
    for line, (field, fix) in zip(lines, expected):
        assert (not field or f": {one_line(field)}: " in line) and fix in line, (line, field, fix)
