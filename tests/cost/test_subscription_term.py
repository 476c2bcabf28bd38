"""A 24- or 36-month subscription (`billing: {model: yearly, period_months: 36}`) is what `preview` declares, but the
catalog's yearly rows price a 1-year term (docs/cost.md: longer terms are not priced). Such a term is left unpriced,
with the reason, never priced as a 1-year term: the estimate is a lower bound and says why, `cost compare` does not
rank it and says why, `cost commit` says its plan is a change of term, `cost tokens` names the term."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from rich.console import Console

from gpufleet import plan
from gpufleet.cost import catalog, decision, usage
from gpufleet.finance import commitment, compare, report, tokens
from gpufleet.finance.stack import stack_estimate
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[2]
PRODS = ["alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"]
# what each program declares for a subscription node's term (the preview's inputs)
TERM_INPUT = {"alicloud": ("alicloud:ecs/instance:Instance", "period"), "tencentcloud": ("tencentcloud:Instance/instance:Instance", "instanceChargeTypePrepaidPeriod")}  # fmt: skip


def _yearly(tmp_path: Path, stack: str, months: int) -> str:
    """The shipped prod stack with a yearly subscription of `months` months, as its own stack file."""
    text = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    assert "billing: {model: payg}" in text
    path = tmp_path / f"Pulumi.{stack}-y{months}.yaml"
    path.write_text(text.replace("billing: {model: payg}", f"billing: {{model: yearly, period_months: {months}}}"))
    return loader.use_stack_file(path)


def test_only_a_one_year_term_is_priced_by_a_yearly_row():
    assert catalog.term_not_priced("yearly", 12) == "" and catalog.term_not_priced("yearly", 0) == ""
    assert catalog.term_not_priced("monthly", 3) == "" and catalog.term_not_priced("payg", 0) == ""
    for months in (24, 36):
        assert f"a {months}-month term: no sourced price" in catalog.term_not_priced("yearly", months)


@pytest.mark.parametrize("months", [24, 36])
@pytest.mark.parametrize("stack", PRODS)
def test_a_longer_term_is_unpriced_not_priced_as_one_year(tmp_path, stack, months):
    one_year, longer = _yearly(tmp_path, stack, 12), _yearly(tmp_path, stack, months)
    cloud = stack.split("-")[0]
    token, field = TERM_INPUT[cloud]
    declared = [r for r in plan.for_stack(longer).resources if r["type"] == token]
    assert declared and all(int(r["inputs"][field]) == months for r in declared)  # what preview declares
    _, a = stack_estimate(one_year)
    _, b = stack_estimate(longer)
    subscribed = [l for l in b.lines if l.billing == "yearly"]
    assert subscribed and all(l.term_months == months for l in subscribed)
    # every line of the longer term is unpriced and says why; nothing else changes
    assert all(l.monthly_cost is None and f"a {months}-month term: no sourced price" in l.note for l in subscribed)
    assert [l for l in a.lines if l.billing == "yearly"] and all(
        l.monthly_cost is not None for l in a.lines if l.billing == "yearly"
    )
    assert [l.monthly_cost for l in a.lines if l.billing != "yearly"] == [
        l.monthly_cost for l in b.lines if l.billing != "yearly"
    ]
    # the total is a lower bound that leaves the subscription out: it was the 1-year figure, with no note
    assert not b.complete and not b.categories["gpu_compute"].complete and b.overhead_share is None
    one_year_part = sum((l.monthly_cost for l in a.lines if l.billing == "yearly"), Decimal(0))
    assert b.monthly_total == a.monthly_total - one_year_part
    assert any(f"subscription term {months} months (billing.period_months): not priced" in x for x in b.assumptions)
    # cost tokens' yearly node-month is the stack's own term: not priced, and says why
    (node,) = tokens.node_months(longer, usage.load(longer), billings=("yearly",))
    assert node.monthly is None and f"a {months}-month term" in node.problem


@pytest.mark.parametrize("stack", PRODS)
def test_compare_does_not_rank_the_current_term_and_says_why(tmp_path, stack):
    longer = _yearly(tmp_path, stack, 36)
    opts = compare.compare(longer, ["alicloud", "tencentcloud"], ["payg", "yearly"], usage.load(longer))
    current = next(o for o in opts if o.current)
    assert current.billing == "yearly" and current.estimate is not None
    _, est = stack_estimate(longer)
    assert current.estimate.total == est.total  # the stack as declared: its own 36-month term, as cost estimate prices it
    d = decision.decide(opts)
    assert d.current == decision.label(current) and "a 36-month term" in d.current_why
    assert d.current not in [r.label for r in d.rows] and all(r.versus_current is None for r in d.rows)
    assert d.margin is None and f"the current {d.current} is not compared: its GPU compute has no price" in d.sentence()
    # the other cloud's yearly option is a 1-year subscription, priced, and says it is not the stack's term
    other = next(o for o in opts if o.billing == "yearly" and not o.current)
    assert other.estimate is not None and other.estimate.categories["gpu_compute"].complete
    assert any("a 1-year subscription, not the stack's 36-month term" in n for n in other.mapping)
    # ... in the table too, under that option (a filter of "billing " notes kept it to the JSON and HTML)
    console = Console(record=True, width=400)
    report.compare_table(longer, opts, console)
    said = [line for line in console.export_text().splitlines() if line.startswith(f"{decision.label(other)}: ")]
    assert said and "a 1-year subscription, not the stack's 36-month term" in said[0]
    j = compare.as_json(longer, opts)
    assert j["decision"]["compute_unpriced"] == {d.current: d.current_why}
    assert next(r for r in j["rows"] if r["current"])["decision_rank"] is None


@pytest.mark.parametrize("stack", PRODS)
def test_commit_says_its_one_year_plan_changes_the_term(tmp_path, stack):
    longer, one_year = _yearly(tmp_path, stack, 36), _yearly(tmp_path, stack, 12)
    p = commitment.plan_stack(longer)
    assert p.billing_block == {"model": "yearly", "period_months": 12}  # the term the catalog prices
    assert "the stack subscribes for 36 months" in p.term_change and "a change of term" in p.term_change
    assert commitment.as_json(p)["term_change"] == p.term_change
    assert commitment.plan_stack(one_year).term_change == ""
